import { SetMetadata } from '@nestjs/common';
import type { Role } from './api-keys.repository';

export const REQUIRED_ROLE = 'lgw:required-role';

/** The least role a route needs; routes without it need `read`. `write` implies `read`; `admin` implies both. */
export const RequiresRole = (role: Role) => SetMetadata(REQUIRED_ROLE, role);

const RANK: Record<Role, number> = { read: 1, write: 2, admin: 3 };
export const roleSatisfies = (have: Role, need: Role) => RANK[have] >= RANK[need];
