import { createRequire } from 'node:module';
import pino, { type DestinationStream, type Logger } from 'pino';
import { redactCredentials } from '../scheduler/credentials.ts';
import { shouldColor } from './output.ts';

export type { Logger };

export interface CreateLoggerOptions {
  /** Human-readable lines (pino-pretty) instead of JSON. Defaults to true when stdout is a terminal. */
  pretty?: boolean;
  /** pino level: `trace`, `debug`, `info`, `warn`, `error`, `fatal`, `silent`. Defaults to `LOG_LEVEL` or `info`. */
  level?: string;
  /** Where lines go. Defaults to stdout (synchronous writes, so nothing is lost on exit). */
  destination?: DestinationStream;
}

/** Fields whose value is never logged, at the top level or one level down. */
const secretFields = ['password', 'passwd', 'secret', 'url', 'uri', 'connectionString', 'authorization'];
const redactPaths = secretFields.flatMap((field) => [field, `*.${field}`]);

/**
 * The CLI's one logger: pino JSON lines on stdout, or pino-pretty (loaded only then) when stdout
 * is a terminal. Secrets stay out: fields named like `password`, `url` or `connectionString` are
 * censored, and the password in any URL inside a message, a string field or an error is replaced.
 *
 * @example
 * const logger = createLogger({ level: 'debug' });
 * logger.info({ job: 'nightly-report' }, 'scheduled');
 */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const pretty = options.pretty ?? (options.destination === undefined && process.stdout.isTTY === true);
  const destination =
    options.destination ?? (pretty ? prettyStream() : pino.destination({ dest: 1, sync: true }));
  return pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: redactPaths, censor: '[redacted]' },
      serializers: { err: serializeError, error: serializeError },
      formatters: { log: redactStrings },
      hooks: {
        logMethod(args, method) {
          for (let index = 0; index < args.length; index++) {
            const arg = args[index];
            if (typeof arg === 'string') args[index] = redactCredentials(arg);
          }
          return method.apply(this, args as Parameters<typeof method>);
        },
      },
    },
    destination,
  );
}

function prettyStream(): DestinationStream {
  // pino-pretty is only needed on a terminal: load it then, not on every start.
  const build = createRequire(import.meta.url)('pino-pretty') as (options: object) => DestinationStream;
  // pino-pretty's own colour detection ignores NO_COLOR: decide as the rest of the CLI does.
  return build({
    colorize: shouldColor(process.stdout),
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
  });
}

function serializeError(value: unknown): unknown {
  if (!(value instanceof Error)) return typeof value === 'string' ? redactCredentials(value) : value;
  const serialized = pino.stdSerializers.err(value) as unknown as Record<string, unknown>;
  for (const key of ['message', 'stack'] as const) {
    if (typeof serialized[key] === 'string') serialized[key] = redactCredentials(serialized[key] as string);
  }
  return serialized;
}

function redactStrings(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key in object) {
    const value = object[key];
    if (typeof value !== 'string') continue;
    const redacted = redactCredentials(value);
    // Copy on change only: the caller's object is not ours to modify.
    if (redacted === value) continue;
    copy ??= { ...object };
    copy[key] = redacted;
  }
  return copy ?? object;
}
