import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { LeasedWorker } from '../../platform/cluster/leased-worker';
import { ReplicaIdentity } from '../../platform/cluster/replica-identity';
import { MetricsService } from '../../platform/observability/metrics.service';
import { OutboxEventRow, OutboxRepository } from '../outbox';
import { CloudEvent, toCloudEvent } from './cloud-event';
import { EventSinksRepository, SinkRow } from './event-sinks.repository';
import { NatsSender, SendResult, WebhookSender } from './sinks';

/** What one dispatcher round did (tests and operators run rounds by hand). */
export interface DispatchRound {
  sequenced: bigint;
  delivered: number;
  failed: number;
  deadLettered: number;
}

/** Sinks one replica leases per round (those furthest behind first; the rest in the next rounds). */
const SINKS_PER_ROUND = 32;
/** How often a replica trims the outbox and re-reads its depth and the sinks' lag for the metrics. */
const HOUSEKEEPING_MS = 10_000;

/** Whether a sink takes an event: its database (a database sink sees only its own), types and namespace prefix. */
export function sinkWants(s: Pick<SinkRow, 'databaseId' | 'types' | 'namespacePrefix'>, e: OutboxEventRow): boolean {
  if (s.databaseId !== null && e.databaseId !== s.databaseId) return false;
  if (s.types.length > 0 && !s.types.some((t) => (t.endsWith('*') ? e.type.startsWith(t.slice(0, -1)) : e.type === t))) return false;
  const p = s.namespacePrefix;
  if (p.length > 0 && (e.objectId.length < p.length || p.some((level, i) => e.objectId[i] !== level))) return false;
  return true;
}

/**
 * The outbox's dispatcher (docs/events.md), on every replica whose EVENTS_DISPATCH_INTERVAL_MS is not 0. Each round:
 * the sequencer numbers newly committed events; the replica leases due sinks (Postgres leases, as the other workers:
 * one replica per sink at a time, a lost replica's sinks taken over when their lease runs out) and sends each its
 * dead letters asked for replay, then the events after its cursor, in order; a failed event is retried with backoff
 * and dead-lettered after EVENTS_MAX_ATTEMPTS tries. Now and then it trims what every sink has and reads the metrics.
 */
