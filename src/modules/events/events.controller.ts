import { Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { z } from 'zod';
import { Operation, OPERATOR_ERRORS } from '../../platform/http/operation.decorator';
import { ValidBody, ValidQuery } from '../../platform/http/validation/zod-validation.pipe';
import { EventSinksService } from './event-sinks.service';
import {
  CreateEventSinkBody,
  DeadLetterCount,
  DeadLetterIdsBody,
  EventSink,
  ListDeadLettersQuery,
  ListDeadLettersResponse,
  ListEventSinksResponse,
  UpdateEventSinkBody,
} from './events.schemas';

const NAME = { name: { description: 'Database name.' } };
const ID = { id: { description: 'Event sink id (as created / listed).' } };
const SINK_NOTE =
  'A sink receives the events committed after it was made, as CloudEvents (docs/events.md). A webhook URL must be https:// ' +
  'and public (loopback, link-local and private addresses are refused unless EVENTS_ALLOW_PRIVATE_TARGETS); its signing ' +
  'secret is in this answer only.';

/** The operator's event sinks and their dead letters (docs/events.md); the operator key only. */
@Controller('admin/v1')
export class EventsController {
  constructor(private readonly sinks: EventSinksService) {}

  @Post('event-sinks')
  @Operation({
    operationId: 'CreateFleetEventSink',
    summary: "Create a sink for every database's change events",
    description: SINK_NOTE,
    tag: 'Events',
    access: 'operator',
    responses: { 201: { description: 'Created', schema: EventSink } },
    errors: [400, 401, 403, 409, 503, '5XX'],
  })
  createFleet(@ValidBody(CreateEventSinkBody) body: z.output<typeof CreateEventSinkBody>) {
    return this.sinks.create(null, body);
  }

  @Get('event-sinks')
  @Operation({
    operationId: 'ListFleetEventSinks',
    summary: "The fleet's event sinks, with their delivery state",
    tag: 'Events',
    access: 'operator',
    responses: { 200: { description: 'The sinks', schema: ListEventSinksResponse } },
    errors: [401, 403, 503, '5XX'],
  })
  listFleet() {
    return this.sinks.list(null);
  }

  @Post('databases/:name/event-sinks')
  @Operation({
    operationId: 'CreateDatabaseEventSink',
    summary: "Create a sink for one database's change events",
    description: SINK_NOTE,
    tag: 'Events',
    access: 'operator',
    pathParams: NAME,
    responses: { 201: { description: 'Created', schema: EventSink } },
    errors: OPERATOR_ERRORS,
  })
  createForDatabase(@Param('name') name: string, @ValidBody(CreateEventSinkBody) body: z.output<typeof CreateEventSinkBody>) {
    return this.sinks.create(name, body);
  }

  @Get('databases/:name/event-sinks')
  @Operation({
    operationId: 'ListDatabaseEventSinks',
    summary: "A database's event sinks, with their delivery state",
    tag: 'Events',
    access: 'operator',
    pathParams: NAME,
    responses: { 200: { description: 'The sinks', schema: ListEventSinksResponse } },
    errors: OPERATOR_ERRORS,
  })
  listForDatabase(@Param('name') name: string) {
    return this.sinks.list(name);
  }

  @Get('event-sinks/:id')
  @Operation({
    operationId: 'GetEventSink',
    summary: 'An event sink and its delivery state',
    tag: 'Events',
    access: 'operator',
    pathParams: ID,
    responses: { 200: { description: 'The sink', schema: EventSink } },
    errors: OPERATOR_ERRORS,
  })
  get(@Param('id') id: string) {
    return this.sinks.get(id);
  }

  @Patch('event-sinks/:id')
  @Operation({
    operationId: 'UpdateEventSink',
    summary: "Change an event sink (its target, filters, enabled), or rotate a webhook's signing secret",
    description: 'A sink from EVENT_SINKS is changed there (409 here). A rotated secret is in this answer only.',
    tag: 'Events',
    access: 'operator',
    pathParams: ID,
    responses: { 200: { description: 'The sink', schema: EventSink } },
    errors: OPERATOR_ERRORS,
  })
  update(@Param('id') id: string, @ValidBody(UpdateEventSinkBody) body: z.output<typeof UpdateEventSinkBody>) {
    return this.sinks.update(id, body);
  }

  @Delete('event-sinks/:id')
  @HttpCode(204)
  @Operation({
    operationId: 'DeleteEventSink',
    summary: 'Delete an event sink (and its dead letters)',
    tag: 'Events',
    access: 'operator',
    pathParams: ID,
    responses: { 204: { description: 'Deleted' } },
    errors: OPERATOR_ERRORS,
  })
  async delete(@Param('id') id: string): Promise<void> {
    await this.sinks.delete(id);
  }

  @Get('event-sinks/:id/dead-letters')
  @Operation({
    operationId: 'ListEventDeadLetters',
    summary: 'Events a sink gave up on after EVENTS_MAX_ATTEMPTS tries, in outbox order',
    tag: 'Events',
    access: 'operator',
    pathParams: ID,
    responses: { 200: { description: 'A page of dead letters', schema: ListDeadLettersResponse } },
    errors: OPERATOR_ERRORS,
  })
  deadLetters(@Param('id') id: string, @ValidQuery(ListDeadLettersQuery) q: z.output<typeof ListDeadLettersQuery>) {
    return this.sinks.deadLetters(id, q.limit, q.after);
  }

  @Post('event-sinks/:id/dead-letters/replay')
  @HttpCode(200)
  @Operation({
    operationId: 'ReplayEventDeadLetters',
    summary: 'Send dead letters again (some, or all of the sink)',
    description: 'The dispatcher sends them before new events; one that fails again is dead again.',
    tag: 'Events',
    access: 'operator',
    pathParams: ID,
    responses: { 200: { description: 'How many were marked for replay', schema: DeadLetterCount } },
    errors: OPERATOR_ERRORS,
  })
  replay(@Param('id') id: string, @ValidBody(DeadLetterIdsBody) body: z.output<typeof DeadLetterIdsBody>) {
    return this.sinks.replay(id, body.ids);
  }

  @Post('event-sinks/:id/dead-letters/discard')
  @HttpCode(200)
  @Operation({
    operationId: 'DiscardEventDeadLetters',
    summary: 'Delete dead letters (some, or all of the sink)',
    tag: 'Events',
    access: 'operator',
    pathParams: ID,
    responses: { 200: { description: 'How many were deleted', schema: DeadLetterCount } },
    errors: OPERATOR_ERRORS,
  })
  discard(@Param('id') id: string, @ValidBody(DeadLetterIdsBody) body: z.output<typeof DeadLetterIdsBody>) {
    return this.sinks.discard(id, body.ids);
  }
}
