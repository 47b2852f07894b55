import { hostname, userInfo } from 'node:os';
import { formatDuration } from '../pipeline/duration.ts';
import { withDeadline } from '../pipeline/time.ts';
import { ShutdownError } from '../scheduler/errors.ts';
import type { FireOptions } from '../scheduler/fire.ts';
import { isLockLostError } from '../strategies/lock/errors.ts';
import { isTimeoutRejectedError } from '../strategies/timeout/errors.ts';
import type { CommandHelpers } from './command-helpers.ts';
import { containJobFaults, type JobFaults } from './job-faults.ts';
import { watchLauncher } from './launcher.ts';
import type { Logger } from './logger.ts';
import { signalExitCodes } from './stop-signals.ts';

/** After the job's signal aborts, how long it gets to settle before the command gives up (as `resil run`). */
export const abortSettleMs = 5_000;

/** `user@host`, who is recorded as having asked for a manual or backfill run. */
export function actorName(): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    // A uid without a passwd entry (a container): the environment may still say.
    user = process.env.USER ?? process.env.LOGNAME ?? 'unknown';
  }
  return `${user}@${hostname()}`;
}

/** What a one-shot command that runs a job (`jobs run`, `jobs backfill`) watches while it runs. */
export interface RunSupervision {
  /** Aborts on Ctrl-C, SIGTERM, the launcher's exit or a fault outside the job. */
  readonly signal: AbortSignal;
  /** For `FireOptions.onAttemptAborted`: a job that ignores its aborted signal is given up on. */
  readonly onAttemptAborted: NonNullable<FireOptions['onAttemptAborted']>;
  /** Resolves with the exit code once the command gives up on a job that ignored its aborted signal. */
  readonly givenUp: Promise<number>;
  readonly faults: JobFaults;
  /** The signal that interrupted the run, if one did. */
  interruptedBy(): NodeJS.Signals | undefined;
  /** What interrupted it, for the result line: the signal, or the launcher's exit. */
  interruption(): string;
  /** Stops watching; call it once the run settled or was given up on. */
  dispose(): void;
}

/**
 * Watches a run of `name` for what ends it from outside. Once the job's signal aborts (its
 * timeout, a lost lease, Ctrl-C) the job gets {@link abortSettleMs} to settle, then it is given up
 * on: an error naming it is logged and `givenUp` resolves (1, or 130 after SIGINT, 143 after
 * SIGTERM). A second Ctrl-C exits at once. Started by npm (`npx resil ...`), npm's exit counts as
 * a SIGTERM (see launcher.ts). A stray error outside the job aborts the run too (`faults`).
 */
export function superviseRun(options: {
  readonly name: string;
  /** For the command's own lines (bound to the job). */
  readonly logger: Logger;
  /** For a fault's lines (they name the job that faulted themselves). */
  readonly faultLogger: Logger;
  readonly helpers: Pick<CommandHelpers, 'stderr' | 'errorStyles'>;
}): RunSupervision {
  const { name, logger } = options;
  const { stderr, errorStyles } = options.helpers;
  const interrupt = new AbortController();
  let interruptedBy: NodeJS.Signals | undefined;
  let interruption = '';
  let giveUp!: (code: number) => void;
  const givenUp = new Promise<number>((resolve) => {
    giveUp = resolve;
  });
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  /** Gives the job `abortSettleMs` to settle (`settled`, else the command's end), then gives up on it. */
  const boundSettling = (settled: Promise<void> | undefined, why: string) => {
    void withDeadline(
      settled === undefined ? finished : Promise.race([settled, finished]),
      abortSettleMs,
      () => {
        logger.error(
          { abortSettleMs },
          `${name} ignored its aborted signal (${why}) for ${abortSettleMs / 1_000} s: giving up on it; its lease expires after its ttl`,
        );
        logger.flush();
        giveUp(interruptedBy === undefined ? 1 : signalExitCodes[interruptedBy]!);
      },
    );
  };
  /** Aborts the job's signal, as `signal` would; `why` names the cause in the abort reason. */
  const interruptWith = (signal: NodeJS.Signals, why: string) => {
    interruptedBy = signal;
    interruption = why;
    interrupt.abort(new ShutdownError(`interrupted by ${why}`));
    // Bounded even if the abort reaches no running attempt (the job is not far enough to notice).
    boundSettling(undefined, why);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (interruptedBy !== undefined) {
      stderr.write(`${errorStyles.red(`${name}: forced exit`)}; its lease expires after its ttl\n`);
      process.exit(signalExitCodes[signal] ?? 130);
    }
    stderr.write(`aborting ${name}... press Ctrl-C again to force\n`);
    interruptWith(signal, signal);
  };
  const onAttemptAborted = (reason: unknown, settled: Promise<void>) => {
    // A Ctrl-C is already bounded by onSignal.
    if (interruptedBy !== undefined) return;
    boundSettling(settled, describeAbort(reason));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Under `npx resil ...`, npm exits on SIGTERM without passing it on: its exit counts as one.
  const stopWatchingLauncher = watchLauncher((launcher) => {
    if (interruptedBy !== undefined) return;
    logger.info({ launcher }, `${launcher} exited: aborting ${name}`);
    interruptWith('SIGTERM', `the exit of ${launcher}`);
  });
  // The job's stray errors fail its run; an error outside it, or its process.exit(), ends the
  // command with exit 1 once the run settled.
  const faults = containJobFaults({
    logger: options.faultLogger,
    onFault: () => {
      interrupt.abort(new ShutdownError('interrupted by a fault the command cannot recover from'));
      boundSettling(undefined, 'a fault');
    },
  });
  return {
    signal: interrupt.signal,
    onAttemptAborted,
    givenUp,
    faults,
    interruptedBy: () => interruptedBy,
    interruption: () => interruption,
    dispose() {
      faults.dispose();
      stopWatchingLauncher();
      finish();
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      logger.flush();
    },
  };
}

function describeAbort(reason: unknown): string {
  if (isTimeoutRejectedError(reason)) return `timed out after ${formatDuration(reason.timeout)}`;
  if (isLockLostError(reason)) return 'lease lost';
  return reason instanceof Error ? reason.message : String(reason);
}
