import { z } from 'zod';

/**
 * A change-event sink as the operator describes it (docs/events.md): in EVENT_SINKS (the fleet's sinks, JSON) and in
 * the operator API's body (POST /admin/v1/event-sinks, per database or for the fleet). Kept beside the config so both
 * read one schema.
 */
export const SINK_NAME = /^[A-Za-z0-9_.-]{1,100}$/;
/** An event type (`lance.table.written`) or a prefix of types ending in `*` (`lance.table.*`). */
const TYPE_PATTERN = /^[a-z0-9_.]{1,200}\*?$/;
/** A webhook signing secret as Standard Webhooks writes it: `whsec_` and at least 24 random bytes in base64. */
export const WEBHOOK_SECRET = /^whsec_[A-Za-z0-9+/]{32,}={0,2}$/;
/** A NATS subject's tokens: no spaces, no wildcards; at most 16 tokens. */
const SUBJECT_PREFIX = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,15}$/;

export const eventSinkSpec = z
  .object({
    name: z.string().regex(SINK_NAME, 'must be 1-100 letters, digits, _ - or .'),
    kind: z.enum(['nats', 'webhook'], { error: "must be 'nats' or 'webhook'" }),
    /** webhook: the https:// URL events are POSTed to; nats: the server(s), nats://host:port[,nats://…]. */
    url: z.string().min(1).max(2000),
    /** nats only: the subject events are published under (`<prefix>.<database>.<table>`); default `lance`. */
    subject_prefix: z.string().regex(SUBJECT_PREFIX, "must be NATS subject tokens such as 'lance' or 'acme.events'").optional(),
    /** Only these types (exact, or a prefix ending in `*`); empty or absent: every type. */
    types: z
      .array(z.string().regex(TYPE_PATTERN, "must be an event type such as 'lance.table.written' or a prefix such as 'lance.table.*'"))
      .max(100)
      .optional(),
    /** Only events on this namespace or below it (levels); absent: every namespace. Database-wide events never match one. */
    namespace_prefix: z.array(z.string().min(1).max(2000)).max(32).optional(),
    enabled: z.boolean().optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    if (s.kind === 'webhook' && !/^https?:\/\/[^\s]+$/i.test(s.url)) {
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'a webhook needs an https:// URL' });
    }
    if (s.kind === 'nats' && !s.url.split(',').every((u) => /^(nats|tls):\/\/[^\s,]+$/i.test(u.trim()))) {
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'a NATS sink needs nats://host:port (comma-separated for several servers)' });
    }
    if (s.kind === 'webhook' && s.subject_prefix !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['subject_prefix'], message: 'only a NATS sink has a subject prefix' });
    }
  });
export type EventSinkSpec = z.infer<typeof eventSinkSpec>;

/** EVENT_SINKS: a JSON array of fleet sinks; each problem is reported with its place. */
export function parseEventSinks(raw: string | undefined, problems: string[]): Array<EventSinkSpec & { secret?: string }> | undefined {
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push('EVENT_SINKS: must be a JSON array of sinks (docs/events.md)');
    return [];
  }
  if (!Array.isArray(parsed)) {
    problems.push('EVENT_SINKS: must be a JSON array of sinks (docs/events.md)');
    return [];
  }
  const out: Array<EventSinkSpec & { secret?: string }> = [];
  const names = new Set<string>();
  parsed.forEach((item, i) => {
    // A webhook's signing secret comes with a configured sink (the API makes its own).
    const { secret, ...spec } = (item ?? {}) as { secret?: unknown };
    const s = eventSinkSpec.safeParse(spec);
    if (!s.success) {
      const issues = s.error.issues.map((x) => `${x.path.join('.') || '(sink)'}: ${x.message}`);
      problems.push(`EVENT_SINKS[${i}]: ${issues.join('; ')}`);
      return;
    }
    if (names.has(s.data.name)) problems.push(`EVENT_SINKS[${i}]: name '${s.data.name}' is used twice`);
    names.add(s.data.name);
    if (s.data.kind === 'webhook' && (typeof secret !== 'string' || !WEBHOOK_SECRET.test(secret))) {
      problems.push(`EVENT_SINKS[${i}]: a webhook needs its signing 'secret': whsec_ and at least 24 random bytes in base64`);
      return;
    }
    out.push({ ...s.data, ...(typeof secret === 'string' ? { secret } : {}) });
  });
  return out;
}

/** Change events (docs/events.md): the dispatcher's pacing and delivery rules, and the fleet's configured sinks. */
export interface EventsConfig {
  /** How often this replica's dispatcher runs; 0: never (other replicas deliver). */
  dispatchIntervalMs: number;
  /** Events one sink is sent per round. */
  batchSize: number;
  /** A sink's lease: one replica delivers to a sink at a time; a lost replica's sinks are taken over after it. */
  leaseMs: number;
  /** Tries of one event before it is dead-lettered. */
  maxAttempts: number;
  /** Backoff between tries: base · 2^(attempt-1), at most max, with jitter. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** How long one delivery (a webhook's answer, a JetStream ack) may take. */
  deliveryTimeoutMs: number;
  /** How long a delivered event stays in the outbox. */
  retentionMs: number;
  /** Whether webhooks may target loopback, link-local and private addresses (off: refused, no SSRF through them). */
  allowPrivateTargets: boolean;
  /**
   * The fleet's sinks from EVENT_SINKS (kept in the catalog, brought in line with the config at start-up); undefined
   * when EVENT_SINKS is unset: the configured sinks in the catalog are left as they are (the CLI, a replica without it).
   */
  sinks?: Array<EventSinkSpec & { secret?: string }>;
}
