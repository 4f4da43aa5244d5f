import { Global, Module } from '@nestjs/common';
import { OutboxRepository } from './outbox.repository';

/** The change-event outbox (docs/events.md): written by the audit trail, read and trimmed by the events dispatcher. */
@Global()
@Module({ providers: [OutboxRepository], exports: [OutboxRepository] })
export class OutboxModule {}
