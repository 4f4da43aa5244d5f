import * as fs from 'node:fs';
import * as path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply } from 'fastify';
import type { AppConfig } from '../../platform/config/config';

/** Where the console is served (outside BASE_PATH, like /docs). */
export const CONSOLE_PATH = '/console';

/**
 * The console's policy: scripts, styles and API calls from this origin only (no inline script, no eval), no frames,
 * no plugins, no form posts elsewhere. Tenant strings are rendered as text by the console itself (docs/console.md).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/** The built console (dist/console, written by scripts/build-console.js), found from the package root. */
export function consoleDir(): string | undefined {
  for (let dir = __dirname, i = 0; i < 6; i++, dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) {
      const built = path.join(dir, 'dist', 'console');
      return fs.existsSync(path.join(built, 'index.html')) ? built : undefined;
    }
  }
  return undefined;
}

/**
 * Serves the web console at /console when CONSOLE_ENABLED (default): index.html (never cached: it names the current
 * assets) and the fingerprinted assets under /console/assets/ (cached for a year, immutable). When the console was
 * not built, /console answers 503 with a line saying so. Call once before `app.init()`.
 */
export function setupConsole(app: NestFastifyApplication, config: AppConfig): void {
  if (!config.console.enabled) return;
  const fastify = app.getHttpAdapter().getInstance();
  const dir = consoleDir();
  // The page learns BASE_PATH (where the REST routes are) from a meta tag; BASE_PATH's syntax needs no escaping.
  const index = dir
    ? fs.readFileSync(path.join(dir, 'index.html'), 'utf8').replace('%BASE_PATH%', config.basePath)
    : 'The console was not built: run `npm run build`.\n';
  const page = (reply: FastifyReply) => {
    reply.headers({ ...SECURITY_HEADERS, 'cache-control': 'no-cache' });
    if (!dir) return reply.code(503).type('text/plain; charset=utf-8').send(index);
    return reply.type('text/html; charset=utf-8').send(index);
  };
  fastify.get(CONSOLE_PATH, (_req, reply) => page(reply)); // and /console/ (the router ignores a trailing slash)
  if (!dir) return;
  void fastify.register(fastifyStatic, {
    root: path.join(dir, 'assets'),
    prefix: `${CONSOLE_PATH}/assets/`,
    decorateReply: false,
    index: false,
    dotfiles: 'deny',
    preCompressed: true, // main-<hash>.js.br / .gz, written by the build
    // Every asset's name carries a hash of its content (esbuild's [name]-[hash]): a new build makes new names.
    cacheControl: false,
    setHeaders: (reply) => {
      reply.headers(SECURITY_HEADERS);
      reply.header('cache-control', 'public, max-age=31536000, immutable');
    },
  });
}
