import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { AckPolicy, DeliverPolicy, jetstreamManager, jetstream } from '@nats-io/jetstream';
import { Webhook } from 'standardwebhooks';

/** A change event as delivered (CloudEvents structured JSON). */
export interface DeliveredEvent {
  specversion: string;
  id: string;
  source: string;
  type: string;
  subject: string;
  time: string;
  datacontenttype: string;
  sequence: string;
  data: Record<string, any>;
}

/**
 * A webhook receiver on loopback: keeps what it was sent (body, headers), and answers `status` (200 by default; set
 * it to 503 to play a sink that is down), or holds a request without answering while `hold` says so.
 */
export async function webhookReceiver(): Promise<{
  url: string;
  received: Array<{ event: DeliveredEvent; headers: http.IncomingHttpHeaders; raw: string }>;
  status: number;
  hold: (e: DeliveredEvent) => boolean;
  close(): Promise<void>;
}> {
  const state = {
    url: '',
    received: [] as Array<{ event: DeliveredEvent; headers: http.IncomingHttpHeaders; raw: string }>,
    status: 200,
    hold: (_e: DeliveredEvent) => false,
    close: async () => undefined as void,
  };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const event = JSON.parse(raw) as DeliveredEvent;
      if (state.hold(event)) return; // never answered (the sender's socket stays open)
      if (state.status >= 200 && state.status < 300) state.received.push({ event, headers: req.headers, raw });
      res.writeHead(state.status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  state.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return state;
}

/** Whether a webhook delivery's Standard Webhooks signature verifies with `secret` (the standardwebhooks package). */
export function verifies(secret: string, d: { headers: http.IncomingHttpHeaders; raw: string }): boolean {
  try {
    new Webhook(secret).verify(d.raw, {
      'webhook-id': String(d.headers['webhook-id']),
      'webhook-timestamp': String(d.headers['webhook-timestamp']),
      'webhook-signature': String(d.headers['webhook-signature']),
    });
    return true;
  } catch {
    return false;
  }
}

export const NATS_URL = process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

/** A JetStream stream of its own (subjects `<prefix>.>`) with a consumer that reads everything stored in it. */
export async function jetStreamConsumer(
  prefix: string,
  options: { servers: string[]; user?: string; pass?: string } = { servers: [NATS_URL] },
): Promise<{
  nc: NatsConnection;
  /** Every message in the stream now, in stream order, with its subject. */
  read(): Promise<Array<{ subject: string; event: DeliveredEvent }>>;
  deleteStream(): Promise<void>;
  createStream(): Promise<void>;
  close(): Promise<void>;
}> {
  const nc = await connect({ ...options, timeout: 2000 });
  const jsm = await jetstreamManager(nc);
  const stream = prefix.toUpperCase();
  const createStream = async () => {
    await jsm.streams.add({ name: stream, subjects: [`${prefix}.>`] });
  };
  await createStream();
  return {
    nc,
    createStream,
    async deleteStream() {
      await jsm.streams.delete(stream).catch(() => undefined);
    },
    async read() {
      const name = `reader_${Math.random().toString(36).slice(2)}`;
      await jsm.consumers.add(stream, { name, ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All });
      const consumer = await jetstream(nc).consumers.get(stream, name);
      const info = await jsm.streams.info(stream);
      const out: Array<{ subject: string; event: DeliveredEvent }> = [];
      const total = info.state.messages;
      while (out.length < total) {
        const batch = await consumer.fetch({ max_messages: Math.min(256, total - out.length), expires: 2000 });
        let got = 0;
        for await (const m of batch) {
          out.push({ subject: m.subject, event: m.json<DeliveredEvent>() });
          got++;
        }
        if (got === 0) break;
      }
      await jsm.consumers.delete(stream, name).catch(() => undefined);
      return out;
    },
    async close() {
      await jsm.streams.delete(stream).catch(() => undefined);
      await nc.close();
    },
  };
}
