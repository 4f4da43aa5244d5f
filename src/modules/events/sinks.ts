import { createHmac, randomBytes } from 'node:crypto';
import * as http from 'node:http';
import * as https from 'node:https';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { CloudEvent, CLOUDEVENTS_JSON } from './cloud-event';
import type { SinkRow } from './event-sinks.repository';
import { guardedLookup } from './webhook-target';

/**
 * Delivery to one kind of sink. `send` delivers events in order and answers how many from the start are delivered
 * (all of them, or up to the first that failed, with why): the dispatcher moves the sink's cursor that far. Events
 * after a failed one may have been delivered as well; they are sent again later with the same id.
 */
export interface SendResult {
  delivered: number;
  error?: string;
}

/** A webhook signing secret as Standard Webhooks writes it: `whsec_` and 32 random bytes in base64. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * The Standard Webhooks signature (https://www.standardwebhooks.com, docs/events.md "Verifying a webhook"):
 * base64(HMAC-SHA256(key, `${id}.${timestamp}.${body}`)) with the key the secret's base64 after `whsec_`, sent as
 * `webhook-signature: v1,<signature>` beside `webhook-id` and `webhook-timestamp` (Unix seconds). A receiver
 * recomputes it, compares in constant time and refuses a timestamp too far from its clock (replays).
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The NATS subject token of a name: anything but letters, digits, `_`, `-` and `$` as %XX (UTF-8), so `.` `*` `>` never split or match. */
export const subjectToken = (s: string): string =>
  Buffer.from(s, 'utf8').reduce((out, b) => {
    const c = String.fromCharCode(b);
    return out + (/[A-Za-z0-9_$-]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`);
  }, '');

/** `<prefix>.<database>` for database-wide events, `<prefix>.<database>.<table or namespace id, levels joined by $>` otherwise. */
export function natsSubject(prefix: string, e: CloudEvent): string {
  const db = subjectToken(String(e.data.database ?? ''));
  const slash = e.subject.indexOf('/');
  return slash < 0 ? `${prefix}.${db}` : `${prefix}.${db}.${subjectToken(e.subject.slice(slash + 1))}`;
}

/**
 * The servers of a NATS sink's URL list, and the credentials in it (the client does not read them from the URL):
 * `nats://user:password@host:port` (user and password) or `nats://token@host:port` (a token).
 */
export function natsServers(url: string): { servers: string[]; user?: string; pass?: string; token?: string } {
  const out: { servers: string[]; user?: string; pass?: string; token?: string } = { servers: [] };
  for (const raw of url.split(',').map((s) => s.trim())) {
    const u = new URL(raw);
    if (u.username && u.password) Object.assign(out, { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) });
    else if (u.username) out.token = decodeURIComponent(u.username);
    out.servers.push(`${u.protocol}//${u.host}`);
  }
  return out;
}

export class WebhookSender {
  private readonly agents: { http: http.Agent; https: https.Agent };

  constructor(
    private readonly timeoutMs: number,
    allowPrivate: boolean,
  ) {
    const lookup = guardedLookup(allowPrivate);
    this.agents = { http: new http.Agent({ keepAlive: true, lookup }), https: new https.Agent({ keepAlive: true, lookup }) };
  }

  /** One POST per event, in order, stopping at the first failure (a non-2xx answer, a timeout, a refused target). */
  async send(sink: SinkRow, events: CloudEvent[]): Promise<SendResult> {
    const url = new URL(sink.target.url);
    for (let i = 0; i < events.length; i++) {
      const error = await this.post(sink, url, events[i]).then(
        () => undefined,
        (err: Error) => err.message,
      );
      if (error !== undefined) return { delivered: i, error };
    }
    return { delivered: events.length };
  }

  private post(sink: SinkRow, url: URL, e: CloudEvent): Promise<void> {
    const body = JSON.stringify(e);
    const timestamp = Math.floor(Date.now() / 1000);
    const secure = url.protocol === 'https:';
    return new Promise((resolve, reject) => {
      const req = (secure ? https : http).request(
        url,
        {
          method: 'POST',
          agent: secure ? this.agents.https : this.agents.http,
          timeout: this.timeoutMs,
          headers: {
            'content-type': CLOUDEVENTS_JSON,
            'content-length': Buffer.byteLength(body),
            'user-agent': 'lance-gateway-events',
            'webhook-id': e.id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signWebhook(sink.secret ?? '', e.id, timestamp, body),
          },
        },
        (res) => {
          res.resume();
          const status = res.statusCode ?? 0;
          // 3xx counts as a failure: redirects are not followed (a redirect could point anywhere).
          if (status >= 200 && status < 300) res.on('end', resolve);
          else reject(new Error(`webhook answered ${status}`));
        },
      );
      req.on('timeout', () => req.destroy(new Error(`webhook did not answer within ${this.timeoutMs} ms`)));
      req.on('error', (err) => reject(new Error(`webhook unreachable: ${err.message}`)));
      req.end(body);
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

/**
 * NATS JetStream: one connection per server list, kept and reconnecting. An event counts as delivered when the stream
 * acknowledged it; `Nats-Msg-Id` is the event id, so the stream drops a redelivery within its duplicate window.
 */
/** JetStream publishes in flight at once for one sink. */
const NATS_SLICE = 16;

export class NatsSender {
  private readonly connections = new Map<string, Promise<NatsConnection>>();

  constructor(private readonly timeoutMs: number) {}

  async send(sink: SinkRow, events: CloudEvent[]): Promise<SendResult> {
    let nc: NatsConnection;
    try {
      nc = await this.connection(sink.target.url);
    } catch (err) {
      return { delivered: 0, error: `NATS unreachable: ${(err as Error).message}` };
    }
    const js = jetstream(nc, { timeout: this.timeoutMs });
    const prefix = sink.target.subject_prefix ?? 'lance';
    // Published a slice at a time (the server stores them in the order sent, acknowledged one by one): a slice
    // pipelines the round trips without holding the event loop, which serves requests too, for a whole batch.
    for (let from = 0; from < events.length; from += NATS_SLICE) {
      const slice = events.slice(from, from + NATS_SLICE);
      const acks = await Promise.allSettled(
        slice.map((e) => js.publish(natsSubject(prefix, e), JSON.stringify(e), { msgID: e.id, timeout: this.timeoutMs })),
      );
      const failed = acks.findIndex((a) => a.status === 'rejected');
      if (failed >= 0) {
        const reason = (acks[failed] as PromiseRejectedResult).reason as Error;
        return { delivered: from + failed, error: `JetStream did not acknowledge: ${reason?.message ?? String(reason)}` };
      }
    }
    return { delivered: events.length };
  }

  private connection(url: string): Promise<NatsConnection> {
    let c = this.connections.get(url);
    if (!c) {
      c = connect({
        ...natsServers(url),
        timeout: this.timeoutMs,
        reconnect: true,
        maxReconnectAttempts: -1,
        name: 'lance-gateway-events',
      });
      this.connections.set(url, c);
      c.then(
        (nc) => void nc.closed().then(() => this.connections.get(url) === c && this.connections.delete(url)),
        () => this.connections.get(url) === c && this.connections.delete(url),
      );
    }
    return c;
  }

  async close(): Promise<void> {
    const all = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(all.map((c) => c.then((nc) => nc.close()).catch(() => undefined)));
  }
}
