import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { z } from 'zod';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { EventSinkSpec, eventSinkSpec } from '../../platform/config/events-config';
import { Errors } from '../../platform/http/errors';
import { DatabasesRepository } from '../identity';
import { OutboxRepository } from '../outbox';
import { EventSinksRepository, SinkChange, SinkRow, SinkTarget } from './event-sinks.repository';
import type { EventSink, UpdateEventSinkBody } from './events.schemas';
import { newWebhookSecret } from './sinks';
import { webhookUrlProblem } from './webhook-target';

/** A URL as a listing shows it: user and password replaced (a NATS URL may carry them). */
const redacted = (url: string) => url.replace(/\/\/[^/@,\s]*@/g, '//***@');

/**
 * The event sinks (docs/events.md): the operator's per-database and fleet sinks through the API, the fleet's sinks of
 * EVENT_SINKS at start-up, and their dead letters. A sink starts at the outbox's head: it receives what is committed
 * after it was made. A webhook's URL passes the SSRF guard (webhook-target.ts); its signing secret is made here and
 * shown once.
 */
@Injectable()
export class EventSinksService implements OnApplicationBootstrap {
  private readonly log = new Logger('Events');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: EventSinksRepository,
    private readonly outbox: OutboxRepository,
    private readonly databases: DatabasesRepository,
  ) {}

  /** Brings the fleet's configured sinks (EVENT_SINKS, when set) into the catalog; those removed from it go. */
  async onApplicationBootstrap(): Promise<void> {
    const configured = this.config.events.sinks;
    if (!configured) return;
    const head = await this.startingPoint();
    for (const s of configured) {
      await this.repo.upsertConfigured({ ...this.row(s, null, s.secret ?? null), managedBy: 'config', cursor: head });
    }
    const removed = await this.repo.deleteConfiguredExcept(configured.map((s) => s.name));
    if (removed > 0) this.log.log(`removed ${removed} event sink(s) no longer in EVENT_SINKS`);
  }

  async create(databaseName: string | null, spec: EventSinkSpec): Promise<EventSink> {
    const databaseId = databaseName === null ? null : await this.databaseId(databaseName);
    await this.checkTarget(spec.kind, spec.url);
    const secret = spec.kind === 'webhook' ? newWebhookSecret() : null;
    const id = await this.repo.insert({ ...this.row(spec, databaseId, secret), managedBy: 'api', cursor: await this.startingPoint() });
    if (!id)
      throw Errors.conflict(
        `an event sink named '${spec.name}' already exists ${databaseName === null ? 'for the fleet' : `in database '${databaseName}'`}`,
      );
    return { ...this.view((await this.repo.get(id))!), ...(secret ? { secret } : {}) };
  }

  async list(databaseName: string | null): Promise<{ sinks: EventSink[] }> {
    const databaseId = databaseName === null ? null : await this.databaseId(databaseName);
    return { sinks: (await this.repo.list(databaseId)).map((s) => this.view(s)) };
  }

  async get(id: string): Promise<EventSink> {
    return this.view(await this.sink(id));
  }

  async update(id: string, body: z.output<typeof UpdateEventSinkBody>): Promise<EventSink> {
    const s = await this.sink(id, true);
    const { rotate_secret, ...rest } = body;
    // The result must still be a valid sink: the sink as it is, with the change over it, is validated as a new one.
    const merged = eventSinkSpec.safeParse({
      name: s.name,
      kind: s.kind,
      url: s.target.url,
      ...(s.target.subject_prefix !== undefined ? { subject_prefix: s.target.subject_prefix } : {}),
      types: s.types,
      namespace_prefix: s.namespacePrefix,
      ...rest,
    });
    if (!merged.success) throw Errors.invalidInput(merged.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
    if (rest.url !== undefined) await this.checkTarget(s.kind, rest.url);
    if (rotate_secret && s.kind !== 'webhook') throw Errors.invalidInput('rotate_secret: only a webhook has a signing secret');
    const secret = rotate_secret ? newWebhookSecret() : undefined;
    const change: SinkChange = {
      name: rest.name,
      target: rest.url !== undefined || rest.subject_prefix !== undefined ? this.target(merged.data) : undefined,
      secret,
      types: rest.types,
      namespacePrefix: rest.namespace_prefix,
      enabled: rest.enabled,
    };
    if (!(await this.repo.update(id, change))) throw Errors.conflict(`an event sink named '${rest.name}' already exists in its scope`);
    return { ...this.view((await this.repo.get(id))!), ...(secret ? { secret } : {}) };
  }

  async delete(id: string): Promise<void> {
    await this.sink(id, true);
    await this.repo.delete(id);
  }

  async deadLetters(id: string, limit: number, after?: string) {
    await this.sink(id);
    const rows = await this.repo.deadLetters(id, limit + 1, after === undefined ? undefined : BigInt(after));
    const page = rows.slice(0, limit);
    return {
      dead_letters: page.map((d) => ({
        id: d.id,
        event_id: d.eventId,
        sequence: d.eventSeq.toString(),
        state: d.state,
        attempts: d.attempts,
        last_error: d.lastError,
        created_at: d.createdAt.toISOString(),
        event: d.event,
      })),
      ...(rows.length > limit ? { next: page[page.length - 1].eventSeq.toString() } : {}),
    };
  }

  async replay(id: string, ids?: string[]): Promise<{ count: number }> {
    await this.sink(id);
    return { count: await this.repo.markReplay(id, ids ?? null) };
  }

  async discard(id: string, ids?: string[]): Promise<{ count: number }> {
    await this.sink(id);
    return { count: await this.repo.discard(id, ids ?? null) };
  }

  /** Where a new sink starts: after every event committed before it (numbered now, so none of them comes later). */
  private startingPoint(): Promise<bigint> {
    return this.outbox.sequence(1_000_000);
  }

  private async sink(id: string, changing = false): Promise<SinkRow> {
    const s = z.uuid().safeParse(id).success ? await this.repo.get(id) : null;
    if (!s) throw Errors.notFound(`event sink '${id}' not found`);
    if (changing && s.managedBy === 'config') throw Errors.conflict(`event sink '${s.name}' comes from EVENT_SINKS: change it there`);
    return s;
  }

  private async databaseId(name: string): Promise<string> {
    const db = await this.databases.findByName(name);
    if (!db) throw Errors.notFound(`database '${name}' not found`);
    return db.id;
  }

  private async checkTarget(kind: 'nats' | 'webhook', url: string): Promise<void> {
    if (kind !== 'webhook') return;
    const problem = await webhookUrlProblem(url, this.config.events.allowPrivateTargets);
    if (problem) throw Errors.invalidInput(`url: ${problem}`);
  }

  private target(s: EventSinkSpec): SinkTarget {
    return s.kind === 'nats' ? { url: s.url, subject_prefix: s.subject_prefix ?? 'lance' } : { url: s.url };
  }

  private row(s: EventSinkSpec, databaseId: string | null, secret: string | null) {
    return {
      databaseId,
      name: s.name,
      kind: s.kind,
      target: this.target(s),
      secret,
      types: s.types ?? [],
      namespacePrefix: s.namespace_prefix ?? [],
      enabled: s.enabled ?? true,
    };
  }

  private view(s: SinkRow): EventSink {
    const waiting = s.nextAttemptAt !== null && s.attempts > 0;
    return {
      id: s.id,
      name: s.name,
      database: s.databaseName,
      kind: s.kind,
      url: redacted(s.target.url),
      ...(s.kind === 'nats' ? { subject_prefix: s.target.subject_prefix ?? 'lance' } : {}),
      types: s.types,
      namespace_prefix: s.namespacePrefix,
      enabled: s.enabled,
      managed_by: s.managedBy,
      state: !s.enabled ? 'disabled' : waiting ? 'retrying' : 'active',
      cursor: s.cursor.toString(),
      attempts: s.attempts,
      next_attempt_at: s.nextAttemptAt?.toISOString() ?? null,
      last_error: s.lastError,
      last_delivered_at: s.lastDeliveredAt?.toISOString() ?? null,
      delivered: Number(s.deliveredCount),
      failed: Number(s.failedCount),
      dead_letters: s.deadLetters,
      created_at: s.createdAt.toISOString(),
    };
  }
}
