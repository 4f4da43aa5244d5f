import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import { LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module';
import { HttpExceptionFilter, sendError } from './common/http-exception.filter';
import { Errors } from './common/errors';
import { AppConfig } from './config/config';
import { openCatalogDb } from './database/catalog-db';
import { DatabasesService } from './modules/databases/databases.service';

const LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];
const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Builds a ready-to-listen gateway: opens the catalog, applies migrations, wires Nest on Fastify and bootstraps a
 * first database when configured. Used by main.ts and by the tests (which listen on port 0).
 */
export async function createGateway(
  config: AppConfig,
  opts: { logger?: false | LogLevel[] } = {},
): Promise<NestFastifyApplication> {
  fs.mkdirSync(config.storageRoot, { recursive: true });
  const catalog = await openCatalogDb(config);
  try {
    await catalog.migrate();
  } catch (err) {
    await catalog.close();
    throw err;
  }

  const adapter = new FastifyAdapter({
    bodyLimit: config.bodyLimitBytes,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 4096 },
    requestIdHeader: false,
    genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : randomUUID();
    },
  });
  const logger = opts.logger ?? LEVELS.slice(0, LEVELS.indexOf(config.logLevel) + 1);
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(config, catalog), adapter, {
    logger,
    bodyParser: false, // JSON is parsed by the tolerant parser below
    abortOnError: false, // throw wiring errors to the caller (main.ts reports them) instead of exiting silently
  });

  const fastify = app.getHttpAdapter().getInstance();
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
  fastify.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });
  app.useGlobalFilters(new HttpExceptionFilter());
  await app.init();
  await app.get(DatabasesService).bootstrap();
  return app;
}
