import type { JobContext, JobLogger, ResolvedJob } from '../config/types.ts';
import type { ResilienceContext } from '../pipeline/context.ts';
import { Outcome } from '../pipeline/outcome.ts';
import type { ResiliencePipeline } from '../pipeline/pipeline.ts';
import { PipelineBuilder } from '../pipeline/pipeline-builder.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyFactory,
  TelemetryEvent,
} from '../pipeline/strategy.ts';
import type { TimeProvider } from '../pipeline/time.ts';
import {
  isLockNotAcquiredError,
  isStaleTokenError,
  isStoreUnavailableError,
  StoreUnavailableError,
} from '../strategies/lock/errors.ts';
import type { RunLedger, RunRecord } from '../strategies/lock/run-ledger.ts';
import type { LockStore } from '../strategies/lock/store.ts';
import { lockStrategy } from '../strategies/lock/strategy.ts';
import { LOCK_TOKEN } from '../strategies/lock/token.ts';
import { retryStrategy } from '../strategies/retry/strategy.ts';
import { isTimeoutRejectedError } from '../strategies/timeout/errors.ts';
import { timeoutStrategy } from '../strategies/timeout/strategy.ts';
import { describeError } from './credentials.ts';
import { isShutdownError } from './errors.ts';
import type { StoreClock } from './store-clock.ts';

/** Why a fire did not run its job. */
export type SkipReason =
  /** The job's lease is held: its previous run is still going, here or on another instance. */
  | 'lock-held'
  /** The run ledger says this occurrence already completed (on this instance or another). */
  | 'already-done'
  /** The fire came later than the job's starting deadline (or outside its catch-up window). */
  | 'missed'
  /** The store could not be reached: the fire fails closed. */
  | 'store-unavailable'
  /** The runner was stopping before the job started. */
  | 'shutdown';

/** How one fire of a job ended. */
export interface FireResult {
  outcome: 'success' | 'failure' | 'skipped';
  /** Why it was skipped. */
  reason?: SkipReason;
  /** The fencing token the run held (locked jobs that got the lease). */
  token?: number;
  /** The final error of a failure (or the store's error behind `store-unavailable`). */
  error?: unknown;
  /** How many times `run` was called (1 + retries). */
  attempts?: number;
}

/** pino's logger as the scheduler uses it (no pino types below the CLI). */
export interface SchedulerLogger extends JobLogger {
  child(bindings: Record<string, unknown>): SchedulerLogger;
}

/** What every fire of every job shares. */
export interface FireEnvironment {
  readonly store: LockStore;
  /** The store's run ledger, when it keeps one (otherwise only the lock deduplicates). */
  readonly ledger: RunLedger | undefined;
  readonly clock: StoreClock;
  readonly time: TimeProvider;
  /** This instance's name, in the ledger and in logs. */
  readonly instance: string;
  readonly ledgerRetentionMs: number;
  readonly logger: SchedulerLogger;
}

/** How a fire came about. */
export interface FireOptions {
  /**
   * `scheduled` (a cron fire: starting deadline applies), `catch-up` (an occurrence found missing
   * at start: the catch-up window applies instead), `manual` (`resil jobs run`: runs now, no
   * deadline, no never-early wait, no ledger check; the run is still recorded).
   */
  kind?: 'scheduled' | 'catch-up' | 'manual';
  /** Aborts the fire: while it waits it is skipped (`shutdown`), while it runs the job's signal aborts. */
  signal?: AbortSignal;
  /** Called once `run` is about to be called for the first time (the runner's grace period starts mattering). */
  onStart?: () => void;
  /**
   * Called when the signal of a running attempt aborts (timeout, lost lease, shutdown), with the
   * abort reason and a promise that resolves once that attempt settles: a caller can bound how long
   * it waits for a job that ignores its signal.
   */
  onAttemptAborted?: (reason: unknown, settled: Promise<void>) => void;
}

/** Per-fire state, found by the ledger strategy through the fire's callback. */
interface FireState {
  readonly scheduledAt: number;
  readonly kind: 'scheduled' | 'catch-up' | 'manual';
  readonly deadlineMs: number;
  readonly onStart: (() => void) | undefined;
  readonly onAttemptAborted: FireOptions['onAttemptAborted'];
  token: number | undefined;
  attempts: number;
  /** Store clock, epoch ms, when the first attempt started. */
  startedAt: number | undefined;
  /** Monotonic, when the first attempt started. */
  startedMono: number | undefined;
  /** Set when the occurrence was found complete, or too late, under the lease. */
  skip: 'already-done' | 'missed' | undefined;
}

