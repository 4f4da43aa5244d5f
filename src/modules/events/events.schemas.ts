import { z } from 'zod';
import { eventSinkSpec, SINK_NAME } from '../../platform/config/events-config';

/** POST /admin/v1/event-sinks and /admin/v1/databases/{name}/event-sinks (docs/events.md). */
export const CreateEventSinkBody = eventSinkSpec.meta({ id: 'CreateEventSinkBody' });

export const UpdateEventSinkBody = z
  .object({
    name: z.string().regex(SINK_NAME, 'must be 1-100 letters, digits, _ - or .').optional(),
    url: z.string().min(1).max(2000).optional(),
    subject_prefix: z.string().optional(),
    types: z.array(z.string()).max(100).optional(),
    namespace_prefix: z.array(z.string().min(1).max(2000)).max(32).optional(),
    enabled: z.boolean().optional(),
    rotate_secret: z.boolean().optional().describe("a webhook's new signing secret, answered once (the old one stops at once)"),
  })
  .strict()
  .meta({ id: 'UpdateEventSinkBody' });

export const DeadLetterIdsBody = z
  .object({ ids: z.array(z.uuid()).max(1000).optional().describe('the dead letters to act on; absent: all of the sink') })
  .strict()
  .meta({ id: 'DeadLetterIdsBody' });

export const EventSink = z
  .object({
    id: z.string(),
    name: z.string(),
    database: z.string().nullable().describe("the database whose events it receives; null: the fleet's (every database's)"),
    kind: z.enum(['nats', 'webhook']),
    url: z.string().describe('the webhook URL or the NATS servers (credentials in it shown as ***)'),
    subject_prefix: z.string().optional(),
    types: z.array(z.string()),
    namespace_prefix: z.array(z.string()),
    enabled: z.boolean(),
    managed_by: z.enum(['api', 'config']).describe('config: from EVENT_SINKS (changed there, not through the API)'),
    state: z
      .enum(['active', 'retrying', 'disabled'])
      .describe('active: delivering; retrying: its next event failed and is tried again at next_attempt_at; disabled'),
    cursor: z.string().describe('every event up to this outbox sequence number is delivered or dead-lettered'),
    attempts: z.number().int().describe('failed tries of the event after the cursor'),
    next_attempt_at: z.string().nullable(),
    last_error: z.string().nullable(),
    last_delivered_at: z.string().nullable(),
    delivered: z.number().int(),
    failed: z.number().int(),
    dead_letters: z.number().int(),
    created_at: z.string(),
    secret: z.string().optional().describe("a webhook's signing secret: only in the answer that made or rotated it"),
  })
  .meta({ id: 'EventSink' });
export type EventSink = z.infer<typeof EventSink>;

export const ListEventSinksResponse = z.object({ sinks: z.array(EventSink) }).meta({ id: 'ListEventSinksResponse' });

export const DeadLetter = z
  .object({
    id: z.string(),
    event_id: z.string(),
    sequence: z.string(),
    state: z.enum(['dead', 'replay']).describe('replay: asked to be sent again (the dispatcher sends it before new events)'),
    attempts: z.number().int(),
    last_error: z.string().nullable(),
    created_at: z.string(),
    event: z.record(z.string(), z.unknown()).describe('the CloudEvent as it was sent'),
  })
  .meta({ id: 'DeadLetter' });

export const ListDeadLettersQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  after: z
    .string()
    .regex(/^\d{1,19}$/, 'must be a sequence number')
    .optional()
    .describe('the `sequence` of the last dead letter of the previous page'),
});

export const ListDeadLettersResponse = z
  .object({ dead_letters: z.array(DeadLetter), next: z.string().optional().describe('`after` of the next page, when there is one') })
  .meta({ id: 'ListDeadLettersResponse' });

export const DeadLetterCount = z.object({ count: z.number().int() }).meta({ id: 'DeadLetterCount' });
