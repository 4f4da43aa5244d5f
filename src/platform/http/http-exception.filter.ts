import { STATUS_CODES } from 'node:http';
import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { dataExceptionMessage } from '../db/prisma-errors';
import { ApiError, codeForStatus, ErrorCode, errorBody } from './errors';

const log = new Logger('Errors');

/**
 * Failures that mean "the catalog database is unreachable right now": answered 503, never 500. Recognised by
 * Prisma's connection error codes, Postgres SQLSTATEs of connection loss/shutdown/overload (class 08, 57P01-57P03,
 * 53300, 55000 "not accepting connections") and socket errors, however the driver adapter wraps them.
 */
const UNAVAILABLE =
  /PrismaClientInitializationError|\bP10(01|02|17)\b|\bP2024\b|Code: `(08\w{3}|57P0[1-3]|53300)`|not currently accepting connections|too many clients|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EPIPE|Connection terminated|connection timeout|timeout exceeded when trying to connect|terminating connection|the database system is (starting up|shutting down)|Can't reach database|DatabaseNotReachable|ConnectionClosed|Client has encountered a connection error|Query read timeout/i;

function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string; meta?: unknown };
  return UNAVAILABLE.test(`${e?.name ?? ''} ${e?.code ?? ''} ${e?.message ?? ''} ${JSON.stringify(e?.meta ?? '')}`);
}

/**
 * Fastify's refusals whose own message does not say what to do, by status and Fastify's message (Nest hands some of
 * them over as an HttpException with only these two left).
 */
const FRAMEWORK_MESSAGES: Record<string, string> = {
  '415 Unsupported Media Type':
    'unsupported Content-Type: send application/json (the Arrow data routes take application/vnd.apache.arrow.stream)',
  '413 Request body is too large': 'the request body is larger than the gateway accepts (BODY_LIMIT_BYTES for JSON bodies)',
};
const frameworkMessage = (status: number, message: string) => FRAMEWORK_MESSAGES[`${status} ${message}`] ?? message;

interface Rendered {
  status: number;
  code: ErrorCode;
  message: string;
  headers: Record<string, string>;
}

/** Turns anything thrown while serving a request into the docs/rest-contract.md §7 status, code and message. */
export function renderError(err: unknown, requestId?: string): Rendered {
  if (err instanceof ApiError) return { status: err.status, code: err.code, message: err.message, headers: err.headers };
  if (err instanceof HttpException) {
    const status = err.getStatus();
    const res = err.getResponse();
    const message =
      typeof res === 'string'
        ? res
        : Array.isArray((res as { message?: unknown }).message)
          ? (res as { message: string[] }).message.join('; ')
          : String((res as { message?: unknown }).message ?? err.message);
    return { status, code: codeForStatus(status), message: frameworkMessage(status, message), headers: {} };
  }
  const fastifyStatus = (err as { statusCode?: number })?.statusCode;
  if (typeof fastifyStatus === 'number' && fastifyStatus >= 400 && fastifyStatus < 500) {
    const message = frameworkMessage(fastifyStatus, (err as Error).message);
    return { status: fastifyStatus, code: codeForStatus(fastifyStatus), message, headers: {} };
  }
  // Postgres class 22 (a value its types refuse, e.g. NUL in text): the caller's bad input, never a 500.
  const dataError = dataExceptionMessage(err);
  if (dataError) return { status: 400, code: ErrorCode.InvalidInput, message: dataError, headers: {} };
  if (isDatabaseUnavailable(err)) {
    log.warn(`catalog database unavailable: ${(err as Error)?.message}`);
    return {
      status: 503,
      code: ErrorCode.ServiceUnavailable,
      message: 'catalog database unavailable, retry later',
      headers: { 'Retry-After': '1' },
    };
  }
  log.error(`request ${requestId ?? '-'}: ${(err as Error)?.stack ?? String(err)}`);
  return { status: 500, code: ErrorCode.Internal, message: 'internal error', headers: {} };
}

/** Where a refused request's reason waits for the response hooks (the audit trail records it once answered). */
export const REFUSAL = Symbol('refusal');

export function sendError(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  if (err instanceof ApiError && err.refusal) (request as FastifyRequest & { [REFUSAL]?: unknown })[REFUSAL] = err.refusal;
  const r = renderError(err, String(request.id));
  if (reply.sent) return;
  reply
    .status(r.status)
    .headers(r.headers)
    .type('application/json')
    .send(errorBody(r.status, r.code, r.message, String(request.id)));
}

/**
 * What Node's HTTP parser refused (reported to Fastify's clientErrorHandler, before any request exists): status and
 * message by the parser's error code.
 */
function renderClientError(err: { code?: string; message?: string }): { status: number; message: string } {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, message: 'the request was not received completely in time' };
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: 'the request headers are too large' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, message: 'the chunk extensions of the request body are too large' };
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return { status: 400, message: 'a request must not carry both Content-Length and Transfer-Encoding' };
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return /content-length/i.test(err.message ?? '')
        ? { status: 400, message: 'a request must not carry both Content-Length and Transfer-Encoding' }
        : { status: 400, message: 'the Transfer-Encoding of the request is not valid (only chunked is accepted)' };
    case 'HPE_INVALID_CHUNK_SIZE':
    case 'HPE_STRICT':
      return { status: 400, message: 'the chunked request body is malformed' };
    case 'HPE_INVALID_CONTENT_LENGTH':
      return { status: 400, message: 'the Content-Length header is not valid' };
    default:
      return { status: 400, message: `the request is not valid HTTP/1.1 (${err.code ?? 'parse error'})` };
  }
}

/**
 * A complete raw HTTP/1.1 answer with the problem body, for connections refused before Fastify saw a request. It
 * closes the connection; a HEAD request gets the headers only.
 */
export function rawErrorResponse(
  err: { code?: string; message?: string },
  instance: string,
  opts: { head: boolean },
): { status: number; bytes: Buffer } {
  const { status, message } = renderClientError(err);
  const body = Buffer.from(JSON.stringify(errorBody(status, codeForStatus(status), message, instance)), 'utf8');
  const head =
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${body.length}\r\n` +
    `X-Request-Id: ${instance}\r\n` +
    'Connection: close\r\n\r\n';
  return { status, bytes: opts.head ? Buffer.from(head, 'latin1') : Buffer.concat([Buffer.from(head, 'latin1'), body]) };
}

/** The one place where errors become response bodies (also installed as Fastify's own error handler). */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    sendError(exception, ctx.getRequest<FastifyRequest>(), ctx.getResponse<FastifyReply>());
  }
}
