// Kept in one file (about 410 lines): the env schema, the typed AppConfig and the mapping between them are read
// side by side whenever a setting is added (docs/configuration.md); storage profiles are apart (storage-config.ts).
import * as path from 'node:path';
import { z } from 'zod';
import { cidrProblem } from '../network/client-address';
import { loadStorageConfig, StorageConfig } from './storage-config';
import { EventsConfig, parseEventSinks } from './events-config';

/**
 * Every environment variable the gateway reads, validated once at start-up. Anything else in the code reads the
 * typed AppConfig (injected as APP_CONFIG), never process.env.
 */
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/** 'true' or 'false'; unset or empty: `def` (undefined: decided from other settings). */
const flag = <D extends boolean | undefined>(def: D) =>
  z
    .enum(['true', 'false', ''], { error: "must be 'true' or 'false'" })
    .optional()
    .transform((v) => (v === 'true' ? true : v === 'false' ? false : def));

const intWithDefault = (def: number, min = 0) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return def;
      const n = Number(v);
      if (!Number.isInteger(n) || n < min) {
        ctx.addIssue({ code: 'custom', message: `must be an integer >= ${min}, got '${v}'` });
        return z.NEVER;
      }
      return n;
    });

/** An integer setting that may be left unset (undefined: no limit). */
const optionalInt = (min = 0) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return undefined;
      const n = Number(v);
      if (!Number.isSafeInteger(n) || n < min) {
        ctx.addIssue({ code: 'custom', message: `must be an integer >= ${min} (or unset for no limit), got '${v}'` });
        return z.NEVER;
      }
      return n;
    });

