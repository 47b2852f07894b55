import { AsyncResource } from 'node:async_hooks';
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
  /**
   * Gathers lines and writes them together: once {@link bufferedChars} wait, else
   * {@link bufferedMs} after the first that waits, on `logger.flush()` and a `fatal` line, and at
   * exit (`process.exit()`, an uncaught error, the end of the event loop). A burst of fires then
   * costs a few writes instead of one per line; an end without Node's `exit` event (`kill -9`, a
   * signal the process does not handle, running out of memory) loses what waits. Not with
   * `pretty`; for a synchronous `destination` (stdout's is).
   */
  buffered?: boolean;
}

/**
 * A buffered logger writes at most this many characters (UTF-16 code units) at once, and once
 * that many wait...
 */
export const bufferedChars = 4_096;
/** ... and at the latest this long after the first line that waits. */
export const bufferedMs = 100;

/** Fields whose value is never logged, at the top level or one level down. */
const secretFields = new Set([
  'password',
  'passwd',
  'secret',
  'url',
  'uri',
  'connectionString',
  'authorization',
]);
const censored = '[redacted]';

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
  const direct = options.destination ?? (pretty ? prettyStream() : pino.destination({ dest: 1, sync: true }));
  const destination = options.buffered === true && !pretty ? gathered(direct) : direct;
  const logger = pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: serializeError, error: serializeError },
      // Not pino's `redact`: with paths one level down it copies every line, which a burst of
      // fires pays for (4x the time per line, 9x the garbage).
      formatters: { log: withoutSecrets },
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
  // A child's bindings are written as given (pino's `formatters.bindings` is the root's only):
  // every child, a child's child too, inherits this `child` from the root.
  const child = logger.child;
  logger.child = function (this: Logger, bindings, childOptions) {
    return child.call(this, withoutSecrets(bindings), childOptions);
  } as Logger['child'];
  return logger;
}

/**
 * Lines gathered in memory and handed to `stream` together, each write at most
 * {@link bufferedChars} (a longer line alone): once that much waits, else {@link bufferedMs} after
 * the first line, on `flush()` or `flushSync()` (pino's `fatal` calls it), and at exit. Meant for
 * a synchronous destination (stdout's): then no write is under way when the process exits, and
 * the exit's write is whole.
 */
function gathered(
  stream: DestinationStream,
): DestinationStream & { flush(cb?: () => void): void; flushSync(): void } {
  let waiting = '';
  let timer: NodeJS.Timeout | undefined;
  /** From the exit on, each line is written as it comes (`exit` listeners after this one log too). */
  let exited = false;
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (waiting === '') return;
    const lines = waiting;
    waiting = '';
    stream.write(lines);
  };
  const flushOnTimer = () => {
    timer = undefined;
    try {
      flush();
    } catch (error) {
      // Not thrown into whatever code the timer happens to run after: said where it can be.
      process.stderr.write(`resil: log lines could not be written: ${(error as Error).message}\n`);
    }
  };
  // The timer runs in the context the logger was made in, not in that of the job that logged first.
  const arm = AsyncResource.bind(() => setTimeout(flushOnTimer, bufferedMs).unref());
  process.on('exit', () => {
    exited = true;
    try {
      flush();
    } catch {
      // stdout closed (EPIPE): nobody is left to read the lines.
    }
  });
  return {
    write(line: string) {
      if (exited) {
        stream.write(line);
        return;
      }
      // Each write at most bufferedChars: one under the pipe's atomic size stays whole beside
      // other processes writing to the same pipe.
      if (waiting.length + line.length > bufferedChars) flush();
      waiting += line;
      if (waiting.length >= bufferedChars) flush();
      else timer ??= arm();
    },
    flush(cb?: () => void) {
      flush();
      cb?.();
    },
    flushSync: flush,
  };
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

/**
 * `fields` with secret-named fields censored (at the top level and one level down) and URL
 * passwords in top-level strings replaced; copied only where something changes (the caller's
 * object is not ours to modify).
 */
function withoutSecrets(fields: Record<string, unknown>, depth = 0): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key in fields) {
    const value = fields[key];
    let safe = value;
    if (secretFields.has(key)) safe = value === undefined ? value : censored;
    else if (depth > 0) continue;
    else if (typeof value === 'string') safe = redactCredentials(value);
    else if (isPlainObject(value)) safe = withoutSecrets(value, 1);
    if (safe === value) continue;
    copy ??= { ...fields };
    copy[key] = safe;
  }
  return copy ?? fields;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
