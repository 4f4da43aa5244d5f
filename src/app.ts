import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module';
import { HttpExceptionFilter } from './platform/http/http-exception.filter';
import { Errors } from './platform/http/errors';
import { clientErrorHandler, frameworkErrorHandler, installHttpEdge, MAX_PARAM_LENGTH } from './platform/http/http-edge';
import { inputSanityHook } from './platform/http/input-sanity';
import { AppConfig } from './platform/config/config';
import { openCatalogDb } from './platform/db/catalog-db';
import { DatabasesService } from './modules/databases/databases.service';
import { ARROW_STREAM_TYPE, isArrowRouteWithoutType } from './modules/data/dataplane.constants';
import { createRootLogger } from './platform/observability/logger';
import { MetricsService } from './platform/observability/metrics.service';
import { setupOpenApi } from './modules/openapi';
import { setupConsole } from './modules/console/console.setup';

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Builds a ready-to-listen gateway: opens the catalog, applies migrations, wires Nest on Fastify and bootstraps a
 * first database when configured. Used by main.ts and by the tests (which listen on port 0).
 */
export async function createGateway(
  config: AppConfig,
  /** logger false: no log output (tests); logStream: where JSON log lines go (default stdout). */
  opts: { logger?: false; logStream?: DestinationStream } = {},
): Promise<NestFastifyApplication> {
  for (const p of config.storage.profiles.values()) if (p.scheme === 'file') fs.mkdirSync(p.root, { recursive: true });
  const catalog = await openCatalogDb(config);
  try {
    await catalog.migrate();
  } catch (err) {
    await catalog.close();
    throw err;
  }

  const root = createRootLogger(config, { silent: opts.logger === false, stream: opts.logStream });
  let metrics: MetricsService | undefined; // set once Nest is up; the parser's refusals are counted from then on
  const adapter = new FastifyAdapter({
    bodyLimit: config.bodyLimitBytes,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // Fastify's and Node's own refusals answer with the problem body too (src/platform/http/http-edge.ts).
    // These requests pass no hooks, so they are counted and logged here.
    frameworkErrors: frameworkErrorHandler((method, status, code) => {
      metrics?.requests.inc({ method, route: '(unmatched)', status: String(status), database: '' });
      root.warn({ method, status, framework_error: code }, 'request refused by the router');
    }),
    clientErrorHandler: (err, socket) =>
      clientErrorHandler(err, socket, (status, code) => {
        metrics?.requests.inc({ method: 'unknown', route: '(unparsed)', status: String(status), database: '' });
        root.warn({ status, parser_error: code }, 'request refused by the HTTP parser');
      }),
    requestIdHeader: false,
    genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : randomUUID();
    },
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(config, catalog, root), adapter, {
    bufferLogs: true,
    bodyParser: false, // JSON is parsed by the tolerant parser below
    abortOnError: false, // throw wiring errors to the caller (main.ts reports them) instead of exiting silently
  });

  app.useLogger(app.get(Logger));
  const fastify = app.getHttpAdapter().getInstance();
  metrics = app.get(MetricsService);
  // JSON bodies: the official clients send `null`, and some send no body at all with a JSON content type.
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(Errors.invalidInput('request body is not valid JSON'), undefined);
    }
  });
  // Arrow bodies are not parsed here: the data plane streams them from the raw request (it enforces its own limit).
  for (const type of [ARROW_STREAM_TYPE, 'application/octet-stream']) {
    fastify.addContentTypeParser(type, (_req, _payload, done) => done(null));
  }
  fastify.addHook('onRequest', (req, reply, done) => {
    if (isArrowRouteWithoutType(req.method, req.url, req.headers)) req.headers['content-type'] = ARROW_STREAM_TYPE;
    reply.header('x-request-id', req.id);
    done();
  });
  // 405 for unmatched methods, and bodies left unread by an answer; before the routes are registered (app.init and
  // the documentation routes), whose paths it collects.
  installHttpEdge(fastify, { ignoreTrailingSlash: true });
  fastify.addHook('preHandler', inputSanityHook); // NUL / unpaired surrogates anywhere in the input → 400
  app.useGlobalFilters(new HttpExceptionFilter());
  setupOpenApi(app, config); // GET /openapi.json and /docs
  setupConsole(app, config); // GET /console (docs/console.md)
  await app.init();
  await app.get(DatabasesService).bootstrap();
  return app;
}