export const envSchema = z.object({
  PORT: intWithDefault(2333, 0),
  HOST: z.string().default('127.0.0.1'),
  DATA_DIR: z.string().default('./data'),
  STORAGE_ROOT: optionalString,
  STORAGE_OPTIONS: optionalString,
  STORAGE_CLIENT_OPTIONS: optionalString,
  STORAGE_PROFILES: optionalString,
  STORAGE_ROLE_ARN: optionalString,
  DATABASE_URL: optionalString.refine((v) => v === undefined || /^postgres(ql)?:\/\/[^\s]+$/.test(v), {
    message: 'must be a postgresql:// URL (leave unset for the embedded database)',
  }),
  DATABASE_DIRECT_URL: optionalString.refine((v) => v === undefined || /^postgres(ql)?:\/\/[^\s]+$/.test(v), {
    message: 'must be a postgresql:// URL (Postgres itself, not a pooler in transaction mode)',
  }),
  DB_POOLER: z
    .enum(['none', 'transaction', ''], { error: "must be 'none' or 'transaction'" })
    .optional()
    .transform((v) => (v === '' ? undefined : v)),
  DB_POOL_MAX: intWithDefault(10, 1),
  DB_CONNECT_TIMEOUT_MS: intWithDefault(5000, 1),
  DB_QUERY_TIMEOUT_MS: intWithDefault(30_000, 1),
  DB_PREPARED_STATEMENTS: flag(undefined),
  BASE_PATH: z
    .string()
    .default('')
    .refine((v) => v === '' || /^\/?[A-Za-z0-9._~\-/]*[^/]$/.test(v), {
      message: "must be a URL path such as '/lance' (no trailing slash)",
    })
    .transform((v) => (v === '' ? '' : v.startsWith('/') ? v : `/${v}`)),
  ADMIN_API_KEY: optionalString.refine((v) => v === undefined || v.length >= 16, {
    message: 'must be at least 16 characters when set',
  }),
  BOOTSTRAP_DATABASE: optionalString.refine((v) => v === undefined || /^[A-Za-z0-9_.-]+$/.test(v), {
    message: 'must follow the namespace name rule (letters, digits, _ - .)',
  }),
  BODY_LIMIT_BYTES: intWithDefault(1024 * 1024, 1024),
  LIST_DEFAULT_LIMIT: intWithDefault(1000, 1),
  LIST_MAX_LIMIT: intWithDefault(10000, 1),
  CASCADE_SYNC_BUDGET_MS: intWithDefault(2000, 0),
  AUTH_CACHE_TTL_MS: intWithDefault(300_000, 0),
  AUTH_CACHE_SYNC_MS: intWithDefault(1000, 100),
  AUTH_CACHE_MAX_MB: intWithDefault(64, 1),
  KEY_USAGE_FLUSH_MS: intWithDefault(30_000, 100),
  OAUTH_JWKS_URI: optionalString.refine((v) => v === undefined || /^https?:\/\/\S+$/.test(v), {
    message: 'must be an http(s):// URL of a JSON Web Key Set',
  }),
  OAUTH_ISSUER: optionalString,
  OAUTH_AUDIENCE: optionalString,
  OAUTH_DATABASES_CLAIM: z.string().default('databases'),
  OAUTH_GRANTS_CLAIM: z.string().default('lance_grants'),
  OAUTH_CLOCK_SKEW_S: intWithDefault(30, 0),
  OAUTH_JWKS_COOLDOWN_MS: intWithDefault(10_000, 0),
  REDIS_URL: optionalString.refine((v) => v === undefined || /^rediss?:\/\/\S+$/.test(v), {
    message: 'must be a redis:// or rediss:// URL (leave unset for in-memory rate limiting)',
  }),
  REDIS_TIMEOUT_MS: intWithDefault(250, 1),
  RATE_LIMIT_LIMIT: intWithDefault(1000, 1),
  RATE_LIMIT_WINDOW_MS: intWithDefault(1000, 1),
  RATE_LIMIT_FAIL_CLOSED: flag(false),
  ARROW_STREAM_LIMIT_BYTES: intWithDefault(64 * 1024 ** 3, 1),
  ARROW_BUFFERED_LIMIT_BYTES: intWithDefault(512 * 1024 ** 2, 1),
  ARROW_INGEST_CHUNK_BYTES: intWithDefault(16 * 1024 ** 2, 1024),
  WRITE_MEMORY_BUDGET_BYTES: intWithDefault(256 * 1024 ** 2, 1024 ** 2),
  WRITE_BUDGET_WAIT_MS: intWithDefault(30_000, 0),
  ALLOCATOR_RETAIN_BYTES: intWithDefault(256 * 1024 ** 2, 0),
  METRICS_API_KEY: optionalString.refine((v) => v === undefined || v.length >= 16, {
    message: 'must be at least 16 characters when set',
  }),
  METRICS_DATABASE_LABELS: flag(false),
  TENANT_HOST_SUFFIX: optionalString.refine((v) => v === undefined || /^\.[A-Za-z0-9.-]+$/.test(v), {
    message: "must start with '.' and be a host name suffix, e.g. '.gw.example.com'",
  }),
  PRIVATE_HOST_SUFFIXES: optionalString.refine(
    (v) => v === undefined || v.split(',').every((s) => s.trim() === '' || /^\.[A-Za-z0-9.-]+$/.test(s.trim())),
    { message: "a comma-separated list of host name suffixes, each starting with '.', e.g. '.pl.example.com'" },
  ),
  TRUSTED_PROXIES: optionalString.superRefine((v, ctx) => {
    for (const c of (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      const problem = cidrProblem(c);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }
  }),
  FORWARDED_HEADER: z
    .enum(['x-forwarded-for', 'forwarded'], { error: "must be 'x-forwarded-for' or 'forwarded'" })
    .default('x-forwarded-for'),
  TABLE_HANDLE_CACHE_BYTES: intWithDefault(32 * 1024 ** 2, 0),
  /** Deprecated: a count bound on top of TABLE_HANDLE_CACHE_BYTES (unset: none). */
  TABLE_HANDLE_CACHE_SIZE: optionalInt(0),
  TABLE_HANDLE_IDLE_SECONDS: intWithDefault(300, 1),
  TABLE_HINT_CACHE_BYTES: intWithDefault(8 * 1024 ** 2, 0),
  LANCE_INDEX_CACHE_BYTES: intWithDefault(256 * 1024 ** 2, 0),
  LANCE_METADATA_CACHE_BYTES: intWithDefault(64 * 1024 ** 2, 0),
  RECLAIM_AFTER_SECONDS: intWithDefault(300, 1),
  RECLAIM_INTERVAL_SECONDS: intWithDefault(60, 0),
  DROP_SYNC_BUDGET_MS: intWithDefault(10_000, 0),
  DROP_PROFILE: z.enum(['hard', 'soft'], { error: "must be 'hard' or 'soft'" }).default('hard'),
  DROP_RETENTION_SECONDS: intWithDefault(7 * 24 * 3600, 1),
  DROP_PURGE_INTERVAL_SECONDS: intWithDefault(60, 0),
  IDEMPOTENCY_REQUEST_ID_SECONDS: intWithDefault(600, 0),
  IDEMPOTENCY_KEY_HOURS: intWithDefault(24, 1),
  IDEMPOTENCY_WAIT_MS: intWithDefault(10_000, 0),
  JOBS_POLL_INTERVAL_MS: intWithDefault(1000, 0),
  JOBS_LEASE_SECONDS: intWithDefault(30, 1),
  JOBS_CONCURRENCY: intWithDefault(2, 0),
  JOBS_MAX_ATTEMPTS: intWithDefault(3, 1),
  JOBS_RETENTION_DAYS: intWithDefault(7, 0),
  MAINTENANCE_ENABLED: flag(true),
  MAINTENANCE_DELAY_MS: intWithDefault(60_000, 0),
  MAINTENANCE_SWEEP_INTERVAL_SECONDS: intWithDefault(21_600, 0),
  MAINTENANCE_COMPACT_MIN_FRAGMENTS: intWithDefault(10, 2),
  MAINTENANCE_INDEX_MIN_UNINDEXED_ROWS: intWithDefault(1, 1),
  MAINTENANCE_CLEANUP_RETENTION_SECONDS: intWithDefault(86_400, 0),
  MAINTENANCE_MAX_CONCURRENT_PER_DATABASE: intWithDefault(1, 1),
  USAGE_METERING: flag(true),
  USAGE_FLUSH_INTERVAL_SECONDS: intWithDefault(10, 1),
  USAGE_REFRESH_INTERVAL_SECONDS: intWithDefault(60, 0),
  USAGE_REFRESH_TABLES_PER_MINUTE: intWithDefault(600, 1),
  USAGE_REFRESH_CONCURRENCY: intWithDefault(4, 1),
  USAGE_FULL_SCAN_HOURS: intWithDefault(24, 1),
  QUOTA_MAX_TABLES: optionalInt(0),
  QUOTA_MAX_NAMESPACES: optionalInt(0),
  QUOTA_MAX_STORAGE_BYTES: optionalInt(0),
  QUOTA_MAX_ROWS_PER_WRITE: optionalInt(0),
  EVENTS_DISPATCH_INTERVAL_MS: intWithDefault(500, 0),
  EVENTS_BATCH_SIZE: intWithDefault(200, 1),
  EVENTS_LEASE_SECONDS: intWithDefault(30, 1),
  EVENTS_MAX_ATTEMPTS: intWithDefault(10, 1),
  EVENTS_RETRY_BASE_MS: intWithDefault(1000, 1),
  EVENTS_RETRY_MAX_MS: intWithDefault(300_000, 1),
  EVENTS_DELIVERY_TIMEOUT_MS: intWithDefault(10_000, 1),
  EVENTS_RETENTION_SECONDS: intWithDefault(3600, 0),
  EVENTS_ALLOW_PRIVATE_TARGETS: flag(false),
  EVENT_SINKS: optionalString,
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'log', 'debug', 'verbose']).default('log'),
  CONSOLE_ENABLED: flag(true),
});