@Injectable()
export class EventDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('Events');
  private readonly worker = new LeasedWorker<DispatchRound>({
    log: this.log,
    failure: 'event dispatch round failed',
    result: () => ({ sequenced: 0n, delivered: 0, failed: 0, deadLettered: 0 }),
    tick: (out) => this.round(out),
  });
  private readonly webhooks: WebhookSender;
  private readonly nats: NatsSender;
  private lastHousekeeping = 0;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly outbox: OutboxRepository,
    private readonly sinks: EventSinksRepository,
    private readonly replica: ReplicaIdentity,
    private readonly metrics: MetricsService,
  ) {
    const e = config.events;
    this.webhooks = new WebhookSender(e.deliveryTimeoutMs, e.allowPrivateTargets);
    this.nats = new NatsSender(e.deliveryTimeoutMs);
  }

  onApplicationBootstrap(): void {
    this.worker.start(this.config.events.dispatchIntervalMs, true);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.worker.stop();
    this.webhooks.close();
    await this.nats.close();
  }

  /** One round now (joins one under way). */
  runOnce(): Promise<DispatchRound> {
    return this.worker.runOnce();
  }

  private async round(out: DispatchRound): Promise<void> {
    const e = this.config.events;
    const head = await this.outbox.sequence(e.batchSize * 10);
    out.sequenced = head;
    const owner = this.replica.id;
    await this.sinks.skipIdle(head);
    const due = await this.sinks.claim(owner, e.leaseMs, SINKS_PER_ROUND, head);
    await Promise.all(
      due.map((s) =>
        this.deliver(s, head, out)
          .catch((err) => {
            this.log.warn(`delivery to event sink ${s.id} failed: ${(err as Error).message}`);
            return false;
          })
          .then((released) => (released ? undefined : this.sinks.release(s.id, owner).catch(() => undefined))),
      ),
    );
    if (Date.now() - this.lastHousekeeping >= HOUSEKEEPING_MS) {
      this.lastHousekeeping = Date.now();
      await this.housekeeping(head);
    }
  }

  /**
   * A sink's replays, then its events after its cursor up to `head`, a batch at a time, until done or one fails.
   * True when its lease was already ended with the last progress (else the caller ends it).
   */
  private async deliver(s: SinkRow, head: bigint, out: DispatchRound): Promise<boolean> {
    const e = this.config.events;
    const owner = this.replica.id;
    const label = this.sinkLabel(s);
    for (const dl of s.hasReplays ? await this.sinks.replays(s.id, e.batchSize) : []) {
      const r = await this.send(s, [dl.event as unknown as CloudEvent]);
      if (r.delivered === 1) {
        await this.sinks.replayed(dl.id);
        this.metrics.eventsDelivered.inc({ sink: label });
        out.delivered++;
      } else {
        await this.sinks.replayFailed(dl.id, r.error ?? 'failed');
        this.metrics.eventsFailed.inc({ sink: label });
        out.failed++;
      }
    }
    if (s.nextAttemptAt && s.nextAttemptAt.getTime() > Date.now()) return false; // leased for its replays only
    let cursor = s.cursor;
    while (cursor < head && !this.worker.stopped) {
      const rows = await this.outbox.after(cursor, head, s.databaseId, e.batchSize);
      const wanted = rows.filter((r) => sinkWants(s, r));
      const scannedTo = rows.length < e.batchSize ? head : rows[rows.length - 1].seq;
      const r: SendResult = wanted.length > 0 ? await this.send(s, wanted.map(toCloudEvent)) : { delivered: 0 };
      if (r.delivered > 0) this.metrics.eventsDelivered.inc({ sink: label }, r.delivered);
      out.delivered += r.delivered;
      if (r.error === undefined) {
        const last = scannedTo >= head;
        if (!(await this.sinks.advance(s.id, owner, scannedTo, r.delivered, last))) return true; // lease lost
        if (last) return true;
        cursor = scannedTo;
        continue;
      }
      // Everything before the failed event is done; the failed one is tried again later, or given up on.
      const failedEvent = wanted[r.delivered];
      const error = r.error.slice(0, 1000);
      this.metrics.eventsFailed.inc({ sink: label });
      out.failed++;
      const attempts = s.attempts + 1;
      if (attempts >= e.maxAttempts) {
        await this.sinks.deadLetter(
          s.id,
          owner,
          { id: failedEvent.id, seq: failedEvent.seq, body: toCloudEvent(failedEvent) },
          attempts,
          error,
        );
        this.metrics.eventsDeadLettered.inc({ sink: label });
        out.deadLettered++;
        this.log.warn(`event ${failedEvent.id} dead-lettered for sink ${label} after ${attempts} tries: ${error}`);
      } else {
        await this.sinks.failed(s.id, owner, failedEvent.seq - 1n, r.delivered, error, this.backoff(attempts));
      }
      return false;
    }
    return false;
  }

  private send(s: SinkRow, events: CloudEvent[]): Promise<SendResult> {
    return s.kind === 'nats' ? this.nats.send(s, events) : this.webhooks.send(s, events);
  }

  /** base · 2^(attempt-1), at most EVENTS_RETRY_MAX_MS, less up to a fifth at random (replicas do not retry in step). */
  private backoff(attempt: number): number {
    const { retryBaseMs, retryMaxMs } = this.config.events;
    const ms = Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(attempt - 1, 30));
    return Math.max(1, Math.round(ms * (1 - Math.random() * 0.2)));
  }

  /** A fleet sink by its name; a database's by its id, or `<database>/<name>` with METRICS_DATABASE_LABELS. */
  private sinkLabel(s: Pick<SinkRow, 'id' | 'name' | 'databaseName' | 'databaseId'>): string {
    if (s.databaseId === null) return s.name;
    return this.config.metrics.databaseLabels ? `${s.databaseName}/${s.name}` : s.id;
  }

  /** Trims what every enabled sink has (after the retention), and reads the outbox's depth and each sink's lag. */
  async housekeeping(head?: bigint): Promise<void> {
    const min = await this.sinks.minCursor();
    head ??= await this.outbox.head();
    await this.outbox.trim(min ?? head, this.config.events.retentionMs);
    this.metrics.eventsOutboxDepth.set(await this.outbox.depth(min));
    const lags = await this.sinks.lags();
    this.metrics.eventsLag.reset();
    for (const s of lags) {
      this.metrics.eventsLag.set({ sink: this.sinkLabel(s) }, s.oldest ? Math.max(0, (Date.now() - s.oldest.getTime()) / 1000) : 0);
    }
  }
}
