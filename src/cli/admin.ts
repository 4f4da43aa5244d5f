#!/usr/bin/env node
/**
 * Operator CLI: the operator API's actions against the configured catalog (DATABASE_URL, or the embedded one under
 * DATA_DIR), without the server running. Prints JSON. Usage: `npm run admin -- <command>` (see USAGE).
 */
import 'reflect-metadata';
import * as os from 'node:os';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../app.module';
import { ApiError } from '../platform/http/errors';
import { cidrProblem, normalizeCidr } from '../platform/network/client-address';
import { ConfigError, loadConfig } from '../platform/config/config';
import { openCatalogDb } from '../platform/db/catalog-db';
import { AuditContext, pendingAudit } from '../modules/audit/audit-context';
import { AuditQuery } from '../modules/audit/audit.schemas';
import { DatabasesService } from '../modules/databases/databases.service';
import { CreateKeyBody, keyChangeOf, keyOptionsOf, RotateKeyBody, UpdateKeyBody } from '../modules/databases/databases.schemas';
import { createRootLogger } from '../platform/observability/logger';
import { StorageScan } from '../modules/reclaim/storage-scan.service';
import { DroppedScope, DroppedTablesService } from '../modules/catalog/dropped/dropped-tables.service';
import { quotasOf, rateLimitOf } from '../modules/identity/tenancy/tenant-context';
import { MaintenanceAdmin } from '../modules/maintenance/maintenance.admin';
import { DatabasePolicyBody, OperatorRunMaintenanceBody } from '../modules/maintenance/maintenance.schemas';
import { UsageService } from '../modules/usage/usage.service';
import { FleetUsageQuery, FleetUsageReport, UsageQuery } from '../modules/usage/usage.schemas';
import { EventSinksService } from '../modules/events/event-sinks.service';
import { CreateEventSinkBody, DeadLetterIdsBody, UpdateEventSinkBody } from '../modules/events/events.schemas';
import pino from 'pino';

/** An answer printed as it is (CSV), not as JSON. */
class CsvText {
  constructor(readonly text: string) {}
}

const USAGE = `usage: npm run admin -- <command>

  databases create <name> [--property key=value ...] [--storage-profile name] [--managed-versioning]
      [--allowed-cidrs cidr,cidr...] [--private-only true|false]
  databases list
  databases get <name>
  databases delete <name>
  databases update <name> [--drop-profile hard|soft|default] [--drop-retention-seconds n|default] [--protected true|false]
      [--allowed-cidrs cidr,cidr...|any] [--private-only true|false]
      a database's delete profile (docs/soft-delete.md), protection flag and network rules (docs/access-control.md)
  dropped list <database>
  dropped undrop <database> <dropped-id> [--name new_name] [--namespace a/b]
  dropped purge <database> <dropped-id>
      soft-dropped tables: list them, restore one (under a new name when its old one is taken), purge one now
  keys create <database> --role read|write|admin [--name text] [--owner text] [--description text]
      [--expires 2027-01-01T00:00:00Z] [--rate-limit <limit>/<window_ms>] [--grants '<json>']
      (keys issue: the same; --expires-at: the same as --expires)
      --grants narrows the role: a JSON list like '[{"privileges":["select"],"on":{"namespace":["prod"]}}]'
      (docs/access-control.md "Grants")
  keys list <database>
      with name, owner, expires_at, rate_limit, grants, rotated_from and last_used_at (coarse: KEY_USAGE_FLUSH_MS)
  keys rotate <database> <key-id> [--overlap-seconds n]
      a new key (secret shown once) like the old one (grants too); the old one stays valid until revoked, or n seconds at most
  keys update <database> <key-id> [--name text] [--owner text] [--expires date|never] [--rate-limit l/w|none]
      [--grants '<json>'|null]
      (keys edit: the same; an empty --name or --owner clears it; --grants replaces them, null: the role on the whole database)
  keys revoke <database> <key-id>
  audit <database> [--limit n] [--action table.create|table.] [--actor operator|key:<id>] [--target ns$table]
      newest first; --action exact or a prefix ending in '.', --actor and --target exact (the API's filters)
  usage <database> [--from 2026-11-01] [--to 2026-12-01] [--granularity day|hour] [--csv]
      requests, rows written, bytes ingested, queries (and per day storage, tables, namespaces); to is exclusive
  usage --date 2026-11-23 [--sort storage|requests] [--csv]
      every database's usage on a day, largest first
  storage scan <database> [--delete]
      folders in the database's storage that no table, pending write or clean-up knows; --delete removes them
  maintenance get <database>
  maintenance set <database> [--enabled true|false] [--compact-min-fragments n] [--index-min-unindexed-rows n]
      [--cleanup-retention-seconds n] [--max-concurrent n]
      replaces the database's maintenance policy (no option: the server's defaults)
  maintenance run <database> [<namespace> ...] <table> [--type all|compact|optimize_indices|cleanup] [--dry-run]
      [--retention-seconds n] [--catalog prefix]
      runs a table's maintenance now (the job runs in this process); --dry-run (cleanup) says what would be removed
  events sinks [<database>]
      the fleet's change-event sinks (or a database's), with their delivery state (docs/events.md)
  events create [<database>] --name n --kind nats|webhook --url url [--subject-prefix p] [--types t,t...]
      [--namespace-prefix level,level...] [--enabled false]
      a sink for every database's events (or one database's); a webhook's signing secret is printed once
  events get <sink-id>
  events update <sink-id> [--name n] [--url url] [--subject-prefix p] [--types t,t...] [--namespace-prefix a,b]
      [--enabled true|false] [--rotate-secret]
  events delete <sink-id>
  events dead-letters <sink-id> [--limit n]
  events replay <sink-id> [--ids id,id...]
  events discard <sink-id> [--ids id,id...]
      events a sink gave up on: list them, send them again, or delete them (all of the sink without --ids)

Uses the catalog the gateway is configured with (DATABASE_URL, or the embedded one under DATA_DIR).
The embedded catalog is a single-process database: stop the gateway before using the CLI on it.`;

