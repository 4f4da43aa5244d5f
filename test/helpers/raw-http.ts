import * as net from 'node:net';

/**
 * HTTP/1.1 over a bare TCP socket, for tests that must send bytes no HTTP client would (malformed request lines,
 * contradictory framing, NUL in headers, lone surrogates in paths) and see exactly what comes back — including bytes
 * after the head of an answer to HEAD, which a client library would silently drop.
 */

export interface RawResponse {
  status: number;
  /** Header names in lower case; repeated headers joined with ', '. */
  headers: Record<string, string>;
  body: Buffer;
  /** The answer to a HEAD request: bytes that followed its head (there must be none). */
  bytesAfterHead?: number;
}

export interface RawExchange {
  responses: RawResponse[];
  /** Everything the server sent. */
  received: Buffer;
  /**
   * How it ended: `answered` (a complete answer to the last request), `closed` (the server closed the connection),
   * `timeout` (nothing more within the bound: a hang when an answer was due), `client-closed` (the test closed it
   * early on purpose).
   */
  outcome: 'answered' | 'closed' | 'timeout' | 'client-closed';
  /** A socket error (ECONNRESET, EPIPE, ECONNREFUSED …), if any. */
  error?: string;
  /** true when the error happened while the request was still being written. */
  errorWhileWriting?: boolean;
  /** Bytes that could not be parsed as HTTP answers (left over at the end). */
  unparsed: number;
}

export type RawStep = Buffer | string | { pauseMs: number };

export interface RawOptions {
  /** Bound on the whole exchange after the last byte is written. */
  timeoutMs: number;
  /** The requests' methods, in order (HEAD answers have no body). Default: one GET. */
  methods?: string[];
  /** Half-close the connection after writing (a truncated request: the server sees the end of the stream). */
  halfClose?: boolean;
  /** Close the connection this long after writing, whether or not anything came back (a client that gives up). */
  closeAfterMs?: number;
  /** After the head of a HEAD answer, how long to wait for stray body bytes before calling it answered. */
  headGraceMs?: number;
}

interface Parsed {
  responses: RawResponse[];
  /** Offset just after the last complete answer. */
  consumed: number;
}

function parseHead(buf: Buffer, from: number): { status: number; headers: Record<string, string>; bodyStart: number } | undefined {
  const end = buf.indexOf('\r\n\r\n', from);
  if (end < 0) return undefined;
  const lines = buf.subarray(from, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/\d\.\d (\d{3})/.exec(lines[0]);
  if (!m) return { status: -1, headers: {}, bodyStart: end + 4 };
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const k = line.slice(0, i).trim().toLowerCase();
    const v = line.slice(i + 1).trim();
    headers[k] = k in headers ? `${headers[k]}, ${v}` : v;
  }
  return { status: Number(m[1]), headers, bodyStart: end + 4 };
}

/** Decodes a chunked body starting at `at`; undefined until the terminating chunk has arrived. */
function dechunk(buf: Buffer, at: number): { body: Buffer; end: number } | undefined {
  const parts: Buffer[] = [];
  let p = at;
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', p);
    if (lineEnd < 0) return undefined;
    const size = parseInt(buf.subarray(p, lineEnd).toString('latin1').split(';')[0].trim(), 16);
    if (!Number.isFinite(size)) return { body: Buffer.concat(parts), end: buf.length }; // not chunked after all
    if (size === 0) {
      const trailerEnd = buf.indexOf('\r\n\r\n', lineEnd);
      // No trailers: "0\r\n\r\n".
      if (buf.subarray(lineEnd, lineEnd + 4).toString('latin1') === '\r\n\r\n') return { body: Buffer.concat(parts), end: lineEnd + 4 };
      if (trailerEnd < 0) return undefined;
      return { body: Buffer.concat(parts), end: trailerEnd + 4 };
    }
    if (buf.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
    p = lineEnd + 2 + size + 2;
  }
}

/**
 * Parses the answers in `buf`. `methods[i]` is the method of the i-th request (for HEAD). With `closed`, an answer
 * without a length runs to the end of the stream.
 */
