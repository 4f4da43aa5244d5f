import type { Role } from '../../../platform/http/route-access';

const RANK: Record<Role, number> = { read: 1, write: 2, admin: 3 };

/** Whether a credential's role allows an operation: `write` implies `read`; `admin` implies both. */
export const roleSatisfies = (have: Role, need: Role) => RANK[have] >= RANK[need];