export interface AppConfig {
  port: number;
  host: string;
  dataDir: string;
  /** The default storage profile's root (a local path or an object-store URI; never its options). */
  storageRoot: string;
  /** Storage profiles by name (docs/object-storage.md); every database uses one, `default` unless told otherwise. */
  storage: StorageConfig;
  /** undefined → embedded PGlite under DATA_DIR/catalog */
  databaseUrl?: string;
  /**
   * Where migrations run, under their session-level advisory lock: DATABASE_DIRECT_URL (Postgres itself, around a
   * pooler), else DATABASE_URL. undefined with the embedded catalog.
   */
  databaseDirectUrl?: string;
  /**
   * `transaction`: DATABASE_URL is a pooler in transaction mode (PgBouncer), which gives each transaction whichever
   * server connection is free, so nothing may rely on a session: no session SET on a new pool connection, and no
   * prepared statements unless DB_PREPARED_STATEMENTS=true says the pooler carries them (docs/pooler.md).
   */
  dbPooler: 'none' | 'transaction';
  dbPoolMax: number;
  dbConnectTimeoutMs: number;
  /** Client-side bound on one catalog query: a request never waits longer on Postgres. */
  dbQueryTimeoutMs: number;
  /**
   * The hot catalog reads (a table's lookup, pages of tables, version lookups) are prepared once per pooled
   * connection instead of parsed and planned on every call. Off by default behind a transaction pooler (DB_POOLER),
   * which may not carry prepared statements (PgBouncer before 1.21, or without max_prepared_statements); CatalogDb.read
   * also stops preparing by itself at the first error that says so.
   */
  dbPreparedStatements: boolean;
  basePath: string;
  adminApiKey?: string;
  /** Name of the database created (with a write key) on first start when the catalog has none. */
  bootstrapDatabase?: string;
  bodyLimitBytes: number;
  listDefaultLimit: number;
  listMaxLimit: number;
  cascadeSyncBudgetMs: number;
  /** How long a table drop waits for its folder's deletion before answering with a job id (0: never waits). */
  dropSyncBudgetMs: number;
  /** Soft-delete (docs/soft-delete.md): the server's delete profile, its retention, and the purge sweep's period (0: never). */
  drop: { profile: 'hard' | 'soft'; retentionSeconds: number; purgeIntervalMs: number };
  /** How long an API-key lookup is reused (0: never); bounds how late a revocation reaches other replicas. */
  authCacheTtlMs: number;
  /** How often a replica reads what other replicas changed (keys, databases) and forgets it (cache-invalidations). */
  authCacheSyncMs: number;
  /** The memory the key and database lookup caches may hold together (bytes, estimated per entry). */
  authCacheMaxBytes: number;
  /** How often a replica writes the API keys' last_used_at it has recorded in memory (one batched UPDATE). */
  keyUsageFlushMs: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'log' | 'debug' | 'verbose';
  /** Bearer (OAuth 2.0 JWT) authentication; undefined when OAUTH_JWKS_URI is unset (bearer auth off). */
  oauth?: {
    jwksUri: string;
    issuer: string;
    audience: string;
    databasesClaim: string;
    /** Claim holding the token's grants (docs/access-control.md); absent claim: the scope's role on the whole database. */
    grantsClaim: string;
    clockSkewS: number;
    /** Least time between two JWKS downloads (an unknown `kid` triggers one). */
    jwksCooldownMs: number;
  };
  /** With '.gw.example.com', a request to acme.gw.example.com addresses database 'acme'. */
  tenantHostSuffix?: string;
  /**
   * Network rules (docs/access-control.md): the host suffixes of the private endpoints (a private-only database
   * answers only under one of them), the proxies whose forwarding header is believed (CIDRs; empty: none, the
   * socket peer is the client) and which header that is.
   */
  network: { privateHostSuffixes: string[]; trustedProxies: string[]; forwardedHeader: 'x-forwarded-for' | 'forwarded' };
  /** GET /metrics: the scrape key (undefined → open), and whether series carry a `database` label (tenant names). */
  metrics: { apiKey?: string; databaseLabels: boolean };
  /** The web console at /console (docs/console.md). */
  console: { enabled: boolean };
  /** Shared rate-limit counters; undefined → in-memory (one process). */
  redisUrl?: string;
  /** Connect and command timeout for Redis: a rate-limit check never waits longer. */
  redisTimeoutMs: number;
  /** Default per-database limit: `limit` requests per `windowMs`. */
  rateLimit: { limit: number; windowMs: number };
  /** When Redis is unreachable: false → serve unthrottled (logged, counted); true → 503. */
  rateLimitFailClosed: boolean;
  /** Limits of the data plane's Arrow bodies. */
  arrow: {
    /** Largest streamed body (Enterprise create, create_table of a new table); 413 above. */
    streamBodyBytes: number;
    /**
     * Largest body of operations that commit once (insert, merge_insert, overwrite): spilled to disk while it
     * arrives, held in memory for the commit; 413 above (by Content-Length before it is read).
     */
    bufferedBodyBytes: number;
    /** A streamed upload is written in chunks of about this size (one Lance version each). */
    ingestChunkBytes: number;
    /**
     * Process-wide budget of bytes that writes may hold in memory at once (write-budget.ts): a write reserves what it
     * is about to hold; past the budget it waits its turn (writeBudgetWaitMs), then is answered 503 "Slow down" with
     * Retry-After. A reservation made while nothing else is reserved is always granted, so no body is refused forever.
     */
    writeMemoryBudgetBytes: number;
    /** How long a write that does not fit waits for the budget (in arrival order) before its 503; 0: answer at once. */
    writeBudgetWaitMs: number;
    /** Where bodies of insert/merge_insert/overwrite are spilled while they arrive (DATA_DIR/tmp). */
    spillDir: string;
  };
  /**
   * Freed memory jemalloc keeps for reuse between reads while no write holds write memory (allocator-retention.ts);
   * past it, or after a second without engine activity, it is handed back. 0: jemalloc's own decay only.
   */
  allocatorRetainBytes: number;
  /**
   * Open table handles kept for reads (per location, branch and pinned version; LRU), bounded by their estimated
   * memory (`maxBytes`) and, when TABLE_HANDLE_CACHE_SIZE is set, by their number (`max`); either 0: none kept.
   * Unused for `idleMs`: closed.
   */
  tableHandles: { maxBytes: number; max?: number; idleMs: number };
  /**
   * The bound of each per-table hint cache (src/platform/runtime/hint-cache.ts): where a table was last found, whether
   * its versions are managed, its footprint, its last maintenance trigger, credentials vended for it. 0: none kept.
   */
  tableHintCacheBytes: number;
  /** The one Lance session every table is opened with: its index and metadata caches, in bytes (docs/data-plane.md). */
  lanceSession: { indexCacheBytes: number; metadataCacheBytes: number };
  /** Crash safety: pending storage locations and the reclaimer (docs/resilience.md). */
  reclaim: {
    /** A pending location whose writer has not renewed its heartbeat for this long is taken over. */
    afterMs: number;
    /** How often the reclaimer looks for such locations; 0: never (this replica reclaims nothing). */
    intervalMs: number;
    /** How often a live writer renews its heartbeat: well within afterMs, at most every 10 s. */
    heartbeatMs: number;
  };
  /** Exactly-once keyed writes (docs/idempotency.md). */
  idempotency: {
    /** How long the outcome of a write sent with a client's x-request-id is kept for its retries; 0: not kept. */
    requestIdWindowMs: number;
    /** How long the outcome of a write sent with an Idempotency-Key is kept. */
    keyWindowMs: number;
    /** How long a retry waits for an earlier attempt still running before it is told to retry later (503). */
    waitMs: number;
  };
  /** Jobs (docs/data-plane.md): kept in the catalog, run by any replica whose runner is on. */
  jobs: {
    /** How often this replica looks for jobs to run; 0: it runs none (jobs it takes wait for another replica). */
    pollIntervalMs: number;
    /** A running job's lease: a job whose runner has not renewed it for this long is taken over by another replica. */
    leaseMs: number;
    /** Jobs one replica runs at once; 0: none. */
    concurrency: number;
    /** A job whose runner was lost this many times ends TIMED_OUT instead of being run again. */
    maxAttempts: number;
    /** Days a job is kept after it ended (then deleted by a runner); 0: kept for ever. */
    retentionDays: number;
  };
  /** Automatic table maintenance (docs/maintenance.md): the server's default policy and its pacing. */
  maintenance: {
    enabled: boolean;
    /** How long after a commit its table's maintenance job waits (a burst of writes makes one job). */
    delayMs: number;
    /** How often a replica queues maintenance for every table with data; 0: never. */
    sweepIntervalMs: number;
    compactMinFragments: number;
    indexMinUnindexedRows: number;
    cleanupRetentionSeconds: number;
    /** Maintenance jobs of one database running at once (a database may set its own). */
    maxConcurrentPerDatabase: number;
  };
  /** Usage metering (docs/usage-and-quotas.md). */
  usage: {
    /** Off: nothing is counted (USAGE_METERING=false). */
    metering: boolean;
    /** How often a replica adds what it counted to the catalog; a crash loses at most this much. */
    flushIntervalMs: number;
    /** How often this replica runs a storage-refresh round; 0: never (other replicas do). */
    refreshIntervalMs: number;
    /** Most tables whose statistics one replica re-reads per minute. */
    refreshTablesPerMinute: number;
    /** Tables one replica measures at once (each measurement mostly waits on the store). */
    refreshConcurrency: number;
    /** Every table is re-read at least this often (also when nothing says it changed). */
    fullScanMs: number;
  };
  /** Default quotas of databases that set none of their own; undefined: no limit. */
  quotas: Quotas;
  /** Change events: the outbox's dispatcher and the fleet's sinks (docs/events.md). */
  events: EventsConfig;
}

