import { z } from 'zod';
import { displayId, MAX_NAME_LENGTH, MAX_PATH_DEPTH } from '../../../platform/http/ids';
import { ApiError, Errors } from '../../../platform/http/errors';
import type { Privilege, Role } from '../../../platform/http/route-access';

export type { Privilege } from '../../../platform/http/route-access';

/**
 * Grants (docs/access-control.md "Grants", ADR 0009): privileges on the database, on a namespace and everything
 * below it, or on one table. A credential's role is its ceiling; its grants, when it has any, say which of the
 * role's privileges it holds and where. A credential without grants holds its role's privileges on the whole
 * database, exactly as before grants existed.
 */

export const PRIVILEGES = ['describe', 'select', 'insert', 'modify', 'create', 'manage', 'admin'] as const satisfies readonly Privilege[];

/** The privileges each role holds on the database (and the most any grant of a credential with that role may hold). */
export const ROLE_PRIVILEGES: Record<Role, readonly Privilege[]> = {
  read: ['describe', 'select'],
  write: ['describe', 'select', 'insert', 'modify', 'create', 'manage'],
  admin: ['describe', 'select', 'insert', 'modify', 'create', 'manage', 'admin'],
};

/** The most grants one credential carries (each is checked by a scan; a hundred is far more than a real key needs). */
export const MAX_GRANTS = 100;

const Name = z
  .string()
  .regex(/^[A-Za-z0-9_.-]+$/, "a name uses only letters, digits, '_', '-' and '.'")
  .max(MAX_NAME_LENGTH);

export const GrantSchema = z
  .object({
    privileges: z.array(z.enum(PRIVILEGES)).min(1).max(PRIVILEGES.length),
    on: z.union([
      z.object({ database: z.literal(true) }).strict(),
      z.object({ namespace: z.array(Name).max(MAX_PATH_DEPTH) }).strict(),
      z
        .object({
          table: z
            .array(Name)
            .min(1)
            .max(MAX_PATH_DEPTH + 1),
        })
        .strict(),
    ]),
  })
  .strict()
  .meta({
    id: 'Grant',
    description:
      "Privileges on the database (`{database: true}`), on a namespace and everything below it (`{namespace: ['prod', " +
      "'catalog']}`; `[]` is the root namespace), or on one table (`{table: ['raw', 'events']}`: its namespace path, then " +
      'its name). `admin` is held on the database only.',
  });
export const GrantsSchema = z.array(GrantSchema).min(1).max(MAX_GRANTS);
export type Grant = z.infer<typeof GrantSchema>;

export type ObjectKind = 'namespace' | 'table';

/**
 * Why a set of grants is not acceptable for a credential of `role` (null when it is): a privilege above the role,
 * or `admin` anywhere but on the database.
 */
export function grantsProblem(role: Role, grants: readonly Grant[]): string | null {
  const allowed = new Set(ROLE_PRIVILEGES[role]);
  for (const g of grants) {
    const over = g.privileges.filter((p) => !allowed.has(p));
    if (over.length > 0) return `a key with role '${role}' cannot be granted ${over.map((p) => `'${p}'`).join(', ')}`;
    if (g.privileges.includes('admin') && !('database' in g.on)) return "'admin' is granted on the database only";
  }
  return null;
}

interface Compiled {
  kind: 'database' | ObjectKind;
  path: readonly string[];
  privileges: ReadonlySet<Privilege>;
}

const isPrefix = (prefix: readonly string[], path: readonly string[]) =>
  prefix.length <= path.length && prefix.every((part, i) => path[i] === part);

const EMPTY: ReadonlySet<Privilege> = new Set();

/** Which tables of the database a listing may show (null: all of them). */
export interface TableFilter {
  /** Namespaces whose tables (at any depth) may be shown, as paths. */
  namespaces: string[][];
  /** Single tables that may be shown, as [namespace path, name]. */
  tables: { namespace: string[]; name: string }[];
}

/**
 * A credential's grants, compiled once per key lookup or token: every check is in memory. Grants are scanned (at most
 * MAX_GRANTS) rather than indexed: simpler, and a request makes one or two checks.
 */
/** The Access of a credential without grants, by role (see Access.of). */
const UNSCOPED = new Map<Role, Access>();

