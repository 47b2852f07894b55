/** A mistake on the command line or in the environment: printed as one `error:` line, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export function isUsageError(error: unknown): error is UsageError {
  return error instanceof UsageError;
}

/** pino's levels, most verbose first. */
export const logLevels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

export type LogLevel = (typeof logLevels)[number];

/**
 * The log level from `--log-level`, else `LOG_LEVEL`, else `info`. Throws `UsageError` naming
 * where a bad value came from, before pino would throw its own error.
 *
 * @example resolveLogLevel(options.logLevel) // 'info' when neither is set
 */
export function resolveLogLevel(option: string | undefined, env: NodeJS.ProcessEnv = process.env): LogLevel {
  const [source, value] =
    option !== undefined
      ? ['--log-level', option]
      : ['LOG_LEVEL', env.LOG_LEVEL === '' ? undefined : env.LOG_LEVEL];
  if (value === undefined) return 'info';
  if ((logLevels as readonly string[]).includes(value)) return value as LogLevel;
  throw new UsageError(
    `invalid ${source} ${JSON.stringify(value)}: use ${logLevels.slice(0, -1).join(', ')} or ${logLevels.at(-1)}`,
  );
}
