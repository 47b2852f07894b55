import { CommanderError } from 'commander';
import { withDeadline } from '../pipeline/time.ts';
import { isConfigError } from '../scheduler/config-error.ts';
import { isUnknownJobError } from '../scheduler/errors.ts';
import type { ResolvedConfig } from '../scheduler/job.ts';
import type { LockStore } from '../strategies/lock/store.ts';
import type { CommandHelpers } from './command-helpers.ts';
import { rememberLauncher } from './launcher.ts';
import { createStyles, printableOutput, shouldColor } from './output.ts';
import { createProgram } from './program.ts';
import { isUsageError } from './usage-error.ts';

/**
 * The module a job with `isolation: 'worker'` runs in: dist/config/job-worker.js beside
 * dist/cli/main.js (src/config/job-worker.ts when the CLI runs from its sources).
 */
const jobWorker = new URL(
  `../config/job-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`,
  import.meta.url,
);

/** Exit codes shared by every command. */
const exitCodes = { ok: 0, failure: 1, usage: 2, config: 2 } as const;

/** Closing a store's connection must not hold the exit up. */
const closeDeadlineMs = 1_000;

/** Exporting the telemetry's buffered spans and metrics (`telemetry.flush()`) may take this long. */
const flushDeadlineMs = 5_000;

/** `target.method()` if it has one, bounded by `deadlineMs`; true when there was one to call. */
async function callBounded(target: unknown, method: string, deadlineMs = closeDeadlineMs): Promise<boolean> {
  // A function may carry methods too (openTelemetry() is a pipeline listener with flush()).
  if ((typeof target !== 'object' && typeof target !== 'function') || target === null) return false;
  const close = (target as Record<string, unknown>)[method];
  if (typeof close !== 'function') return false;
  await withDeadline(
    Promise.resolve(close.call(target)).catch(() => {}),
    deadlineMs,
    () => undefined,
  );
  return true;
}

/**
 * Closes what the config opened that resil knows of: the store's own `close()`, else the client
 * the shipped stores keep (`RedisLockStore#client.quit()`, `PostgresLockStore#pool.end()`),
 * bounded. The process exits explicitly afterwards anyway, so a connection resil cannot see (a pg
 * pool only a job uses) does not keep a one-shot command alive.
 */
async function closeStore(store: LockStore | undefined): Promise<void> {
  if (store === undefined || (await callBounded(store, 'close'))) return;
  const { client, pool } = store as { client?: unknown; pool?: unknown };
  if (!(await callBounded(client, 'quit'))) await callBounded(pool, 'end');
}

/**
 * A reader that went away (`resil --help | head -1`) is not an error of ours: exit quietly with
 * the exit code so far instead of crashing with `write EPIPE`.
 */
function exitQuietlyOnClosedPipe(stream: NodeJS.WriteStream, exitCode: () => number): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(exitCode());
    throw error;
  });
}

/** Resolves once everything written to `stream` so far has been handed to the OS. */
function flush(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) resolve();
    else stream.write('', () => resolve());
  });
}

function reportError(error: unknown, helpers: CommandHelpers): number {
  const { errorStyles, stderr } = helpers;
  if (isUsageError(error) || isUnknownJobError(error)) {
    stderr.write(`${errorStyles.red('error:')} ${error.message}\n`);
    if (isUnknownJobError(error) && error.filepath) stderr.write(`  config: ${error.filepath}\n`);
    return exitCodes.usage;
  }
  if (isConfigError(error)) {
    const title =
      error.problems.length === 1 ? 'bad config' : `bad config (${error.problems.length} problems)`;
    stderr.write(`${errorStyles.red('error:')} ${title}\n`);
    for (const line of error.message.split('\n')) stderr.write(`  ${line}\n`);
    return exitCodes.config;
  }
  if (error instanceof CommanderError) {
    // Help and --version end with exit code 0; a usage error (unknown command or option, missing
    // argument) has already been printed by commander.
    return error.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
  }
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  stderr.write(`${errorStyles.red('error:')} ${message}\n`);
  if (process.env.RESIL_DEBUG && error instanceof Error && error.stack) stderr.write(`${error.stack}\n`);
  else stderr.write(errorStyles.dim('  (set RESIL_DEBUG=1 for the stack trace)\n'));
  return exitCodes.failure;
}

/**
 * Runs the `resil` CLI and exits the process with the command's exit code, after closing the
 * config's store and flushing stdout and stderr. `launchedBy`: the parent pid as the process
 * started (see launcher.ts); defaults to the parent now.
 */
export async function main(
  argv: readonly string[] = process.argv,
  { launchedBy }: { launchedBy?: number } = {},
): Promise<never> {
  rememberLauncher(launchedBy);
  let exitCode: number = exitCodes.ok;
  let configPromise: Promise<ResolvedConfig> | undefined;
  let config: ResolvedConfig | undefined;
  const helpers: CommandHelpers = {
    loadConfig() {
      configPromise ??= import('../config/load.ts')
        .then(({ loadConfig }) => loadConfig({ configPath: program.opts<{ config?: string }>().config }))
        .then((loaded) => {
          config = { ...loaded, jobWorker };
          return config;
        });
      return configPromise;
    },
    stdout: printableOutput(process.stdout),
    stderr: printableOutput(process.stderr),
    styles: createStyles(shouldColor(process.stdout)),
    errorStyles: createStyles(shouldColor(process.stderr)),
    setExitCode(code) {
      exitCode = code;
    },
  };
  const program = createProgram(helpers);
  exitQuietlyOnClosedPipe(process.stdout, () => exitCode);
  exitQuietlyOnClosedPipe(process.stderr, () => exitCode);

  try {
    if (argv.length <= 2) {
      program.outputHelp();
    } else {
      await program.parseAsync(argv);
    }
  } catch (error) {
    exitCode = reportError(error, helpers);
  }
  // Before the store closes: an exporter may still need what the jobs opened.
  await callBounded(config?.telemetry, 'flush', flushDeadlineMs);
  await closeStore(config?.store);
  await Promise.all([flush(process.stdout), flush(process.stderr)]);
  process.exit(exitCode);
}
