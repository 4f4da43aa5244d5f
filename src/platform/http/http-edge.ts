import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from './errors';
import { rawErrorResponse, sendError } from './http-exception.filter';

/**
 * The HTTP edge: answers that Fastify and Node's HTTP parser would otherwise give in their own shape. Every one of
 * them carries the problem body of docs/rest-contract.md §7 with the integer `code` (rendered by
 * http-exception.filter.ts, the one place that turns errors into bodies).
 */

/** Longest path parameter (an `{id}` of many components); longer → 414. */
export const MAX_PARAM_LENGTH = 4096;

/**
 * How much of a body the gateway still reads after answering without it (too large, refused before it was read):
 * a client that writes its whole body before reading the answer then reads the answer instead of failing with
 * EPIPE / ECONNRESET on a closed socket. Past this, or after UNREAD_BODY_IDLE_MS without data, the connection is cut.
 */
export const UNREAD_BODY_DRAIN_BYTES = 16 * 1024 * 1024;
const UNREAD_BODY_IDLE_MS = 10_000;

/** How long a connection refused by the HTTP parser stays open for the client to read the answer. */
const CLIENT_ERROR_LINGER_MS = 2_000;

/**
 * Fastify's `frameworkErrors`: a URL it cannot decode, or a path parameter over MAX_PARAM_LENGTH. Fastify runs no
 * hooks for these requests (no request id header, no onResponse), so `onAnswer` is told of each answer instead.
 */
export function frameworkErrorHandler(onAnswer?: (method: string, status: number, code: string) => void) {
  return (err: Error & { code?: string }, req: FastifyRequest, reply: FastifyReply): void => {
    reply.header('x-request-id', req.id);
    let error: unknown = err;
    if (err.code === 'FST_ERR_BAD_URL')
      error = Errors.invalidInput('the request URL is not valid: a percent-encoded sequence is malformed');
    else if (err.code === 'FST_ERR_MAX_PARAM_LENGTH')
      error = Errors.uriTooLong(`a path parameter is longer than ${MAX_PARAM_LENGTH} characters`);
    // No hooks run for these requests, so the onSend drain does not either: the body is drained here (bounded), so
    // a client still writing it reads the answer instead of failing with EPIPE.
    drainUnreadBody(req.raw, reply);
    sendError(error, req, reply);
    onAnswer?.(req.method, reply.statusCode, err.code ?? 'unknown');
  };
}

/**
 * Fastify's `clientErrorHandler`: the request never reached Fastify because Node's HTTP parser refused it (headers
 * too large, bad chunking, Content-Length with Transfer-Encoding, a request that took too long, …). Answers with a
 * raw HTTP/1.1 response carrying the problem body and `Connection: close` (nothing after a parse error can be
 * trusted), no body to a HEAD request, and closes the connection after a short linger so the client can read it.
 */
export function clientErrorHandler(
  err: Error & { code?: string; rawPacket?: unknown },
  socket: Socket,
  onAnswer?: (status: number, code: string) => void,
): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const edge = socket as Socket & { [ANSWERED]?: true; _httpMessage?: { headersSent?: boolean } | null };
  // Node feeds whatever still arrives to the failed parser, which reports the same connection again: answer once.
  if (edge[ANSWERED]) return;
  edge[ANSWERED] = true;
  // As Node's own handler: nothing may be written once a response on this connection has started.
  if (socket.writable && !edge._httpMessage?.headersSent) {
    const answer = rawErrorResponse(err, randomUUID(), { head: isHeadRequest(Buffer.isBuffer(err.rawPacket) ? err.rawPacket : undefined) });
    onAnswer?.(answer.status, err.code ?? 'unknown');
    socket.end(answer.bytes);
    setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
  } else {
    socket.destroy();
  }
}
const ANSWERED = Symbol('lgw.clientErrorAnswered');

/**
 * Whether the request the parser refused is a HEAD request, from the bytes it was reading: the last request line in
 * them (a connection may carry earlier requests). When the request line is not among them (headers arriving in
 * several reads), it is taken as not HEAD. The target is matched as any bytes but CR/LF: a request line refused for
 * its target (raw bytes such as 0xA0, which read as latin1 is a white-space character) is still recognised.
 */
export function isHeadRequest(raw: Buffer | undefined): boolean {
  if (!raw || raw.length === 0) return false;
  const text = raw.toString('latin1');
  let method: string | undefined;
  for (const m of text.matchAll(/(?:^|\n)([A-Z]+) [^\r\n]+ HTTP\/\d\.\d\r?\n/g)) method = m[1];
  return method === 'HEAD';
}

/**
 * Which methods a path is served for, from the routes as registered (collected by an onRoute hook): an unmatched
 * request whose path exists with another method is a 405 with `Allow`, anything else a 404.
 */
