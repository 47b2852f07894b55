import { AsyncLocalStorage } from 'node:async_hooks';
import { errorGuard, ResilienceError } from '../pipeline/errors.ts';

/** How an error escaped a job's `run` instead of rejecting the promise `run` returned. */
export type StrayErrorOrigin = 'unhandled-rejection' | 'uncaught-exception';

/**
 * A job's run failed because an error escaped it: a promise it started was rejected with nobody
 * listening, or a timer or callback it started threw. `error` is that error; the stack is its
 * stack, so a log shows where it came from.
 */
export class StrayJobError extends ResilienceError {
  readonly code = 'STRAY_JOB_ERROR';
  /** The error that escaped (not enumerable: a log line shows it once, as this error's message and stack). */
  declare readonly error: unknown;
  constructor(
    readonly origin: StrayErrorOrigin,
    error: unknown,
  ) {
    const what = origin === 'unhandled-rejection' ? 'an unhandled rejection' : 'an uncaught exception';
    super(`${what} escaped the job's run: ${error instanceof Error ? error.message : String(error)}`);
    this.name = 'StrayJobError';
    Object.defineProperty(this, 'error', { value: error });
    const frames = error instanceof Error ? error.stack?.split('\n').slice(1) : undefined;
    if (frames !== undefined && frames.length > 0)
      this.stack = [`${this.name}: ${this.message}`, ...frames].join('\n');
  }
}

export const isStrayJobError = errorGuard<StrayJobError>('STRAY_JOB_ERROR');

/**
 * A job called `process.exit()` while the runner owned the process: thrown from `process.exit`
 * in place of exiting, so the run fails with it.
 */
export class JobExitError extends ResilienceError {
  readonly code = 'JOB_EXIT';
  constructor(readonly exitCode: number | string | null | undefined) {
    super(
      `the job called process.exit(${exitCode ?? ''}): the runner owns the process, the run fails instead`,
    );
    this.name = 'JobExitError';
  }
}

export const isJobExitError = errorGuard<JobExitError>('JOB_EXIT');

/** The occurrence whose job's code the caller runs in. */
export interface RunningJob {
  readonly job: string;
  readonly scheduledAt: Date;
}

/** What {@link attributeStrayError} found. */
export interface StrayErrorAttribution extends RunningJob {
  /**
   * True when an attempt of the run was still going: it fails with the error. False when the
   * attempt had ended (a recorded outcome is never changed): the error is only reported.
   */
  readonly failedRun: boolean;
}

/**
 * The run of one occurrence as its job's code sees it: entered around each `run(ctx)` call, it
 * propagates into every promise, timer and callback that code starts.
 */
export class OccurrenceContainment implements RunningJob {
  readonly job: string;
  readonly scheduledAt: Date;
  readonly #onLate: (error: unknown, origin: StrayErrorOrigin) => void;
  /** The attempt going on; undefined between attempts and after the run. */
  #current: ContainedAttempt | undefined;

  constructor(job: string, scheduledAt: Date, onLate: (error: unknown, origin: StrayErrorOrigin) => void) {
    this.job = job;
    this.scheduledAt = scheduledAt;
    this.#onLate = onLate;
  }

  /** One attempt of the run, whose job sees `signal` (the pipeline's) joined with its own abort. */
  attempt(signal: AbortSignal): ContainedAttempt {
    return new ContainedAttempt(this, signal, (attempt) => {
      this.#current = attempt;
    });
  }

  /** @internal */
  strayError(error: unknown, origin: StrayErrorOrigin): boolean {
    const attempt = this.#current;
    if (attempt === undefined) {
      this.#onLate(error, origin);
      return false;
    }
    attempt.fail(isJobExitError(error) ? error : new StrayJobError(origin, error));
    return true;
  }
}

/** One attempt of a contained run. */
export class ContainedAttempt {
  readonly #run: OccurrenceContainment;
  readonly #signal: AbortSignal;
  readonly #setCurrent: (attempt: ContainedAttempt | undefined) => void;
  #controller: AbortController | undefined;
  #joined: AbortSignal | undefined;
  #reject: ((error: unknown) => void) | undefined;

  constructor(
    run: OccurrenceContainment,
    signal: AbortSignal,
    setCurrent: (attempt: ContainedAttempt | undefined) => void,
  ) {
    this.#run = run;
    this.#signal = signal;
    this.#setCurrent = setCurrent;
  }

  /** The job's `ctx.signal`: the pipeline's, also aborted when a stray error fails the attempt. Made at its first read. */
  get signal(): AbortSignal {
    if (this.#joined === undefined) {
      this.#controller = new AbortController();
      this.#joined = AbortSignal.any([this.#signal, this.#controller.signal]);
    }
    return this.#joined;
  }

  /**
   * Calls `call` inside the run's async context. The promise settles as `call` does, or rejects
   * as soon as an error escapes the code `call` started (see {@link attributeStrayError}).
   */
  run(call: () => unknown): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      // Over as the attempt settles, so an error escaping later is never taken for this attempt's.
      const settle =
        <T>(end: (value: T) => void) =>
        (value: T) => {
          if (this.#reject === undefined) return;
          this.#reject = undefined;
          this.#setCurrent(undefined);
          end(value);
        };
      this.#reject = settle(reject);
      this.#setCurrent(this);
      storage.run(this.#run, () => {
        // A promise even when `call` throws synchronously.
        (async () => call())().then(settle(resolve), settle(reject));
      });
    });
  }

  /** @internal Fails the attempt with `error`: its signal aborts, its promise rejects. */
  fail(error: unknown): void {
    const reject = this.#reject;
    if (reject === undefined) return;
    // Made now if the job has not read it yet: read later, it is aborted all the same.
    void this.signal;
    this.#controller!.abort(error);
    reject(error);
  }
}

const storage = new AsyncLocalStorage<OccurrenceContainment>();

/**
 * The occurrence whose job's code the caller runs in (its async context: its `run`, and every
 * promise, timer and callback it started), or undefined outside any job.
 */
export function runningJob(): RunningJob | undefined {
  const run = storage.getStore();
  return run && { job: run.job, scheduledAt: run.scheduledAt };
}

/**
 * Attributes an error that escaped (an `unhandledRejection` or `uncaughtException` of the process)
 * to the occurrence whose job's code it came from, by the caller's async context: Node runs those
 * handlers in the context of the promise or callback that failed. While an attempt of that run is
 * going, the attempt fails with a {@link StrayJobError} (its signal aborts with it); after, the
 * run's outcome stands and a `stray-error` event reports it. Undefined when no job's code is the
 * source: the caller decides (the `resil` CLI stops, since the process state is unknown).
 *
 * The scheduler installs no process handler itself: the process's owner does, e.g.
 *
 * @example
 * process.on('unhandledRejection', (reason) => {
 *   if (attributeStrayError(reason, 'unhandled-rejection') === undefined) stopEverything(reason);
 * });
 */
export function attributeStrayError(
  error: unknown,
  origin: StrayErrorOrigin,
): StrayErrorAttribution | undefined {
  const run = storage.getStore();
  if (run === undefined) return undefined;
  const failedRun = run.strayError(error, origin);
  return { job: run.job, scheduledAt: run.scheduledAt, failedRun };
}
