import type { Logger } from 'pino';
import {
  attributeStrayError,
  JobExitError,
  runningJob,
  type StrayErrorOrigin,
} from '../scheduler/containment.ts';

/** The exit code of a command stopped by a fault it could not pin on a job, or by a job's `process.exit()`. */
export const faultExitCode = 1;

export interface JobFaultsOptions {
  logger: Pick<Logger, 'error' | 'fatal'>;
  /**
   * Called once, at the first fault that leaves the process in a state nobody knows: an error
   * that escaped outside any job, or a job that called `process.exit()`. The command stops
   * gracefully and exits {@link faultExitCode}.
   */
  onFault(): void;
}

export interface JobFaults {
  /** True once a fault asked the command to stop. */
  readonly faulted: boolean;
  /** Removes the handlers and gives `process.exit` back. */
  dispose(): void;
}

/**
 * The runner owns the process, the job owns its run: installs the process's `unhandledRejection`
 * and `uncaughtException` handlers and wraps `process.exit` while a command runs jobs (`resil run`,
 * `resil jobs run`, the dashboard's trigger). An error that escaped a job's code fails that job's
 * run, or is logged once when the run had ended (see `attributeStrayError`); one that no job's
 * async context claims is logged and stops the command (`onFault`). A job's `process.exit()` throws
 * a {@link JobExitError} into the job instead of exiting, is logged with the job's name and stops
 * the command. An exit with code 0 that the command did not decide becomes 1, so a supervisor
 * restarts it.
 *
 * @example
 * const faults = containJobFaults({ logger, onFault: () => void runner.stop() });
 * try { await stopped; } finally { faults.dispose(); }
 */
export function containJobFaults({ logger, onFault }: JobFaultsOptions): JobFaults {
  let faulted = false;
  const fault = () => {
    if (faulted) return;
    faulted = true;
    onFault();
  };
  const onStray = (origin: StrayErrorOrigin) => (error: unknown) => {
    // Attributed: the run's own failure line (or a stray-error line) tells it.
    if (attributeStrayError(error, origin) !== undefined) return;
    logger.fatal(
      { err: error, origin },
      `${origin === 'unhandled-rejection' ? 'an unhandled rejection' : 'an uncaught exception'} outside any job: the process state is unknown, stopping gracefully (exit ${faultExitCode})`,
    );
    fault();
  };
  const onRejection = onStray('unhandled-rejection');
  const onException = onStray('uncaught-exception');
  const realExit = process.exit;
  const exit = (code?: number | string | null) => {
    const job = runningJob();
    if (job === undefined) return realExit.call(process, code);
    logger.error(
      { job: job.job, scheduledAt: job.scheduledAt.toISOString(), code: code ?? null },
      `job ${job.job} called process.exit(${code ?? ''}): its run fails and the runner stops (exit ${faultExitCode})`,
    );
    fault();
    throw new JobExitError(code);
  };
  // Whatever else ends the process while jobs run: not with 0, which the command did not decide.
  const onExit = (code: number) => {
    if (code !== 0) return;
    logger.error(
      { code: faultExitCode },
      `process.exit(0) called outside any job while jobs ran: exiting ${faultExitCode}`,
    );
    process.exitCode = faultExitCode;
  };
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  process.on('exit', onExit);
  process.exit = exit as typeof process.exit;
  return {
    get faulted() {
      return faulted;
    },
    dispose() {
      process.off('unhandledRejection', onRejection);
      process.off('uncaughtException', onException);
      process.off('exit', onExit);
      if (process.exit === exit) process.exit = realExit;
    },
  };
}