/** A database's quotas (undefined / null: no limit). */
export interface Quotas {
  maxTables?: number | null;
  maxNamespaces?: number | null;
  maxStorageBytes?: number | null;
  maxRowsPerWrite?: number | null;
}

export const APP_CONFIG = Symbol('APP_CONFIG');

const list = (v: string | undefined): string[] =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  const problems: string[] = [];
  if (e.LIST_DEFAULT_LIMIT > e.LIST_MAX_LIMIT) problems.push('LIST_DEFAULT_LIMIT: must not exceed LIST_MAX_LIMIT');
  if (e.OAUTH_JWKS_URI && !e.OAUTH_ISSUER) problems.push('OAUTH_ISSUER: required when OAUTH_JWKS_URI is set');
  if (e.OAUTH_JWKS_URI && !e.OAUTH_AUDIENCE) problems.push('OAUTH_AUDIENCE: required when OAUTH_JWKS_URI is set');
  // Behind a pooler: DATABASE_DIRECT_URL set apart from DATABASE_URL says a transaction pooler unless DB_POOLER says
  // otherwise; migrations need Postgres itself (a session-level advisory lock, which a transaction pooler does not pin).
  const pooledByDefault = e.DATABASE_DIRECT_URL !== undefined && e.DATABASE_DIRECT_URL !== e.DATABASE_URL;
  const dbPooler = e.DB_POOLER ?? (pooledByDefault ? 'transaction' : 'none');
  if (e.DATABASE_DIRECT_URL && !e.DATABASE_URL)
    problems.push('DATABASE_DIRECT_URL: needs DATABASE_URL (the embedded catalog has no pooler)');
  if (dbPooler === 'transaction' && !pooledByDefault) {
    problems.push(
      'DB_POOLER: transaction needs DATABASE_DIRECT_URL set to Postgres itself (apart from DATABASE_URL): migrations take a ' +
        'session-level advisory lock, which a pooler in transaction mode does not keep',
    );
  }
  const dataDir = path.resolve(e.DATA_DIR);
  const storage = loadStorageConfig(e, dataDir, problems);
  const eventSinks = parseEventSinks(e.EVENT_SINKS, problems);
  if (problems.length) throw new ConfigError(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir,
    storageRoot: storage.profiles.get(storage.defaultProfile)!.root,
    storage,
    databaseUrl: e.DATABASE_URL,
    databaseDirectUrl: e.DATABASE_URL ? (e.DATABASE_DIRECT_URL ?? e.DATABASE_URL) : undefined,
    dbPooler,
    dbPoolMax: e.DB_POOL_MAX,
    dbConnectTimeoutMs: e.DB_CONNECT_TIMEOUT_MS,
    dbQueryTimeoutMs: e.DB_QUERY_TIMEOUT_MS,
    dbPreparedStatements: e.DB_PREPARED_STATEMENTS ?? dbPooler === 'none',
    basePath: e.BASE_PATH,
    adminApiKey: e.ADMIN_API_KEY,
    // The embedded default bootstraps a first database so a newcomer can connect at once.
    bootstrapDatabase: e.BOOTSTRAP_DATABASE ?? (e.DATABASE_URL ? undefined : 'default'),
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    listDefaultLimit: e.LIST_DEFAULT_LIMIT,
    listMaxLimit: e.LIST_MAX_LIMIT,
    cascadeSyncBudgetMs: e.CASCADE_SYNC_BUDGET_MS,
    dropSyncBudgetMs: e.DROP_SYNC_BUDGET_MS,
    drop: { profile: e.DROP_PROFILE, retentionSeconds: e.DROP_RETENTION_SECONDS, purgeIntervalMs: e.DROP_PURGE_INTERVAL_SECONDS * 1000 },
    authCacheTtlMs: e.AUTH_CACHE_TTL_MS,
    authCacheSyncMs: e.AUTH_CACHE_SYNC_MS,
    authCacheMaxBytes: e.AUTH_CACHE_MAX_MB * 1024 * 1024,
    keyUsageFlushMs: e.KEY_USAGE_FLUSH_MS,
    oauth: e.OAUTH_JWKS_URI
      ? {
          jwksUri: e.OAUTH_JWKS_URI,
          issuer: e.OAUTH_ISSUER as string,
          audience: e.OAUTH_AUDIENCE as string,
          databasesClaim: e.OAUTH_DATABASES_CLAIM,
          grantsClaim: e.OAUTH_GRANTS_CLAIM,
          clockSkewS: e.OAUTH_CLOCK_SKEW_S,
          jwksCooldownMs: e.OAUTH_JWKS_COOLDOWN_MS,
        }
      : undefined,
    tenantHostSuffix: e.TENANT_HOST_SUFFIX?.toLowerCase(),
    network: {
      privateHostSuffixes: list(e.PRIVATE_HOST_SUFFIXES).map((s) => s.toLowerCase()),
      trustedProxies: list(e.TRUSTED_PROXIES),
      forwardedHeader: e.FORWARDED_HEADER,
    },
    metrics: { apiKey: e.METRICS_API_KEY, databaseLabels: e.METRICS_DATABASE_LABELS },
    console: { enabled: e.CONSOLE_ENABLED },
    redisUrl: e.REDIS_URL,
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    rateLimit: { limit: e.RATE_LIMIT_LIMIT, windowMs: e.RATE_LIMIT_WINDOW_MS },
    rateLimitFailClosed: e.RATE_LIMIT_FAIL_CLOSED,
    arrow: {
      streamBodyBytes: e.ARROW_STREAM_LIMIT_BYTES,
      bufferedBodyBytes: e.ARROW_BUFFERED_LIMIT_BYTES,
      ingestChunkBytes: e.ARROW_INGEST_CHUNK_BYTES,
      writeMemoryBudgetBytes: e.WRITE_MEMORY_BUDGET_BYTES,
      writeBudgetWaitMs: e.WRITE_BUDGET_WAIT_MS,
      spillDir: path.join(dataDir, 'tmp'),
    },
    allocatorRetainBytes: e.ALLOCATOR_RETAIN_BYTES,
    tableHandles: {
      maxBytes: e.TABLE_HANDLE_CACHE_BYTES,
      ...(e.TABLE_HANDLE_CACHE_SIZE !== undefined ? { max: e.TABLE_HANDLE_CACHE_SIZE } : {}),
      idleMs: e.TABLE_HANDLE_IDLE_SECONDS * 1000,
    },
    tableHintCacheBytes: e.TABLE_HINT_CACHE_BYTES,
    lanceSession: { indexCacheBytes: e.LANCE_INDEX_CACHE_BYTES, metadataCacheBytes: e.LANCE_METADATA_CACHE_BYTES },
    reclaim: {
      afterMs: e.RECLAIM_AFTER_SECONDS * 1000,
      intervalMs: e.RECLAIM_INTERVAL_SECONDS * 1000,
      // Three heartbeats fit in the age, so one slow catalog round trip never makes a live writer look gone.
      heartbeatMs: Math.min(10_000, Math.floor((e.RECLAIM_AFTER_SECONDS * 1000) / 3)),
    },
    idempotency: {
      requestIdWindowMs: e.IDEMPOTENCY_REQUEST_ID_SECONDS * 1000,
      keyWindowMs: e.IDEMPOTENCY_KEY_HOURS * 3600_000,
      waitMs: e.IDEMPOTENCY_WAIT_MS,
    },
    jobs: {
      pollIntervalMs: e.JOBS_POLL_INTERVAL_MS,
      leaseMs: e.JOBS_LEASE_SECONDS * 1000,
      concurrency: e.JOBS_CONCURRENCY,
      maxAttempts: e.JOBS_MAX_ATTEMPTS,
      retentionDays: e.JOBS_RETENTION_DAYS,
    },
    maintenance: {
      enabled: e.MAINTENANCE_ENABLED,
      delayMs: e.MAINTENANCE_DELAY_MS,
      sweepIntervalMs: e.MAINTENANCE_SWEEP_INTERVAL_SECONDS * 1000,
      compactMinFragments: e.MAINTENANCE_COMPACT_MIN_FRAGMENTS,
      indexMinUnindexedRows: e.MAINTENANCE_INDEX_MIN_UNINDEXED_ROWS,
      cleanupRetentionSeconds: e.MAINTENANCE_CLEANUP_RETENTION_SECONDS,
      maxConcurrentPerDatabase: e.MAINTENANCE_MAX_CONCURRENT_PER_DATABASE,
    },
    usage: {
      metering: e.USAGE_METERING,
      flushIntervalMs: e.USAGE_FLUSH_INTERVAL_SECONDS * 1000,
      refreshIntervalMs: e.USAGE_REFRESH_INTERVAL_SECONDS * 1000,
      refreshTablesPerMinute: e.USAGE_REFRESH_TABLES_PER_MINUTE,
      refreshConcurrency: e.USAGE_REFRESH_CONCURRENCY,
      fullScanMs: e.USAGE_FULL_SCAN_HOURS * 3600_000,
    },
    quotas: {
      maxTables: e.QUOTA_MAX_TABLES,
      maxNamespaces: e.QUOTA_MAX_NAMESPACES,
      maxStorageBytes: e.QUOTA_MAX_STORAGE_BYTES,
      maxRowsPerWrite: e.QUOTA_MAX_ROWS_PER_WRITE,
    },
    events: {
      dispatchIntervalMs: e.EVENTS_DISPATCH_INTERVAL_MS,
      batchSize: e.EVENTS_BATCH_SIZE,
      leaseMs: e.EVENTS_LEASE_SECONDS * 1000,
      maxAttempts: e.EVENTS_MAX_ATTEMPTS,
      retryBaseMs: e.EVENTS_RETRY_BASE_MS,
      retryMaxMs: Math.max(e.EVENTS_RETRY_MAX_MS, e.EVENTS_RETRY_BASE_MS),
      deliveryTimeoutMs: e.EVENTS_DELIVERY_TIMEOUT_MS,
      retentionMs: e.EVENTS_RETENTION_SECONDS * 1000,
      allowPrivateTargets: e.EVENTS_ALLOW_PRIVATE_TARGETS,
      sinks: eventSinks,
    },
    logLevel: e.LOG_LEVEL,
  };
}
