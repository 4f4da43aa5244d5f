// What the events feature offers the other features (test/unit/import-graph.test.ts: they import nothing else of it).
export * from './cloud-event';
export * from './event-dispatcher.service';
export * from './events.module';
export { signWebhook, natsSubject, subjectToken } from './sinks';
export { privateAddressProblem, webhookUrlProblem } from './webhook-target';
