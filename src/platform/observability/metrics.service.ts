import { Inject, Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { APP_CONFIG, AppConfig } from '../config/config';
import { CATALOG_DB, CatalogDb } from '../db/catalog-db';
import { RedisConnection } from '../redis/redis.provider';

/**
 * A counter whose series carry the request's database only when METRICS_DATABASE_LABELS=true. Off by default:
 * a label value is a tenant's name, and whoever reads /metrics would see every tenant and its activity; then the
 * series aggregate over all databases.
 */
export class PerDatabaseCounter<L extends string> {
  constructor(
    private readonly counter: Counter<L | 'database'>,
    private readonly withDatabase: boolean,
  ) {}

  inc(labels: Partial<Record<L, string>> & { database: string }, value = 1): void {
    const { database, ...rest } = labels;
    this.counter.inc((this.withDatabase ? { ...rest, database } : rest) as unknown as Partial<Record<L | 'database', string>>, value);
  }
}

/**
 * Prometheus metrics (prom-client), one registry per gateway instance. Labels stay bounded: routes are templates
 * ('/v1/table/:id/describe'), never raw paths; `database` exists only with METRICS_DATABASE_LABELS=true, is set only
 * once a request's database has been resolved (never a raw header value), and appears on counters only (not on the
 * latency histogram, whose series would multiply by every bucket).
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly requests: PerDatabaseCounter<'method' | 'route' | 'status'>;

  readonly latency = this.histogram(
    'lgw_http_request_duration_seconds',
    'HTTP request latency by method, route template and status',
    ['method', 'route', 'status'],
    [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );

  readonly throttled: PerDatabaseCounter<never>;

  readonly authFailures = this.counter(
    'lgw_auth_failures_total',
    'Requests refused for their credential: 401 (missing/invalid) or 403 (not allowed)',
    ['status'],
  );

  readonly rateLimitFailOpen = this.counter(
    'lgw_rate_limit_fail_open_total',
    'Requests served unthrottled because the rate-limit store (Redis) was unreachable',
  );

  readonly ingestedBytes: PerDatabaseCounter<never>;
  readonly ingestedRows: PerDatabaseCounter<never>;

  readonly reclaimedLocations = this.counter(
    'lgw_reclaimed_locations_total',
    'Storage locations the reclaimer cleaned after a writer or clean-up was cut off, by reason',
    ['reason'],
  );

  readonly maintenanceRuns = this.counter(
    'lgw_maintenance_runs_total',
    'Table maintenance jobs run on this replica, by job type and outcome (done, nothing_to_do, skipped, failed)',
    ['type', 'outcome'],
  );

  readonly maintenanceBytesReclaimed = this.counter(
    'lgw_maintenance_bytes_reclaimed_total',
    'Bytes the engine reported removed by maintenance cleanups (old versions pruned)',
  );

  readonly maintenanceFragmentsMerged = this.counter(
    'lgw_maintenance_fragments_merged_total',
    'Fragments compaction rewrote into larger ones',
  );

  readonly maintenanceDuration = this.histogram(
    'lgw_maintenance_duration_seconds',
    'Duration of table maintenance jobs, by job type',
    ['type'],
    [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  );

  readonly reclaimedBytes = this.counter('lgw_reclaimed_bytes_total', 'Bytes of storage the reclaimer deleted, by reason', ['reason']);

  readonly usageFlushes = this.counter(
    'lgw_usage_flushes_total',
    'Usage flushes of this replica: applied, already_applied (a retried flush that had committed), failed (kept, retried)',
    ['outcome'],
  );

  readonly usageTablesScanned = this.counter(
    'lgw_usage_tables_scanned_total',
    'Tables whose statistics the storage refresher of this replica re-read, by outcome',
    ['outcome'],
  );

  /** Change events (docs/events.md); `sink`: a fleet sink's name, a database sink's id (or database/name with METRICS_DATABASE_LABELS). */
  readonly eventsDelivered = this.counter('lgw_events_delivered_total', 'Change events delivered by this replica, by sink', ['sink']);
  readonly eventsFailed = this.counter(
    'lgw_events_delivery_failures_total',
    'Failed deliveries of change events by this replica, by sink',
    ['sink'],
  );
  readonly eventsDeadLettered = this.counter('lgw_events_dead_lettered_total', 'Change events given up on (dead-lettered), by sink', [
    'sink',
  ]);
  readonly eventsOutboxDepth = new Gauge({
    name: 'lgw_events_outbox_depth',
    help: 'Change events in the outbox not yet delivered to every enabled sink (as last read by this replica)',
    registers: [this.registry],
  });
  readonly eventsLag = new Gauge({
    name: 'lgw_events_delivery_lag_seconds',
    help: 'Age of the oldest change event a sink has not been sent yet (0: none waits), by sink',
    labelNames: ['sink'] as const,
    registers: [this.registry],
  });

  /** Fleet-wide figures, as the last storage-refresh round of this replica measured them (none before one ran). */
  fleet?: { databases: number; tables: number; namespaces: number; storageBytes: number };

  constructor(@Inject(APP_CONFIG) config: AppConfig, @Inject(CATALOG_DB) catalog: CatalogDb, redis: RedisConnection) {
    const byDatabase = config.metrics.databaseLabels;
    const perDatabase = <L extends string>(name: string, help: string, labelNames: L[]) =>
      new PerDatabaseCounter<L>(
        this.counter<L | 'database'>(name, help, byDatabase ? [...labelNames, 'database'] : labelNames),
        byDatabase,
      );
    this.requests = perDatabase(
      'lgw_http_requests_total',
      `HTTP requests answered, by method, route template and status${byDatabase ? ' and database' : ''}`,
      ['method', 'route', 'status'],
    );
    this.throttled = perDatabase(
      'lgw_throttled_requests_total',
      'Requests answered 503 Slow down because their database exceeded its rate limit',
      [],
    );
    this.ingestedBytes = perDatabase('lgw_arrow_ingested_bytes_total', 'Arrow IPC bytes received by the data plane', []);
    this.ingestedRows = perDatabase('lgw_arrow_ingested_rows_total', 'Rows written by the data plane from Arrow bodies', []);
    collectDefaultMetrics({ register: this.registry, prefix: 'lgw_' });
    new Gauge({
      name: 'lgw_catalog_pool_connections',
      help: 'Catalog Postgres pool connections by state (absent for the embedded catalog)',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const s = catalog.poolStats();
        if (!s) return;
        this.set({ state: 'total' }, s.total);
        this.set({ state: 'idle' }, s.idle);
        this.set({ state: 'waiting' }, s.waiting);
      },
    });
    const fleet = () => this.fleet;
    const fleetGauge = (name: string, help: string, pick: (f: NonNullable<MetricsService['fleet']>) => number) =>
      new Gauge({
        name,
        help: `${help} (whole gateway, no per-database series; absent until a storage-refresh round ran here)`,
        registers: [this.registry],
        collect() {
          const f = fleet();
          if (f) this.set(pick(f));
        },
      });
    fleetGauge('lgw_usage_databases', 'Databases', (f) => f.databases);
    fleetGauge('lgw_usage_tables', 'Tables of all databases', (f) => f.tables);
    fleetGauge('lgw_usage_namespaces', 'Namespaces of all databases', (f) => f.namespaces);
    fleetGauge('lgw_usage_storage_bytes', 'Storage of all tables, as last measured by the storage refresher', (f) => f.storageBytes);
    new Gauge({
      name: 'lgw_redis_up',
      help: 'Rate-limit store: 1 connected, 0 unreachable (absent without REDIS_URL)',
      registers: [this.registry],
      collect() {
        if (redis.status !== 'none') this.set(redis.status === 'ready' ? 1 : 0);
      },
    });
  }

  private counter<L extends string = never>(name: string, help: string, labelNames: L[] = []): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram<L extends string>(name: string, help: string, labelNames: L[], buckets: number[]): Histogram<L> {
    return new Histogram({ name, help, labelNames, buckets, registers: [this.registry] });
  }

  /** For the reclaimer: locations cleaned and the bytes they held. */
  recordReclaim(reason: string, bytes: number, locations = 1): void {
    this.reclaimedLocations.inc({ reason }, locations);
    this.reclaimedBytes.inc({ reason }, bytes);
  }

  /** For the data plane: Arrow bytes and rows taken in for a database. */
  recordIngest(database: string, bytes: number, rows: number): void {
    this.ingestedBytes.inc({ database }, bytes);
    this.ingestedRows.inc({ database }, rows);
  }
}