export class Access {
  private readonly grants: Compiled[];
  /** The credential holds every privilege it has on the whole database (a credential without grants): nothing to filter. */
  readonly unscoped: boolean;
  private readonly onDatabase: ReadonlySet<Privilege>;

  private constructor(
    readonly role: Role,
    grants: Compiled[],
    unscoped: boolean,
  ) {
    this.grants = grants;
    this.unscoped = unscoped;
    const onDatabase = new Set(grants.filter((g) => g.kind === 'database').flatMap((g) => [...g.privileges]));
    // Every privilege implies `describe` on its object, the database too (a database-wide `select` lists jobs).
    if (onDatabase.size > 0) onDatabase.add('describe');
    this.onDatabase = onDatabase;
  }

  /**
   * A credential's access: its role's privileges on the database, narrowed to `grants` when it has any. Without
   * grants, one shared instance per role (an Access never changes; a replica caches one per active key).
   */
  static of(role: Role, grants?: readonly Grant[] | null): Access {
    if (!grants) {
      let whole = UNSCOPED.get(role);
      if (!whole)
        UNSCOPED.set(role, (whole = new Access(role, [{ kind: 'database', path: [], privileges: new Set(ROLE_PRIVILEGES[role]) }], true)));
      return whole;
    }
    const ceiling = new Set(ROLE_PRIVILEGES[role]);
    const compiled = grants.map((g): Compiled => {
      // Above the role is never held (a token's claim may ask for more than its scope gives); admin only on the database.
      const privileges = new Set(g.privileges.filter((p) => ceiling.has(p) && (p !== 'admin' || 'database' in g.on)));
      if ('database' in g.on) return { kind: 'database', path: [], privileges };
      if ('namespace' in g.on) return { kind: 'namespace', path: g.on.namespace, privileges };
      return { kind: 'table', path: g.on.table, privileges };
    });
    const full = compiled.some((g) => g.kind === 'database' && g.privileges.size === ceiling.size);
    return new Access(role, compiled, full);
  }

  /** The grants as held (privileges above the role dropped), or null for a credential without grants. */
  grantList(): Grant[] | null {
    if (this.unscoped && this.grants.length === 1 && this.grants[0].kind === 'database') return null;
    return this.grants
      .filter((g) => g.privileges.size > 0)
      .map((g) => ({
        privileges: PRIVILEGES.filter((p) => g.privileges.has(p)),
        on:
          g.kind === 'database'
            ? { database: true as const }
            : g.kind === 'namespace'
              ? { namespace: [...g.path] }
              : { table: [...g.path] },
      }));
  }

  /** Whether the credential holds `privilege` anywhere (what a route checked by its service needs at the least). */
  holdsAnywhere(privilege: Privilege): boolean {
    // Every privilege implies describe on its object.
    return this.grants.some((g) => g.privileges.has(privilege) || (privilege === 'describe' && g.privileges.size > 0));
  }

  /** Whether the credential holds `privilege` on the database itself (keys, dropped tables, jobs, multi-table routes). */
  onDatabaseHas(privilege: Privilege): boolean {
    return this.onDatabase.has(privilege);
  }

  /** The privileges held on an object: from the database, a namespace above (or equal to) it, or the table itself. */
  privilegesOn(kind: ObjectKind, path: readonly string[]): ReadonlySet<Privilege> {
    if (this.unscoped) return this.onDatabase;
    let held: Set<Privilege> | undefined;
    for (const g of this.grants) {
      if (!covers(g, kind, path)) continue;
      held ??= new Set();
      g.privileges.forEach((p) => held!.add(p));
    }
    return held ?? EMPTY;
  }

  /**
   * Whether the object exists for this credential: it holds a privilege on it, or on something below it (a namespace
   * on the way to a granted table or namespace may be described and listed, its listing showing only that way).
   */
  visible(kind: ObjectKind, path: readonly string[]): boolean {
    if (this.privilegesOn(kind, path).size > 0) return true;
    if (kind === 'table') return false;
    return this.grants.some(
      (g) =>
        g.privileges.size > 0 &&
        (g.kind === 'namespace' ? isPrefix(path, g.path) : g.kind === 'table' && isPrefix(path, g.path.slice(0, -1))),
    );
  }