const fireStates = new WeakMap<Callback<unknown>, FireState>();

/** The outcome error that carries a skip decided under the lease (never leaves this module). */
class SkipSignal {
  constructor(readonly reason: 'already-done' | 'missed') {}
}

/**
 * Fires one job: builds its pipeline once (lock -> run ledger -> timeout -> retry -> `run(ctx)`)
 * and turns every fire into a {@link FireResult} and one log line.
 */
export class JobFirer {
  readonly job: ResolvedJob;
  readonly #environment: FireEnvironment;
  readonly #pipeline: ResiliencePipeline<unknown>;
  readonly #logger: SchedulerLogger;
  /** Runs in progress on this instance (for `lock: false`, the only overlap guard there is). */
  #running = 0;

  constructor(job: ResolvedJob, environment: FireEnvironment) {
    this.job = job;
    this.#environment = environment;
    this.#logger = environment.logger.child({ job: job.name });
    this.#pipeline = this.#build();
  }

  /** Runs the occurrence `scheduledAt` through the job's pipeline. Never throws. */
  async fire(scheduledAt: number, options: FireOptions = {}): Promise<FireResult> {
    const { time, clock } = this.#environment;
    const kind = options.kind ?? 'scheduled';
    const firedMono = time.monotonic();
    const state: FireState = {
      scheduledAt,
      kind,
      deadlineMs:
        kind === 'manual'
          ? Number.POSITIVE_INFINITY
          : kind === 'catch-up'
            ? (this.job.catchUpMs ?? 0)
            : this.job.startingDeadlineMs,
      onStart: options.onStart,
      onAttemptAborted: options.onAttemptAborted,
      token: undefined,
      attempts: 0,
      startedAt: undefined,
      startedMono: undefined,
      skip: undefined,
    };
    let result: FireResult;
    try {
      result = await this.#fire(state, options.signal);
    } catch (error) {
      // Only a bug gets here: the pipeline settles, the clock's errors are handled below.
      result = { outcome: 'failure', error, attempts: state.attempts };
    }
    this.#log(state, result, time.monotonic() - firedMono, clock);
    return result;
  }