class UsageError extends Error {}

/** `--allowed-cidrs 10.0.0.0/8,2001:db8::/32` (or `any`: no restriction), validated and normalized. */
function cidrsOption(v: string | undefined): string[] | undefined {
  if (v === undefined) return undefined;
  if (v.trim() === 'any') return [];
  const cidrs = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const c of cidrs) {
    const problem = cidrProblem(c);
    if (problem) throw new UsageError(`--allowed-cidrs: ${problem}`);
  }
  return [...new Set(cidrs.map(normalizeCidr))];
}

/** `--rate-limit 100/60000` (requests per window in ms), or `none`. */
function rateLimitArg(v: string): { limit: number; window_ms: number } | null {
  if (v === 'none') return null;
  const m = /^(\d{1,9})\/(\d{1,9})$/.exec(v);
  if (!m) throw new UsageError("--rate-limit takes <limit>/<window_ms> (e.g. 100/60000) or 'none'");
  return { limit: Number(m[1]), window_ms: Number(m[2]) };
}

/** `--grants '<json>'`: the JSON as given (the operator API's schema checks it), `null` included (update: reset). */
function grantsArg(v: string | undefined): unknown {
  if (v === undefined) return undefined;
  try {
    return JSON.parse(v) as unknown;
  } catch (err) {
    throw new UsageError(`--grants takes a JSON list of grants (docs/access-control.md): ${(err as Error).message}`);
  }
}

/** `--types a,b` → ['a', 'b'] (absent: undefined). */
const listArg = (v: string | undefined): string[] | undefined =>
  v === undefined
    ? undefined
    : v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);

/** `--enabled true|false` → a boolean (absent: undefined). */
function boolArg(name: string, v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  if (v !== 'true' && v !== 'false') throw new UsageError(`${name} takes true or false`);
  return v === 'true';
}

/** The operator API's own schema, applied to the CLI's options (the same rules, the same messages). */
function parseOrUsage<S extends z.ZodType>(schema: S, raw: Record<string, unknown>): z.output<S> {
  const r = schema.safeParse(Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined)));
  if (!r.success)
    throw new UsageError(r.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; '));
  return r.data;
}