export class RouteTable {
  private readonly routes: Array<{ method: string; pattern: RegExp }> = [];

  constructor(private readonly ignoreTrailingSlash: boolean) {}

  add(method: string | string[], url: string): void {
    for (const m of Array.isArray(method) ? method : [method]) this.routes.push({ method: m.toUpperCase(), pattern: toPattern(url) });
  }

  allowed(url: string): string[] {
    let p = url.split('?')[0];
    if (this.ignoreTrailingSlash && p.length > 1) p = p.replace(/\/+$/, '') || '/';
    const methods = new Set(this.routes.filter((r) => r.pattern.test(p)).map((r) => r.method));
    if (methods.has('GET')) methods.add('HEAD'); // Fastify answers HEAD for every GET route
    return [...methods].sort();
  }
}

/** A Fastify route path ('/v1/table/:id/stats', '/docs/*') as a regular expression over the raw request path. */
function toPattern(url: string): RegExp {
  let p = url;
  if (p.length > 1) p = p.replace(/\/+$/, '');
  // Parameters (':id', also inside a segment) match one segment, '*' anything; the rest is literal.
  const source = p
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}/?$`);
}

/**
 * Wires the edge into a Fastify instance (before its routes are registered): the route table for 405, the 404/405
 * decision for unmatched requests, and the bounded drain of bodies left unread by an answer.
 */
export function installHttpEdge(fastify: FastifyInstance, opts: { ignoreTrailingSlash: boolean }): void {
  const table = new RouteTable(opts.ignoreTrailingSlash);
  fastify.addHook('onRoute', (route) => table.add(route.method, route.url ?? route.path));

  // Unmatched requests reach the not-found handler (Nest's, which reports 404 through the one filter); a path served
  // with other methods is a 405 instead.
  // (Callback-style hooks: an async hook costs every request a promise.)
  fastify.addHook('onRequest', (req, _reply, done) => {
    if (!req.is404) return done();
    const allow = table.allowed(req.url);
    done(allow.length > 0 && !allow.includes(req.method) ? Errors.methodNotAllowed(req.method, allow) : undefined);
  });

  fastify.addHook('onSend', (req, reply, payload, done) => {
    drainUnreadBody(req.raw, reply);
    done(null, payload);
  });
}

/**
 * An answer given before the request body was read (413 by Content-Length, 415, 401 on an upload, …): the client
 * is most likely still writing. Fastify asks for `Connection: close` then, and closing a socket with unread data
 * makes the kernel reset the connection, so the client sees EPIPE / ECONNRESET instead of the answer. Instead the
 * rest of the body is read and discarded (up to UNREAD_BODY_DRAIN_BYTES), keeping the connection; past the bound the
 * connection is cut.
 *
 * A request that itself asked for `Connection: close` (or came as HTTP/1.0) still gets its connection closed after
 * the answer, which Node does at once (socket.destroySoon) — the same reset. For such a connection only the sending
 * side is ended when the answer is out (the client reads the answer and the end of the stream), and the socket is
 * closed once the body has been drained, cut or abandoned.
 */
function drainUnreadBody(raw: IncomingMessage, reply: FastifyReply): void {
  if (raw.complete || raw.readableEnded || raw.destroyed || (raw as { [DRAINING]?: true })[DRAINING]) return;
  (raw as { [DRAINING]?: true })[DRAINING] = true;
  // Fastify's own `Connection: close` goes, unless the client asked for it itself (then Node would close anyway,
  // and the answer says so).
  if (reply.raw.shouldKeepAlive && String(reply.getHeader('connection') ?? '').toLowerCase() === 'close') reply.removeHeader('connection');
  const socket = raw.socket as Socket | null;
  let closeWhenDrained = false;
  if (socket) {
    // Node's http server ends a connection whose answer was its last with socket.destroySoon(); half-close instead.
    (socket as { destroySoon?: () => void }).destroySoon = () => {
      closeWhenDrained = true;
      if (socket.writable) socket.end();
    };
  }
  let seen = 0;
  const cut = () => raw.socket?.destroy();
  const idle = setTimeout(cut, UNREAD_BODY_IDLE_MS).unref();
  const done = () => {
    clearTimeout(idle);
    if (!socket) return;
    delete (socket as { destroySoon?: () => void }).destroySoon; // back to net.Socket's own
    if (closeWhenDrained) (socket as unknown as { destroySoon(): void }).destroySoon();
  };
  raw.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > UNREAD_BODY_DRAIN_BYTES) {
      done();
      cut();
    } else idle.refresh();
  });
  raw.once('end', done);
  raw.once('close', done);
  raw.resume();
}
const DRAINING = Symbol('lgw.draining');