  async #fire(state: FireState, signal: AbortSignal | undefined): Promise<FireResult> {
    const { clock } = this.#environment;
    if (state.kind !== 'manual') {
      if (clock.now() - state.scheduledAt > state.deadlineMs) return { outcome: 'skipped', reason: 'missed' };
      try {
        await clock.waitUntil(state.scheduledAt, signal);
      } catch (error) {
        if (signal?.aborted && error === signal.reason) return { outcome: 'skipped', reason: 'shutdown' };
        return { outcome: 'skipped', reason: 'store-unavailable', error };
      }
    }
    if (this.job.lock === false && this.#running > 0) return { outcome: 'skipped', reason: 'lock-held' };

    const callback: Callback<unknown> = (context) => this.#attempt(state, context);
    fireStates.set(callback, state);
    this.#running++;
    let outcome: Outcome<unknown, unknown>;
    try {
      outcome = await this.#pipeline.settle(callback, {
        signal,
        operationKey: new Date(state.scheduledAt).toISOString(),
      });
    } finally {
      this.#running--;
    }
    const base: Pick<FireResult, 'token' | 'attempts'> = {};
    if (state.token !== undefined) base.token = state.token;
    if (state.attempts > 0) base.attempts = state.attempts;
    if (outcome.ok) return { outcome: 'success', ...base };
    const error = outcome.error;
    if (error instanceof SkipSignal) return { outcome: 'skipped', reason: error.reason, ...base };
    if (state.attempts > 0) return { outcome: 'failure', error, ...base };
    // The job never ran: the lock (or the ledger read under it) said no.
    if (signal?.aborted && error === signal.reason)
      return { outcome: 'skipped', reason: 'shutdown', ...base };
    if (isLockNotAcquiredError(error)) return { outcome: 'skipped', reason: 'lock-held', ...base };
    return { outcome: 'skipped', reason: 'store-unavailable', error, ...base };
  }

  /** One call of the job's `run`: the innermost step of the pipeline. */
  async #attempt(state: FireState, context: ResilienceContext): Promise<unknown> {
    // Aborted while the lease was being acquired (shutdown): the job must not start now.
    if (state.attempts === 0 && context.signal.aborted) throw context.signal.reason;
    const attempt = ++state.attempts;
    if (attempt === 1) {
      state.startedAt = this.#environment.clock.now();
      state.startedMono = this.#environment.time.monotonic();
      state.onStart?.();
    }
    const token = context.properties.get(LOCK_TOKEN);
    const scheduledAt = new Date(state.scheduledAt);
    const logger = this.#logger.child({ scheduledAt: scheduledAt.toISOString(), attempt });
    if (attempt === 1) this.#logger.debug({ scheduledAt: scheduledAt.toISOString(), token }, 'job started');
    const ctx: JobContext = {
      signal: context.signal,
      job: this.job.name,
      scheduledAt,
      attempt,
      logger,
      token,
    };
    const { signal } = context;
    // Runs the job as a promise even when `run` throws synchronously, so its settling can be watched.
    const running = (async () => this.job.run(ctx))();
    // Told the moment the signal aborts, not when the job settles: a job that ignores its signal
    // may never settle, and the timeout strategy reports only after it does.
    const onAbort = () => {
      const reason = signal.reason;
      if (isTimeoutRejectedError(reason)) {
        this.#logger.warn(
          { scheduledAt: scheduledAt.toISOString(), attempt, timeoutMs: reason.timeout },
          'attempt timed out: its signal is aborted',
        );
      }
      state.onAttemptAborted?.(
        reason,
        running.then(
          () => {},
          () => {},
        ),
      );
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await running;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  #build(): ResiliencePipeline<unknown> {
    const job = this.job;
    const { time, store, ledger } = this.#environment;
    let builder = new PipelineBuilder<unknown>({
      timeProvider: time,
      telemetry: (event) => this.#telemetry(event),
    });
    if (job.lock !== false) {
      const key = job.lock.key;
      builder = builder.add(
        lockStrategy({
          key: () => key,
          ttl: job.lock.ttlMs,
          wait: job.lock.waitMs,
          store,
          // `<instance>/<uuid>`: `resil lock status` can then say which instance holds the lease.
          ownerPrefix: this.#environment.instance,
        }),
      );
      builder = builder.add(occurrenceLedgerStrategy(job, this.#environment, ledger, this.#logger));
    }
    if (job.timeoutMs !== undefined) builder = builder.add(timeoutStrategy(job.timeoutMs));
    if (job.retry !== false) builder = builder.add(retryStrategy(job.retry));
    return builder.build();
  }

  #telemetry(event: TelemetryEvent): void {
    const fields = { scheduledAt: event.context.operationKey, event: event.event };
    const args = event.args as {
      attemptNumber?: number;
      retryDelay?: number;
      outcome?: Outcome<unknown, unknown>;
      error?: unknown;
      timeout?: number;
      key?: string;
    };
    switch (event.event) {
      case 'OnRetry':
        this.#logger.warn(
          {
            ...fields,
            attempt: (args.attemptNumber ?? 0) + 1,
            retryDelayMs: args.retryDelay,
            err: args.outcome?.error,
          },
          'attempt failed, retrying',
        );
        return;
      case 'OnTimeout':
        // Logged at warn when the timer fired (see #attempt); this is the attempt settling after it.
        this.#logger.debug({ ...fields, timeoutMs: args.timeout }, 'timed-out attempt settled');
        return;
      case 'OnLockLost':
        this.#logger.warn(
          { ...fields, key: args.key },
          'lease lost while the job ran: its signal is aborted',
        );
        return;
      case 'OnLockRejected':
        this.#logger.debug({ ...fields, key: args.key }, 'lock held elsewhere for longer than lock.wait');
        return;
      default:
        if (args.error !== undefined)
          this.#logger.warn({ ...fields, err: args.error }, 'lock store call failed');
        else this.#logger.debug(fields, 'pipeline event');
    }
  }

  #log(state: FireState, result: FireResult, elapsedMs: number, clock: StoreClock): void {
    const ran = state.startedMono !== undefined;
    const fields: Record<string, unknown> = {
      scheduledAt: new Date(state.scheduledAt).toISOString(),
      outcome: result.outcome,
      durationMs: round(ran ? this.#environment.time.monotonic() - state.startedMono! : elapsedMs),
    };
    if (result.reason !== undefined) fields.reason = result.reason;
    if (result.token !== undefined) fields.token = result.token;
    if (result.attempts !== undefined && result.attempts > 0) fields.attempt = result.attempts;
    if (state.startedAt !== undefined && state.kind !== 'manual')
      fields.lateMs = round(state.startedAt - state.scheduledAt);
    if (state.kind !== 'scheduled') fields.kind = state.kind;
    if (result.outcome === 'failure' && isShutdownError(result.error)) {
      // Aborted on purpose (Ctrl-C, shutdown): the reason, not a stack from inside resil.
      this.#logger.warn({ ...fields, error: result.error.message }, 'job aborted');
    } else if (result.outcome === 'failure') {
      this.#logger.error({ ...fields, err: result.error }, 'job failed');
    } else if (result.outcome === 'success') {
      this.#logger.info(fields, 'job succeeded');
    } else if (result.reason === 'store-unavailable') {
      this.#logger.warn({ ...fields, error: describeError(result.error) }, 'fire skipped: store unavailable');
    } else {
      if (result.reason === 'missed') fields.lateMs = round(clock.now() - state.scheduledAt);
      this.#logger.info(fields, `fire skipped: ${result.reason}`);
    }
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/**
 * Under the job's lease: skips an occurrence the run ledger already holds (or one that starts past
 * its deadline), and records the run, with the lease's fencing token, before the lease is released.
 */
function occurrenceLedgerStrategy(
  job: ResolvedJob,
  environment: FireEnvironment,
  ledger: RunLedger | undefined,
  logger: SchedulerLogger,
): StrategyFactory<never> {
  return {
    name: 'run-ledger',
    create: (): ResilienceStrategy => ({
      async execute<T>(
        callback: Callback<T>,
        context: ResilienceContext,
        next: Next,
      ): Promise<Outcome<T, unknown>> {
        const state = fireStates.get(callback as Callback<unknown>);
        if (state === undefined) return next(callback, context);
        state.token = context.properties.get(LOCK_TOKEN);
        if (state.kind !== 'manual') {
          // Judged again under the lease: a fire that waited out a crashed holder may now be too late.
          if (environment.clock.now() - state.scheduledAt > state.deadlineMs) {
            return Outcome.failure(new SkipSignal('missed'));
          }
          if (ledger !== undefined) {
            try {
              if (await ledger.isCompleted(job.name, state.scheduledAt)) {
                return Outcome.failure(new SkipSignal('already-done'));
              }
            } catch (error) {
              return Outcome.failure(asStoreUnavailable(error, 'read the run ledger'));
            }
          }
        }
        const outcome = await next(callback, context);
        if (ledger === undefined || state.attempts === 0 || state.token === undefined) return outcome;
        const record: RunRecord = {
          job: job.name,
          scheduledAt: state.scheduledAt,
          outcome: outcome.ok ? 'success' : 'failure',
          token: state.token,
          instance: environment.instance,
          startedAt: state.startedAt ?? environment.clock.now(),
          endedAt: environment.clock.now(),
          ...(outcome.ok ? {} : { error: describeError(outcome.error) }),
        };
        try {
          await ledger.recordRun(record, { retentionMs: environment.ledgerRetentionMs });
        } catch (error) {
          if (isStaleTokenError(error)) {
            // A later holder has written to the ledger: this run's lease was lost while it ran.
            return Outcome.failure(error);
          }
          logger.warn(
            {
              scheduledAt: new Date(state.scheduledAt).toISOString(),
              outcome: record.outcome,
              error: describeError(error),
            },
            'the run finished but the run ledger could not record it',
          );
        }
        return outcome;
      },
    }),
  };
}

function asStoreUnavailable(error: unknown, action: string): StoreUnavailableError {
  if (isStoreUnavailableError(error)) return error;
  return new StoreUnavailableError(`Could not ${action}: ${describeError(error)}`, { cause: error });
}
