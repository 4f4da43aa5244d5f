import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { Errors } from '../../platform/http/errors';
import { bodyDigestOf, commitGateOf } from '../../platform/http/body-digest';
import { recordRequestPart } from '../../platform/http/validation/request-parts';
import { carriedClaimOf, type CarriedClaim } from '../idempotency';

/**
 * The raw request body of an Arrow route: never parsed or buffered by the framework (see app.ts). If the service
 * stops reading early (a bad body, over the limit), whatever the client still sends is discarded once the answer is
 * out, so the client reads the error instead of stalling on a full socket.
 */
export function arrowBody(req: FastifyRequest): AsyncIterable<Buffer> & {
  contentLength?: number;
  settled(maxBytes: number): Promise<void>;
  beforeCommit?: () => Promise<void>;
  claim?: CarriedClaim;
} {
  if (req.body !== undefined && req.body !== null) {
    throw Errors.unsupportedMediaType(`expected an Arrow IPC stream body (application/vnd.apache.arrow.stream)`);
  }
  const raw = req.raw;
  // A keyed write's claim: carried by the write's first catalog statement, else made once the body starts to arrive.
  const claim = carriedClaimOf(req);
  const declared = raw.headers['transfer-encoding'] === undefined ? Number(raw.headers['content-length']) : NaN;
  return {
    contentLength: Number.isSafeInteger(declared) && declared >= 0 ? declared : undefined,
    beforeCommit: commitGateOf(req),
    claim,
    settled: (maxBytes: number) =>
      new Promise<void>((resolve) => {
        if (raw.readableEnded || raw.destroyed) return resolve();
        let seen = 0;
        const onData = (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > maxBytes) done();
        };
        const done = () => {
          raw.off('data', onData).off('end', done).off('close', done);
          resolve();
        };
        raw.on('data', onData).once('end', done).once('close', done);
      }),
    [Symbol.asyncIterator]: () => {
      const it = raw.iterator({ destroyOnReturn: false });
      const digest = bodyDigestOf(req);
      claim?.start();
      return {
        next: digest
          ? async () => {
              const r = await it.next();
              if (!r.done) digest.update(r.value as Buffer);
              return r;
            }
          : () => it.next(),
        return: async (value?: unknown) => {
          const r = await it.return!(value);
          if (!raw.readableEnded) raw.resume();
          return r;
        },
      } as AsyncIterator<Buffer>;
    },
  };
}

const arrowStream = createParamDecorator((_: unknown, ctx: ExecutionContext) => arrowBody(ctx.switchToHttp().getRequest<FastifyRequest>()));

/** The handler parameter is the request body as a stream of Arrow IPC bytes; `what` (what it holds) is documented. */
export const ArrowStream =
  (what: string): ParameterDecorator =>
  (target, key, index) => {
    recordRequestPart(target, key, { arrowStream: what });
    arrowStream()(target, key, index);
  };
