import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from '../generated/api';
import type { Session } from './session';

/** Where the Lance REST routes are (BASE_PATH), given by the page's meta tag; the operator API is never under it. */
const basePath = document.querySelector('meta[name="lgw-base-path"]')?.getAttribute('content') ?? '';

/**
 * A client of the gateway's public API, typed from its own /openapi.json, sending the session's credential, and
 * addressing `database` on the REST routes (a database key's own; any for the operator).
 */
export function apiClient(session: Session, database?: string) {
  const client = createClient<paths>({ baseUrl: window.location.origin });
  const auth: Middleware = {
    async onRequest({ request }) {
      request.headers.set('x-api-key', session.key);
      const db = database ?? (session.kind === 'database' ? session.database : undefined);
      if (db) request.headers.set('x-service-database', db);
      const url = new URL(request.url);
      if (basePath && (url.pathname === '/v1' || url.pathname.startsWith('/v1/'))) {
        url.pathname = basePath + url.pathname;
        // A new request for the new URL, with the body read out (a streamed body cannot be handed over as it is).
        const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer();
        return new Request(url, { method: request.method, headers: request.headers, body, signal: request.signal });
      }
      return request;
    },
  };
  client.use(auth);
  return client;
}

export type Api = ReturnType<typeof apiClient>;

/** The message of an error answer (the problem body's `detail`/`error`), or of a failed fetch. */
export function problemText(error: unknown, response?: Response): string {
  const e = error as { detail?: unknown; error?: unknown; title?: unknown } | undefined;
  const text = [e?.detail, e?.error, e?.title].find((v) => typeof v === 'string' && v);
  const status = response ? `${response.status} ` : '';
  if (typeof text === 'string') return `${status}${text}`;
  if (error instanceof Error) return error.message;
  return `${status}request failed`;
}

/** A namespace or table id in the spec's `$`-joined form; the root namespace is `$`. */
export const objectId = (parts: string[]) => (parts.length ? parts.join('$') : '$');
