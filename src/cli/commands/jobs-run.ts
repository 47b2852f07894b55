import { ConfigError } from '../../config/errors.ts';
import { describeError } from '../../scheduler/credentials.ts';
import { isUnknownJobError } from '../../scheduler/errors.ts';
import { type FireResult, runJobNow } from '../../scheduler/runner.ts';
import { createLogger } from '../logger.ts';
import type { CommandHelpers } from '../program.ts';

/** `resil jobs run` exit codes (CONTRACT.md). */
const jobsRunExitCodes = { success: 0, failure: 1, configError: 2, lockHeld: 3 } as const;

/** Exit code for a manual run's result: a skip because the store is down is a failure to run. */
function exitCodeOf(result: FireResult): number {
  if (result.outcome === 'success') return jobsRunExitCodes.success;
  if (result.outcome === 'failure' || result.reason === 'store-unavailable') return jobsRunExitCodes.failure;
  return jobsRunExitCodes.lockHeld;
}

function describeResult(name: string, result: FireResult): string {
  const token = result.token === undefined ? '' : `, token ${result.token}`;
  const attempts =
    result.attempts === undefined ? '' : `, ${result.attempts} attempt${result.attempts === 1 ? '' : 's'}`;
  switch (result.outcome) {
    case 'success':
      return `${name}: success${token}${attempts}`;
    case 'failure':
      return `${name}: failed${token}${attempts}: ${describeError(result.error)}`;
    default: {
      const reason =
        result.reason === 'lock-held'
          ? 'its lock is held elsewhere'
          : result.reason === 'store-unavailable'
            ? `the lock store is unreachable${result.error === undefined ? '' : ` (${describeError(result.error)})`}`
            : (result.reason ?? 'unknown reason');
      return `${name}: skipped: ${reason}`;
    }
  }
}

/**
 * `resil jobs run <name>`: one run now through the job's lock, ledger, timeout and retry.
 * Logs go to stdout like `resil run`'s; the one-line result goes to stderr. Ctrl-C aborts the
 * job's signal (its lease is then released); a second Ctrl-C exits at once.
 */
export async function runJob(helpers: CommandHelpers, name: string): Promise<void> {
  const config = await helpers.loadConfig();
  if (!config.jobs.some((job) => job.name === name)) {
    const known = config.jobs.map((job) => job.name);
    throw new ConfigError({
      file: config.filepath,
      job: name,
      message: `unknown job; ${known.length === 0 ? 'the config defines no jobs' : `jobs in this config: ${known.join(', ')}`}`,
    });
  }
  const logger = createLogger();
  const interrupt = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupt.signal.aborted) process.exit(130);
    interrupt.abort(new Error(`interrupted by ${signal}`));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let result: FireResult;
  try {
    result = await runJobNow(config, name, logger, { signal: interrupt.signal });
  } catch (error) {
    if (!isUnknownJobError(error)) throw error;
    throw new ConfigError({ file: config.filepath, job: name, message: error.message });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    logger.flush();
  }
  const code = exitCodeOf(result);
  const { errorStyles } = helpers;
  const line = describeResult(name, result);
  helpers.stderr.write(
    `${code === 0 ? errorStyles.green(line) : code === 1 ? errorStyles.red(line) : errorStyles.yellow(line)}\n`,
  );
  helpers.setExitCode(code);
}
