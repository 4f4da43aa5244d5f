import pino, { DestinationStream, Logger } from 'pino';
import { AppConfig } from '../../config/config';

const LEVEL: Record<AppConfig['logLevel'], pino.LevelWithSilent> = {
  fatal: 'fatal',
  error: 'error',
  warn: 'warn',
  log: 'info',
  debug: 'debug',
  verbose: 'trace',
};

/**
 * Paths that could ever carry a credential. Nothing the gateway logs includes headers or bodies, but if a future
 * log call does, these never reach the output.
 */
const REDACT = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'headers["x-api-key"]',
  'headers.authorization',
  'api_key',
  'auth_token',
  '*.api_key',
  '*.auth_token',
  'identity',
  '*.identity',
];

/** The root structured logger (JSON lines): application logs through nestjs-pino, one line per request. */
export function createRootLogger(config: AppConfig, opts: { silent?: boolean; stream?: DestinationStream } = {}): Logger {
  return pino(
    {
      level: opts.silent ? 'silent' : LEVEL[config.logLevel],
      base: { service: 'lance-gateway' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    // stdout written synchronously: one write call per line, where pino's default hands every batch of lines to
    // the thread pool (a round trip that costs more than the write itself), and a reader slower than the gateway
    // holds it back instead of letting unwritten lines pile up in memory.
    opts.stream ?? pino.destination({ dest: 1, sync: true }),
  );
}