async function main(argv: string[]): Promise<unknown> {
  const parsed = (() => {
    try {
      return parseArgs({
        args: argv,
        allowPositionals: true,
        options: {
          property: { type: 'string', multiple: true },
          role: { type: 'string' },
          description: { type: 'string' },
          'expires-at': { type: 'string' },
          expires: { type: 'string' },
          owner: { type: 'string' },
          'rate-limit': { type: 'string' },
          grants: { type: 'string' },
          'overlap-seconds': { type: 'string' },
          limit: { type: 'string' },
          action: { type: 'string' },
          actor: { type: 'string' },
          target: { type: 'string' },
          delete: { type: 'boolean' },
          'storage-profile': { type: 'string' },
          'managed-versioning': { type: 'boolean' },
          from: { type: 'string' },
          to: { type: 'string' },
          granularity: { type: 'string' },
          date: { type: 'string' },
          sort: { type: 'string' },
          csv: { type: 'boolean' },
          'drop-profile': { type: 'string' },
          'drop-retention-seconds': { type: 'string' },
          protected: { type: 'string' },
          'allowed-cidrs': { type: 'string' },
          'private-only': { type: 'string' },
          name: { type: 'string' },
          namespace: { type: 'string' },
          enabled: { type: 'string' },
          'compact-min-fragments': { type: 'string' },
          'index-min-unindexed-rows': { type: 'string' },
          'cleanup-retention-seconds': { type: 'string' },
          'max-concurrent': { type: 'string' },
          type: { type: 'string' },
          'dry-run': { type: 'boolean' },
          'retention-seconds': { type: 'string' },
          catalog: { type: 'string' },
          kind: { type: 'string' },
          url: { type: 'string' },
          'subject-prefix': { type: 'string' },
          types: { type: 'string' },
          'namespace-prefix': { type: 'string' },
          'rotate-secret': { type: 'boolean' },
          ids: { type: 'string' },
          help: { type: 'boolean', short: 'h' },
        },
      });
    } catch (err) {
      throw new UsageError((err as Error).message); // an unknown option or a missing value
    }
  })();
  const { values, positionals } = parsed;
  const [group, action, ...rest] = positionals;
  if (values.help || !group) throw new UsageError('');
  const need = (n: number) => {
    if (rest.length !== n) throw new UsageError(`'${group} ${action ?? ''}' takes ${n} argument(s)`);
    return rest;
  };

  // The CLI reclaims nothing in the background: the running gateways do that (docs/resilience.md#crash-safety).
  const loaded = loadConfig();
  // Nor does it meter or refresh usage figures (it serves no requests).
  const config = {
    ...loaded,
    reclaim: { ...loaded.reclaim, intervalMs: 0 },
    usage: { ...loaded.usage, metering: false, refreshIntervalMs: 0 },
    // Nor does it purge dropped tables on its own: `dropped purge` does one when asked.
    drop: { ...loaded.drop, purgeIntervalMs: 0 },
    // Nor does it sweep tables for maintenance (the gateways do; `maintenance run` queues a job for them).
    maintenance: { ...loaded.maintenance, sweepIntervalMs: 0 },
    // Nor does it deliver change events (the gateways' dispatchers do).
    events: { ...loaded.events, dispatchIntervalMs: 0 },
    // Nor does it cache key lookups (it serves no requests); its changes reach the gateways through cache_invalidations.
    authCacheTtlMs: 0,
  };
  const catalog = await openCatalogDb(config);
  await catalog.migrate();
  // Logs go to stderr (warnings and errors only): stdout carries the JSON answer.
  const logger = createRootLogger({ ...config, logLevel: 'warn' }, { stream: pino.destination(2) });
  const app = await NestFactory.createApplicationContext(AppModule.register(config, catalog, logger), { logger: ['error'] });
  const databases = app.get(DatabasesService);
  const actor = `cli:${os.userInfo().username}`;
  // The services record each change in its own transaction, as for the operator API; the CLI says who and what.
  const droppedScope = async (name: string): Promise<DroppedScope> => {
    const db = await databases.require(name);
    return { database: { id: db.id, name: db.name, rateLimit: rateLimitOf(db), quotas: quotasOf(db) }, principal: actor };
  };
  const audited = <T>(databaseName: string, act: string, target: string, fn: () => Promise<T>) =>
    AuditContext.run(pendingAudit({ databaseName, actor, action: act, target }), fn);
  try {
    switch (group === 'audit' || group === 'usage' ? group : `${group} ${action ?? ''}`.trim()) {
      case 'databases create': {
        const [name] = need(1);
        const properties = Object.fromEntries(
          (values.property ?? []).map((p) => {
            const i = p.indexOf('=');
            if (i <= 0) throw new UsageError(`--property takes key=value, got '${p}'`);
            return [p.slice(0, i), p.slice(i + 1)];
          }),
        );
        const privateOnly = values['private-only'];
        if (privateOnly !== undefined && !['true', 'false'].includes(privateOnly))
          throw new UsageError('--private-only must be true or false');
        const network = { allowedCidrs: cidrsOption(values['allowed-cidrs']), privateOnly: privateOnly === 'true' };
        return await audited(name, 'database.create', name, () =>
          databases.create(name, properties, null, values['storage-profile'], values['managed-versioning'] ?? false, {}, network),
        );
      }
      case 'databases list': {
        need(0);
        const all: unknown[] = [];
        let token: string | undefined;
        do {
          const page = await databases.list({ page_token: token, limit: config.listMaxLimit });
          all.push(...page.databases);
          token = page.page_token;
        } while (token);
        return { databases: all };
      }
      case 'databases get':
        return await databases.get(need(1)[0]);
      case 'databases delete': {
        const [name] = need(1);
        await audited(name, 'database.delete', name, () => databases.delete(name));
        return { deleted: name };
      }
      case 'databases update': {
        const [name] = need(1);
        const change: {
          dropProfile?: 'hard' | 'soft' | null;
          dropRetentionSeconds?: number | null;
          protected?: boolean;
          allowedCidrs?: string[];
          privateOnly?: boolean;
        } = {};
        const profile = values['drop-profile'];
        if (profile !== undefined) {
          if (!['hard', 'soft', 'default'].includes(profile)) throw new UsageError('--drop-profile must be hard, soft or default');
          change.dropProfile = profile === 'default' ? null : (profile as 'hard' | 'soft');
        }
        const retention = values['drop-retention-seconds'];
        if (retention !== undefined) {
          if (retention !== 'default' && !/^[1-9]\d{0,9}$/.test(retention))
            throw new UsageError('--drop-retention-seconds must be a positive integer or default');
          change.dropRetentionSeconds = retention === 'default' ? null : Number(retention);
        }
        if (values.protected !== undefined) {
          if (!['true', 'false'].includes(values.protected)) throw new UsageError('--protected must be true or false');
          change.protected = values.protected === 'true';
        }
        if (values['allowed-cidrs'] !== undefined) change.allowedCidrs = cidrsOption(values['allowed-cidrs']);
        if (values['private-only'] !== undefined) {
          if (!['true', 'false'].includes(values['private-only'])) throw new UsageError('--private-only must be true or false');
          change.privateOnly = values['private-only'] === 'true';
        }
        if (Object.keys(change).length === 0)
          throw new UsageError(
            'databases update: give --drop-profile, --drop-retention-seconds, --protected, --allowed-cidrs and/or --private-only',
          );
        return await audited(name, 'database.update', name, () => databases.update(name, change));
      }
      case 'dropped list': {
        const [name] = need(1);
        const dropped = app.get(DroppedTablesService);
        const scope = await droppedScope(name);
        const all: unknown[] = [];
        let token: string | undefined;
        do {
          const page = await dropped.list(scope, { page_token: token, limit: config.listMaxLimit });
          all.push(...page.dropped_tables);
          token = page.page_token;
        } while (token);
        return { dropped_tables: all };
      }
      case 'dropped undrop': {
        const [name, id] = need(2);
        const ns = values.namespace === undefined ? undefined : values.namespace === '' ? [] : values.namespace.split('/');
        return await audited(name, 'table.undrop', id, async () =>
          app.get(DroppedTablesService).undrop(await droppedScope(name), id, values.name, ns),
        );
      }
      case 'dropped purge': {
        const [name, id] = need(2);
        return await audited(name, 'table.purge', id, async () => app.get(DroppedTablesService).purge(await droppedScope(name), id));
      }
      case 'keys issue':
      case 'keys create': {
        const [name] = need(1);
        const raw = values.expires ?? values['expires-at'];
        const body = parseOrUsage(CreateKeyBody, {
          role: values.role,
          description: values.description,
          expires_at: raw,
          name: values.name,
          owner: values.owner,
          rate_limit: values['rate-limit'] === undefined ? undefined : rateLimitArg(values['rate-limit']),
          grants: grantsArg(values.grants),
        });
        return await audited(name, 'api_key.issue', name, () => databases.issueKey(name, body.role, keyOptionsOf(body)));
      }
      case 'keys rotate': {
        const [name, id] = need(2);
        const overlap = values['overlap-seconds'];
        if (overlap !== undefined && !/^\d{1,9}$/.test(overlap)) throw new UsageError('--overlap-seconds must be a non-negative integer');
        const body = parseOrUsage(RotateKeyBody, overlap === undefined ? {} : { overlap_seconds: Number(overlap) });
        return await audited(name, 'api_key.rotate', id, () => databases.rotateKey(name, id, body.overlap_seconds));
      }
      case 'keys update':
      case 'keys edit': {
        const [name, id] = need(2);
        const raw = values.expires ?? values['expires-at'];
        const body = parseOrUsage(UpdateKeyBody, {
          name: values.name === '' ? null : values.name,
          owner: values.owner === '' ? null : values.owner,
          expires_at: raw === 'never' ? null : raw,
          rate_limit: values['rate-limit'] === undefined ? undefined : rateLimitArg(values['rate-limit']),
          grants: grantsArg(values.grants),
        });
        return await audited(name, 'api_key.update', id, () => databases.updateKey(name, id, keyChangeOf(body)));
      }
      case 'keys list':
        return await databases.listKeys(need(1)[0]);
      case 'keys revoke': {
        const [name, id] = need(2);
        await audited(name, 'api_key.revoke', id, () => databases.revokeKey(name, id));
        return { revoked: id };
      }
      case 'maintenance get':
        return await app.get(MaintenanceAdmin).get(need(1)[0]);
      case 'maintenance set': {
        const [name] = need(1);
        const int = (k: string) => (values[k as keyof typeof values] === undefined ? undefined : Number(values[k as keyof typeof values]));
        const policy = DatabasePolicyBody.safeParse(
          Object.fromEntries(
            Object.entries({
              enabled:
                values.enabled === undefined
                  ? undefined
                  : values.enabled === 'true'
                    ? true
                    : values.enabled === 'false'
                      ? false
                      : values.enabled,
              compact_min_fragments: int('compact-min-fragments'),
              index_min_unindexed_rows: int('index-min-unindexed-rows'),
              cleanup_retention_seconds: int('cleanup-retention-seconds'),
              max_concurrent: int('max-concurrent'),
            }).filter(([, v]) => v !== undefined),
          ),
        );
        if (!policy.success)
          throw new UsageError(
            `invalid maintenance policy: ${policy.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
          );
        return await audited(name, 'database.maintenance', name, () => app.get(MaintenanceAdmin).set(name, policy.data));
      }
      case 'maintenance run': {
        if (rest.length < 2) throw new UsageError("'maintenance run' takes the database and the table id (its namespaces, then its name)");
        const [name, ...tableId] = rest;
        const body = OperatorRunMaintenanceBody.safeParse({
          table_id: tableId,
          catalog: values.catalog ?? '',
          type: values.type ?? 'all',
          dry_run: values['dry-run'] === true,
          ...(values['retention-seconds'] !== undefined ? { retention_seconds: Number(values['retention-seconds']) } : {}),
        });
        if (!body.success)
          throw new UsageError(`invalid maintenance run: ${body.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
        return await audited(name, 'table.maintenance', tableId.join('$'), () => app.get(MaintenanceAdmin).run(name, body.data, actor));
      }
      case 'storage scan': {
        const [name] = need(1);
        return await app.get(StorageScan).scan(name, { delete: values.delete === true, actor });
      }
      case 'audit': {
        const name = action;
        if (!name || rest.length) throw new UsageError('audit takes the database name');
        const { limit, action: act, actor: who, target } = values;
        return await databases.auditTrail(name, parseOrUsage(AuditQuery, { limit: limit ?? '100', action: act, actor: who, target }));
      }
      case 'usage': {
        if (rest.length) throw new UsageError('usage takes at most the database name');
        const usage = app.get(UsageService);
        const raw = { from: values.from, to: values.to, granularity: values.granularity, date: values.date, sort: values.sort };
        if (action) {
          const q = UsageQuery.safeParse(raw);
          if (!q.success) throw new UsageError(q.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('\n'));
          const report = await usage.database(action, q.data);
          return values.csv ? new CsvText(usage.toCsv(report)) : report;
        }
        const q = FleetUsageQuery.safeParse({ ...raw, limit: String(config.listMaxLimit) });
        if (!q.success) throw new UsageError(q.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('\n'));
        const all: FleetUsageReport['databases'] = [];
        let token: string | undefined;
        let first: FleetUsageReport | undefined;
        do {
          const page = await usage.fleet({ ...q.data, page_token: token });
          first ??= page;
          all.push(...page.databases);
          token = page.page_token;
        } while (token);
        const report: FleetUsageReport = { date: first.date, sort: first.sort, databases: all };
        return values.csv ? new CsvText(usage.toCsv(report)) : report;
      }
      case 'events sinks': {
        if (rest.length > 1) throw new UsageError("'events sinks' takes at most the database name");
        return await app.get(EventSinksService).list(rest[0] ?? null);
      }
      case 'events create': {
        if (rest.length > 1) throw new UsageError("'events create' takes at most the database name (none: a fleet sink)");
        const body = parseOrUsage(CreateEventSinkBody, {
          name: values.name,
          kind: values.kind,
          url: values.url,
          subject_prefix: values['subject-prefix'],
          types: listArg(values.types),
          namespace_prefix: listArg(values['namespace-prefix']),
          enabled: boolArg('--enabled', values.enabled),
        });
        return await app.get(EventSinksService).create(rest[0] ?? null, body);
      }
      case 'events get':
        return await app.get(EventSinksService).get(need(1)[0]);
      case 'events update': {
        const [id] = need(1);
        const body = parseOrUsage(UpdateEventSinkBody, {
          name: values.name,
          url: values.url,
          subject_prefix: values['subject-prefix'],
          types: listArg(values.types),
          namespace_prefix: listArg(values['namespace-prefix']),
          enabled: boolArg('--enabled', values.enabled),
          rotate_secret: values['rotate-secret'],
        });
        return await app.get(EventSinksService).update(id, body);
      }
      case 'events delete': {
        const [id] = need(1);
        await app.get(EventSinksService).delete(id);
        return { deleted: id };
      }
      case 'events dead-letters': {
        const [id] = need(1);
        const limit = values.limit === undefined ? 100 : Number(values.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit: an integer from 1 to 1000');
        return await app.get(EventSinksService).deadLetters(id, limit);
      }
      case 'events replay':
      case 'events discard': {
        const [id] = need(1);
        const { ids } = parseOrUsage(DeadLetterIdsBody, { ids: listArg(values.ids) });
        const sinks = app.get(EventSinksService);
        return action === 'replay' ? await sinks.replay(id, ids) : await sinks.discard(id, ids);
      }
      default:
        throw new UsageError(`unknown command '${group} ${action ?? ''}'`);
    }
  } finally {
    await app.close();
  }
}

main(process.argv.slice(2)).then(
  (out) => {
    process.stdout.write(out instanceof CsvText ? out.text : `${JSON.stringify(out, null, 2)}\n`);
    process.exit(0);
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message ? `${err.message}\n\n` : ''}${USAGE}\n`);
      process.exit(2);
    }
    const message = err instanceof ApiError || err instanceof ConfigError ? err.message : ((err as Error)?.stack ?? String(err));
    process.stderr.write(`error: ${message}\n`);
    process.exit(1);
  },
);
