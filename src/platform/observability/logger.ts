import pino, { DestinationStream, Logger } from 'pino';
import { AppConfig } from '../config/config';

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

/** The injection token of the root logger (ObservabilityModule provides it). */
export const ROOT_LOGGER = Symbol('ROOT_LOGGER');

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
    opts.stream ?? stdoutDestination(),
  );
}

/** How much log output is gathered before it is written, and how long a line may wait for that at most. */
const LOG_BATCH_BYTES = 8192;
const LOG_FLUSH_MS = 100;

let stdout: pino.DestinationStream | undefined;

/**
 * stdout, written synchronously in batches: lines gather up to LOG_BATCH_BYTES (about 30 request lines) and go out in
 * one write call, at the latest LOG_FLUSH_MS after the first of them, and whatever is left when the process exits.
 * One write per line was a system call per request on the catalog path, 5% of a list page's CPU profile (issue
 * 12); pino's asynchronous mode hands every batch to the thread pool instead (a round trip that costs more than the
 * write), and lets unwritten lines pile up in memory when the reader is slower than the gateway, where a synchronous
 * write holds the gateway back. One destination per process: every logger created here shares it, and its one exit hook.
 */
function stdoutDestination(): pino.DestinationStream {
  if (!stdout) {
    const dest = pino.destination({ dest: 1, sync: true, minLength: LOG_BATCH_BYTES, periodicFlush: LOG_FLUSH_MS });
    process.once('exit', () => {
      try {
        dest.flushSync();
      } catch {
        // stdout already closed: nothing to write to
      }
    });
    stdout = dest;
  }
  return stdout;
}