export function parseResponses(buf: Buffer, methods: string[], closed: boolean): Parsed {
  const responses: RawResponse[] = [];
  let at = 0;
  let reqIndex = 0;
  while (at < buf.length) {
    const head = parseHead(buf, at);
    if (!head) break;
    if (head.status < 0) break;
    const method = (methods[reqIndex] ?? methods[methods.length - 1] ?? 'GET').toUpperCase();
    if (head.status >= 100 && head.status < 200) {
      at = head.bodyStart; // interim answer (100 Continue): the real one follows
      continue;
    }
    if (method === 'HEAD') {
      // Nothing may follow the head of an answer to HEAD, whatever its Content-Length says. Whatever does follow
      // (before the next answer, if pipelined) is counted.
      const next = buf.indexOf('HTTP/1.', head.bodyStart);
      const stray = (next < 0 ? buf.length : next) - head.bodyStart;
      responses.push({ status: head.status, headers: head.headers, body: Buffer.alloc(0), bytesAfterHead: stray });
      at = head.bodyStart + stray;
      reqIndex++;
      continue;
    }
    if (head.status === 204 || head.status === 304) {
      responses.push({ status: head.status, headers: head.headers, body: Buffer.alloc(0) });
      at = head.bodyStart;
      reqIndex++;
      continue;
    }
    if (/chunked/i.test(head.headers['transfer-encoding'] ?? '')) {
      const d = dechunk(buf, head.bodyStart);
      if (!d) break;
      responses.push({ status: head.status, headers: head.headers, body: d.body });
      at = d.end;
    } else if (head.headers['content-length'] !== undefined) {
      const len = Number(head.headers['content-length']);
      if (!Number.isFinite(len) || buf.length < head.bodyStart + len) break;
      responses.push({ status: head.status, headers: head.headers, body: buf.subarray(head.bodyStart, head.bodyStart + len) });
      at = head.bodyStart + len;
    } else {
      if (!closed) break;
      responses.push({ status: head.status, headers: head.headers, body: buf.subarray(head.bodyStart) });
      at = buf.length;
    }
    reqIndex++;
  }
  return { responses, consumed: at };
}

/** Writes `steps` (bytes, and pauses between them) to host:port and collects what comes back. */
export function rawExchange(host: string, port: number, steps: RawStep[], opts: RawOptions): Promise<RawExchange> {
  const methods = opts.methods ?? ['GET'];
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = Buffer.alloc(0);
    let settled = false;
    let writing = true;
    let error: string | undefined;
    let errorWhileWriting = false;
    let timer: NodeJS.Timeout | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    const socket = net.connect({ host, port });
    socket.setNoDelay(true);

    const finish = (outcome: RawExchange['outcome']) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      socket.destroy();
      const closed = outcome !== 'answered';
      const parsed = parseResponses(received, methods, closed);
      resolve({
        responses: parsed.responses,
        received,
        outcome,
        error,
        errorWhileWriting,
        unparsed: received.length - parsed.consumed,
      });
    };

    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      received = Buffer.concat(chunks);
      if (writing) return;
      const parsed = parseResponses(received, methods, false);
      if (parsed.responses.length >= methods.length) {
        const last = methods[methods.length - 1].toUpperCase();
        if (last === 'HEAD') {
          // Wait a little for stray body bytes after the head, then call it answered.
          clearTimeout(graceTimer);
          graceTimer = setTimeout(() => finish('answered'), opts.headGraceMs ?? 300);
        } else {
          finish('answered');
        }
      }
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error ??= e.code ?? e.message;
      if (writing) errorWhileWriting = true;
      finish('closed');
    });
    socket.on('close', () => finish('closed'));
    socket.on('end', () => {
      // The server ended its side: whatever it sent is all there will be.
      finish('closed');
    });

    const run = async () => {
      await new Promise<void>((r, j) => {
        socket.once('connect', r);
        socket.once('error', j);
      }).catch(() => undefined);
      if (settled) return;
      for (const step of steps) {
        if (settled) return;
        if (typeof step === 'object' && !Buffer.isBuffer(step)) {
          await new Promise((r) => setTimeout(r, step.pauseMs));
          continue;
        }
        const data = typeof step === 'string' ? Buffer.from(step, 'latin1') : step;
        const ok = socket.write(data);
        if (!ok)
          await new Promise<void>((r) => {
            const done = () => {
              socket.off('drain', done);
              socket.off('close', done);
              r();
            };
            socket.on('drain', done);
            socket.on('close', done);
          });
      }
      if (settled) return;
      writing = false;
      if (opts.halfClose) socket.end();
      if (opts.closeAfterMs !== undefined) {
        timer = setTimeout(() => finish('client-closed'), opts.closeAfterMs);
        return;
      }
      timer = setTimeout(() => finish('timeout'), opts.timeoutMs);
      // An answer may have arrived while the request was still being written.
      socket.emit('data', Buffer.alloc(0));
    };
    void run();
  });
}
