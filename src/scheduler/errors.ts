import { errorGuard, ResilienceError } from '../pipeline/errors.ts';
import { closestName } from './did-you-mean.ts';

/**
 * The abort reason of a job's signal when `resil run` stops: the grace period ran out while the job
 * was still running (or the fire had not started yet).
 */
export class ShutdownError extends ResilienceError {
  readonly code = 'SHUTDOWN';
  constructor(message = 'The job runner is shutting down.') {
    super(message);
    this.name = 'ShutdownError';
  }
}

export const isShutdownError = errorGuard<ShutdownError>('SHUTDOWN');

/**
 * A job name given on the command line (or to `runJobNow`) is not in the config. The message is
 * the one the CLI prints: `unknown job "nope"; jobs in this config: a, b` with a suggestion when
 * a defined name is close.
 */
export class UnknownJobError extends ResilienceError {
  readonly code = 'UNKNOWN_JOB';
  constructor(
    readonly job: string,
    /** The names the config does define. */
    readonly known: readonly string[],
    readonly filepath?: string,
  ) {
    const suggestion = closestName(job, known);
    super(
      `unknown job "${job}"; ${known.length ? `jobs in this config: ${known.join(', ')}` : 'the config defines no jobs'}${suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`}`,
    );
    this.name = 'UnknownJobError';
  }
}

export const isUnknownJobError = errorGuard<UnknownJobError>('UNKNOWN_JOB');