  /** Every privilege implies `describe` on its object; a visible namespace may also be described. */
  may(privilege: Privilege, kind: ObjectKind, path: readonly string[]): boolean {
    const held = this.privilegesOn(kind, path);
    if (held.has(privilege)) return true;
    return privilege === 'describe' && (held.size > 0 || this.visible(kind, path));
  }

  /**
   * The refusal of `privilege` on an object: 403 naming what is missing when the caller can see the object, else
   * exactly the answer for an object that does not exist (docs/access-control.md: invisible is not found). `creating`
   * means the route makes the object: then its namespace is what must be visible.
   */
  refusal(privilege: Privilege, kind: ObjectKind, path: readonly string[], creating = false): ApiError {
    if (this.visible(kind, path)) {
      return Errors.permissionDenied(
        `this operation needs '${privilege}' on ${kind} '${displayId(path)}', which this credential does not hold`,
      );
    }
    const parent = path.slice(0, -1);
    if (creating) {
      if (this.visible('namespace', parent)) {
        return Errors.permissionDenied(
          `this operation needs '${privilege}' in namespace '${displayId(parent)}', which this credential does not hold`,
        );
      }
      return Errors.namespaceNotFound(kind === 'namespace' ? `parent namespace '${displayId(parent)}'` : displayId(parent));
    }
    if (kind === 'namespace') return Errors.namespaceNotFound(displayId(path));
    return this.visible('namespace', parent) ? Errors.tableNotFound(displayId(path)) : Errors.namespaceNotFound(displayId(parent));
  }

  /** Throws the refusal unless the credential holds `privilege` on the object. */
  require(privilege: Privilege, kind: ObjectKind, path: readonly string[], creating = false): void {
    if (!this.may(privilege, kind, path)) throw this.refusal(privilege, kind, path, creating);
  }

  /** Whether the credential may change the table's data or structure (what vended read-write credentials allow). */
  writesTable(path: readonly string[]): boolean {
    const held = this.privilegesOn('table', path);
    return held.has('insert') || held.has('modify') || held.has('manage');
  }

  /** The child namespaces of `ns` a listing may show (null: all of them). */
  childNamespaces(ns: readonly string[]): string[] | null {
    if (this.privilegesOn('namespace', ns).size > 0) return null;
    const names = new Set<string>();
    for (const g of this.grants) {
      if (g.privileges.size === 0) continue;
      const below = g.kind === 'namespace' ? g.path : g.kind === 'table' ? g.path.slice(0, -1) : null;
      if (below && below.length > ns.length && isPrefix(ns, below)) names.add(below[ns.length]);
    }
    return [...names];
  }

  /** The tables directly in `ns` a listing may show (null: all of them). */
  tablesIn(ns: readonly string[]): string[] | null {
    if (this.privilegesOn('namespace', ns).size > 0) return null;
    return this.grants
      .filter((g) => g.kind === 'table' && g.privileges.size > 0 && g.path.length === ns.length + 1 && isPrefix(ns, g.path))
      .map((g) => g.path[ns.length]);
  }

  /** The tables of the whole database a listing may show (null: all of them). */
  tableFilter(): TableFilter | null {
    if (this.unscoped || this.grants.some((g) => g.privileges.size > 0 && g.kind !== 'table' && g.path.length === 0)) return null;
    const live = this.grants.filter((g) => g.privileges.size > 0);
    return {
      namespaces: live.filter((g) => g.kind === 'namespace').map((g) => [...g.path]),
      tables: live.filter((g) => g.kind === 'table').map((g) => ({ namespace: g.path.slice(0, -1), name: g.path[g.path.length - 1] })),
    };
  }
}

/** Whether a grant reaches an object: the database reaches all; a namespace, itself and all below; a table, itself. */
function covers(g: Compiled, kind: ObjectKind, path: readonly string[]): boolean {
  if (g.kind === 'database') return true;
  if (g.kind === 'table') return kind === 'table' && g.path.length === path.length && isPrefix(g.path, path);
  return kind === 'namespace' ? isPrefix(g.path, path) : g.path.length < path.length && isPrefix(g.path, path);
}
