import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Refusal } from '../../platform/http/errors';
import { REFUSAL } from '../../platform/http/http-exception.filter';
import { AuditRepository } from './audit.repository';
import { sanitizeText } from './audit-sanitize';

/** How often refused requests are written, and how many distinct ones one batch holds at most. */
const FLUSH_MS = 1_000;
const MAX_DISTINCT = 1_000;

interface Pending {
  refusal: Refusal;
  status: number;
  requestId: string;
  count: number;
  first: Date;
}

/**
 * Records every refused request in its database's audit trail (action `request.refused`): who, which operation,
 * which object and why, and the status the caller got (a 404 when the object was hidden from it). Refusals are
 * gathered in memory and written once a second, identical ones (same credential, operation, object, reason) as one
 * record with a `count`: a client hammering a refused route cannot turn each request into a catalog write. A
 * replica that dies loses at most the last second's records.
 */
@Injectable()
export class AuditRefusals implements OnModuleInit, OnApplicationShutdown {
  private readonly log = new Logger('AuditRefusals');
  private pending = new Map<string, Pending>();
  private dropped = 0;
  private timer?: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly repo: AuditRepository,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter?.getInstance() as FastifyInstance | undefined;
    if (!fastify) return; // application context (CLI): no HTTP
    fastify.addHook('onResponse', (req: FastifyRequest & { [REFUSAL]?: Refusal }, reply: FastifyReply, done: () => void) => {
      const refusal = req[REFUSAL];
      if (refusal) this.add(refusal, reply.statusCode, String(req.id));
      done();
    });
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private add(refusal: Refusal, status: number, requestId: string): void {
    const key = [refusal.databaseId, refusal.actor, refusal.operation, refusal.target, refusal.reason, status].join('\u0000');
    const seen = this.pending.get(key);
    if (seen) seen.count++;
    else if (this.pending.size < MAX_DISTINCT) this.pending.set(key, { refusal, status, requestId, count: 1, first: new Date() });
    else this.dropped++;
  }

  /** Writes what has gathered (one flush at a time); a failure is logged, not retried: the trail is not worth an outage. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0 && this.dropped === 0) return;
      const batch = [...this.pending.values()];
      const dropped = this.dropped;
      this.pending = new Map();
      this.dropped = 0;
      if (dropped > 0) this.log.warn(`${dropped} refused requests beyond ${MAX_DISTINCT} distinct ones in a second were not recorded`);
      try {
        await this.repo.insertMany(
          batch.map((p) => ({
            databaseId: p.refusal.databaseId,
            databaseName: sanitizeText(p.refusal.databaseName),
            actor: sanitizeText(p.refusal.actor),
            action: 'request.refused',
            target: sanitizeText(p.refusal.target),
            details: {
              operation: p.refusal.operation,
              reason: sanitizeText(p.refusal.reason),
              status: p.status,
              count: p.count,
              first_at: p.first.toISOString(),
            },
            requestId: sanitizeText(p.requestId),
          })),
        );
      } catch (err) {
        this.log.warn(`could not record ${batch.length} refused requests: ${(err as Error).message}`);
      }
    });
    return this.flushing;
  }
}
