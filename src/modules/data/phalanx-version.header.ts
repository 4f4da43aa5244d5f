import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PHALANX_VERSION } from './dataplane.constants';

/**
 * Advertises the remote-client feature level this gateway implements on every REST-contract (`/v1/`) answer, from
 * a Fastify onRequest hook rather than a Nest interceptor: an interceptor layer costs every request an async
 * resource and an Observable pipeline, a hook one function call.
 */
@Injectable()
export class PhalanxVersionHeader implements OnModuleInit {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter;
    if (!adapter) return; // application context (CLI): no HTTP
    const fastify = adapter.getInstance() as FastifyInstance;
    fastify.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
      if (req.url.includes('/v1/') && !req.url.startsWith('/admin/')) reply.header('phalanx-version', PHALANX_VERSION);
      done();
    });
  }
}
