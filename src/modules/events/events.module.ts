import { Module } from '@nestjs/common';
import { PendingModule } from '../../platform/cluster/pending.module';
import { TenancyModule } from '../identity';
import { EventDispatcher } from './event-dispatcher.service';
import { EventSinksRepository } from './event-sinks.repository';
import { EventSinksService } from './event-sinks.service';
import { EventsController } from './events.controller';

/** Change events (docs/events.md): the sinks, their operator API, and the outbox's dispatcher on every replica. */
@Module({
  imports: [TenancyModule, PendingModule],
  controllers: [EventsController],
  providers: [EventSinksRepository, EventSinksService, EventDispatcher],
  exports: [EventDispatcher],
})
export class EventsModule {}
