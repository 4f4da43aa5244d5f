import type { OutboxEventRow } from '../outbox';

/** A change event as it is delivered: CloudEvents 1.0, structured JSON (docs/events.md, "The envelope"). */
export interface CloudEvent {
  specversion: '1.0';
  /** The outbox event's id: the same on every delivery of it (consumers de-duplicate on it). */
  id: string;
  source: string;
  type: string;
  subject: string;
  time: string;
  datacontenttype: 'application/json';
  /** The CloudEvents sequence extension: the outbox's order, zero-padded so it also sorts as text. */
  sequence: string;
  data: Record<string, unknown>;
}

export const CLOUDEVENTS_JSON = 'application/cloudevents+json; charset=utf-8';

export function toCloudEvent(e: OutboxEventRow): CloudEvent {
  return {
    specversion: '1.0',
    id: e.id,
    source: `/databases/${encodeURIComponent(e.databaseName)}`,
    type: e.type,
    subject: e.subject,
    time: new Date(e.createdAt).toISOString(),
    datacontenttype: 'application/json',
    sequence: e.seq.toString().padStart(20, '0'),
    data: e.data,
  };
}
