import type { ClaimResult, LedgerTrim, RunLedger, RunTrigger } from '../ledger/contract.ts';
import type { ResilienceContext } from '../pipeline/context.ts';
import type { Outcome } from '../pipeline/outcome.ts';
import type { ResiliencePipeline } from '../pipeline/pipeline.ts';
import { PipelineBuilder } from '../pipeline/pipeline-builder.ts';
import { ResilienceProperties, ResiliencePropertyKey } from '../pipeline/properties.ts';
import type { TelemetryEvent, TelemetryListener } from '../pipeline/strategy.ts';
import type { TimeProvider } from '../pipeline/time.ts';
import { delay } from '../pipeline/time.ts';
import { lockTiming } from '../strategies/lock/defaults.ts';
import {
  isInvalidKeyError,
  isLockNotAcquiredError,
  isStaleTokenError,
  isStoreSetupError,
  isStoreUnavailableError,
} from '../strategies/lock/errors.ts';
import { randomOwnerId } from '../strategies/lock/owner-id.ts';
import { ReleaseWakeUp } from '../strategies/lock/release-wake-up.ts';
import type { LockStore } from '../strategies/lock/store.ts';
import { lockStrategy } from '../strategies/lock/strategy.ts';
import { LOCK_TOKEN } from '../strategies/lock/token.ts';
import { retryStrategy } from '../strategies/retry/strategy.ts';
import { isTimeoutRejectedError } from '../strategies/timeout/errors.ts';
import { timeoutStrategy } from '../strategies/timeout/strategy.ts';
import type { ClaimSlots } from './claim-slots.ts';
import { OccurrenceContainment } from './containment.ts';
import type { ChaosInjectedEvent, FireKind, SchedulerEvent } from './events.ts';
import type { JobContext, JobLogger, ResolvedJob } from './job.ts';
import { chaosPipeline } from './job-chaos.ts';
import { jitterOf } from './occurrence.ts';
import { OCCURRENCE_GRANT, type OccurrenceGrant, occurrenceLeaseStrategy } from './occurrence-lease.ts';
import { onAbortShared } from './shared-abort.ts';
import type { StoreClock } from './store-clock.ts';
import { runInWorker } from './worker-run.ts';

/** Why a fire did not run its job. */
export type SkipReason =
  /** An earlier occurrence was running (here or on another instance) and the overlap policy said skip. */
  | 'overlap'
  /** The run ledger says this occurrence already ran (on this instance or another). */
  | 'already-done'
  /** The fire could not start before the job's starting deadline (or outside its catch-up window). */
  | 'missed'
  /** The job is paused fleet-wide (`resil jobs pause`): the run ledger skipped the fire. */
  | 'paused'
  /** The store could not be reached: the fire fails closed. */
  | 'store-unavailable'
  /**
   * The store answers but is not set up and cannot set itself up (a missing schema, a missing
   * privilege, tables it may not create): the fire fails closed until someone acts on the error,
   * which says what to do.
   */
  | 'store-setup'
  /** The runner was stopping before the job started. */
  | 'shutdown'
  /**
   * The store forgot the occurrence while another instance ran it (a Redis restart without
   * persistence): it is not run again, since it may have completed.
   */
  | 'store-reset';

/** How one fire of a job ended. */
export interface FireResult {
  outcome: 'success' | 'failure' | 'skipped';
  /** Why it was skipped. */
  reason?: SkipReason;
  /** The fencing token the run held (locked jobs that got the lease). */
  token?: number;
  /** The final error of a failure (or the store's error behind `store-unavailable` and `store-setup`). */
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
  /** How many of a job's latest records the ledger keeps (more while they are inside the job's window). */
  readonly ledgerRecordLimit: number;
  /** The logger jobs get as `ctx.logger` (bound to the job, the occurrence and the attempt). */
  readonly logger: SchedulerLogger;
  /** Where the fire's events go (log lines, metrics, ... subscribe there). */
  readonly emit: (event: SchedulerEvent) => void;
  /** The config file and the worker module that runs a job with `isolation: 'worker'` from it. */
  readonly isolation?: { readonly configPath: string; readonly jobWorker: string | URL | undefined };
  /** Bounds the claims in flight (see claim-slots.ts); unbounded without. */
  readonly claims?: ClaimSlots;
}

/** How a fire came about. */
export interface FireOptions {
  /**
   * `scheduled` (a cron fire: starting deadline applies), `catch-up` (an occurrence found missing
   * at start: the catch-up window applies instead), `manual` (`resil jobs run`: runs now, no
   * never-early wait; the overlap policy applies as to a fire, but a `skip` is not recorded),
   * `backfill` (an occurrence of the past: it may start until the starting deadline counted from
   * now).
   */
  kind?: FireKind;
  /**
   * For `manual`: run at once, beside whatever runs, under a lease of its own (the overlap policy
   * is not asked; `resil jobs run --force`).
   */
  force?: boolean;
  /** For `manual` and `backfill`: who asked (`user@host`), recorded with the run. */
  actor?: string;
  /** For `manual` and `backfill`: why, recorded with the run. */
  reason?: string;
  /** Aborts the fire: while it waits it is skipped (`shutdown`), while it runs the job's signal aborts. */
  signal?: AbortSignal;
  /**
   * Aborted when the runner starts stopping: the fire then claims nothing more (a running job
   * keeps its signal until the grace period ends).
   */
  stopping?: AbortSignal;
  /** Called once `run` is about to be called for the first time (the runner's grace period starts mattering). */
  onStart?: () => void;
  /**
   * Called when the fire's first claim has its answer (or failed), or at once for a job without a
   * lock or a fire that sleeps a while before its first claim (a jitter): from then on the fire
   * waits on the job, the store's answers or its own time, not on the claim queue. It may be
   * called more than once, and synchronously from `fire()`.
   */
  onClaimed?: () => void;
  /**
   * Called when the signal of a running attempt aborts (timeout, lost lease, shutdown), with the
   * abort reason and a promise that resolves once that attempt settles: a caller can bound how long
   * it waits for a job that ignores its signal.
   */
  onAttemptAborted?: (reason: unknown, settled: Promise<void>) => void;
}

/** One occurrence being run by a fire (the fire's own, or one the ledger handed it). */
interface FireState {
  readonly scheduledAt: number;
  readonly kind: FireKind;
  readonly onStart: (() => void) | undefined;
  readonly onAttemptAborted: FireOptions['onAttemptAborted'];
  /** True when the ledger granted an occurrence whose holder stopped renewing. */
  takeover: boolean;
  token: number | undefined;
  attempts: number;
  /** Store clock, epoch ms, when the first attempt started. */
  startedAt: number | undefined;
  /** Monotonic, when the first attempt started. */
  startedMono: number | undefined;
  /** The run's async context, made when its first attempt starts. */
  containment: OccurrenceContainment | undefined;
}

/**
 * How long after a lease's expiry (by the store's clock) a watching fire asks again: the store
 * judges the expiry, this only covers the estimate of its clock.
 */
const expiryMarginMs = 25;

/**
 * A claim the store could not answer is asked again after this, doubling up to `max`, each delay
 * drawn between half and all of it (fires that failed together do not come back together), until
 * the occurrence's starting deadline.
 */
export const claimRetryTiming = { initialDelay: 100, maxDelay: 2_000 } as const;

/** What the ledger records of how each kind of fire started. */
const triggers: Record<FireKind, RunTrigger> = {
  scheduled: 'schedule',
  'catch-up': 'catch-up',
  manual: 'manual',
  backfill: 'backfill',
};

const storeResetMessage =
  'not run: the store lost the record of this occurrence while another instance ran it (a restart without persistence?)';

/** The chaos strategies' telemetry events, and the `chaos-injected` event's `chaos` for each. */
const chaosKindOf: Readonly<Record<string, ChaosInjectedEvent['chaos']>> = {
  'Chaos.OnFault': 'fault',
  'Chaos.OnLatency': 'latency',
  'Chaos.OnOutcome': 'outcome',
  'Chaos.OnBehavior': 'behavior',
};

/**
 * A fire that sleeps this long or longer before its first claim (a jitter) tells `onClaimed` at
 * once: the runner does not count it among the fires about to claim. Shorter sleeps (the store
 * clock's uncertainty) keep it counted.
 */
const sleepBeforeClaimMs = 100;

/** The occurrence an execution runs, for the telemetry listener. */
const FIRE_STATE = new ResiliencePropertyKey<FireState>('resil.fireState');

/**
 * Fires one job. With a store that keeps a run ledger, each fire asks the ledger what to do with
 * its occurrence (run it, wait, or skip: see `RunLedger.claimOccurrence`) until it is granted,
 * skipped or done elsewhere, and runs what it is granted through the job's pipeline
 * (occurrence lease -> timeout -> retry -> `run(ctx)`). Every run becomes a {@link FireResult}
 * and one log line.
 */
export class JobFirer {
  readonly job: ResolvedJob;
  readonly #environment: FireEnvironment;
  readonly #pipeline: ResiliencePipeline<unknown>;
  /** The job's chaos strategies, run around each call of `run` inside the attempt; undefined for none. */
  readonly #chaos: ResiliencePipeline<unknown> | undefined;
  readonly #logger: SchedulerLogger;
  /** Runs in progress on this instance (for `lock: false`, the only overlap guard there is, up to `concurrency`). */
  #running = 0;
  /**
   * What the ledger keeps of the job's records, for the retention: the latest `ledgerRecordLimit`,
   * and past that every occurrence a fire may still claim (inside its deadline or catch-up window).
   */
  readonly #trim: Required<LedgerTrim>;

  constructor(job: ResolvedJob, environment: FireEnvironment) {
    this.job = job;
    this.#environment = environment;
    this.#logger = environment.logger.child({ job: job.name });
    this.#trim = {
      retentionMs: environment.ledgerRetentionMs,
      recordLimit: environment.ledgerRecordLimit,
      keepWithinMs: Math.max(job.startingDeadlineMs, job.catchUpMs ?? 0),
    };
    this.#pipeline = this.#build();
    // Its executions are the attempts, not the job's runs: the config's listener measures the latter only.
    this.#chaos = chaosPipeline(job.chaos, {
      timeProvider: environment.time,
      telemetry: this.#listener({ executions: false }),
    });
  }

  /** Runs the occurrence `scheduledAt` through the job's pipeline. Never throws. */
  async fire(scheduledAt: number, options: FireOptions = {}): Promise<FireResult> {
    const { time, ledger } = this.#environment;
    const firedMono = time.monotonic();
    const state = this.#state(scheduledAt, options);
    let result: FireResult;
    try {
      if (this.job.lock !== false && ledger !== undefined) {
        result = await this.#claimAndRun(state, options, ledger);
      } else {
        options.onClaimed?.();
        result = await this.#fireWithoutLedger(state, options.signal);
      }
    } catch (error) {
      // Only a bug gets here: the pipeline settles, the store's errors are handled below.
      result = { outcome: 'failure', error, attempts: state.attempts };
    }
    this.#report(state, result, time.monotonic() - firedMono);
    return result;
  }

  #state(scheduledAt: number, options: FireOptions): FireState {
    return {
      scheduledAt,
      kind: options.kind ?? 'scheduled',
      onStart: options.onStart,
      onAttemptAborted: options.onAttemptAborted,
      takeover: false,
      token: undefined,
      attempts: 0,
      startedAt: undefined,
      startedMono: undefined,
      containment: undefined,
    };
  }

  /** Asks the ledger until the occurrence is granted (and run), skipped or done elsewhere. */
  async #claimAndRun(state: FireState, options: FireOptions, ledger: RunLedger): Promise<FireResult> {
    const { clock, time, instance, claims } = this.#environment;
    const lock = this.job.lock as Exclude<ResolvedJob['lock'], false>;
    const signal = options.signal;
    const manual = state.kind === 'manual';
    let pollDelay: number = lockTiming.pollInitialDelay;
    // Watching a holder costs a claim per poll: back off to a third of the lease, as renewals do.
    const maxWatchDelay = Math.max(lockTiming.pollMaxDelay, lock.ttlMs / lockTiming.renewDivisor);
    // Not before its instant (plus the job's jitter) by this instance's estimate of the store's
    // clock; the store checks the instant too.
    let waitMs = manual ? 0 : this.#startsAt(state) - clock.now() + (clock.offset?.uncertaintyMs ?? 0);
    /** This fire saw its occurrence running on another instance. */
    let sawRunning = false;
    const deadlineMs =
      state.kind === 'catch-up'
        ? (this.job.catchUpMs ?? 0)
        : state.kind === 'backfill'
          ? Math.max(0, Math.round(clock.now()) - state.scheduledAt) + this.job.startingDeadlineMs
          : this.job.startingDeadlineMs;
    const trigger = {
      trigger: triggers[state.kind],
      ...(options.actor === undefined ? {} : { actor: options.actor }),
      ...(options.reason === undefined ? {} : { triggerReason: options.reason }),
    };
    /** The next pause after a claim the store could not answer. */
    let storeRetryDelay: number = claimRetryTiming.initialDelay;
    // Every fire of a runner sleeps on its stopping signal: each links to it through a shared
    // listener (ten thousand fires due together add one listener, not ten thousand).
    const stopping = options.stopping ?? signal;
    let sleepSignal: AbortSignal | undefined;
    let unlinkStopping: (() => void) | undefined;
    const sleepUntilStopped = (): AbortSignal | undefined => {
      if (stopping === undefined || stopping.aborted) return stopping;
      if (sleepSignal === undefined) {
        const controller = new AbortController();
        unlinkStopping = onAbortShared(stopping, () => controller.abort(stopping.reason));
        sleepSignal = controller.signal;
      }
      return sleepSignal;
    };
    // While the occurrence is queued behind a running one, a release of the key wakes this fire
    // for a claim at once; the polls stay the floor.
    let wakeUp: ReleaseWakeUp | undefined;
    // Sleeping a while before its first claim (a jitter): not one of the fires about to claim.
    if (waitMs >= sleepBeforeClaimMs) options.onClaimed?.();
    try {
      for (;;) {
        let woken = false;
        // Under a millisecond a timer would wait a whole one: ask now, the store never grants early.
        if (waitMs >= 1) {
          const until = sleepUntilStopped();
          try {
            await (wakeUp ? wakeUp.sleep(time, waitMs, until) : delay(time, waitMs, until));
          } catch {
            return { outcome: 'skipped', reason: 'shutdown' };
          }
          woken = wakeUp?.consume() ?? false;
        }
        // A slot first: past a few hundred claims in flight, a fire waits here rather than in the store.
        const slot = claims?.take();
        if (slot !== undefined) await slot;
        let claim: ClaimResult;
        let requestedAt: number;
        try {
          if (signal?.aborted || stopping?.aborted) return { outcome: 'skipped', reason: 'shutdown' };
          // Before the request: the holder never believes in its lease longer than the store does.
          requestedAt = time.monotonic();
          claim = await ledger.claimOccurrence({
            job: this.job.name,
            key: lock.key,
            scheduledAt: state.scheduledAt,
            owner: `${instance}/${randomOwnerId()}`,
            instance,
            ttlMs: lock.ttlMs,
            overlap: this.job.overlap,
            ...((this.job.concurrency ?? 1) > 1 ? { concurrency: this.job.concurrency } : {}),
            startingDeadlineMs: deadlineMs,
            manual,
            ...(manual && options.force === true ? { force: true } : {}),
            ...trigger,
            ...this.#trim,
          });
        } catch (error) {
          // A key the store cannot keep fails the same way every time: a failure, not an outage.
          if (isInvalidKeyError(error)) return { outcome: 'failure', error };
          // A store that is not set up stays so until someone sets it up: said at once.
          if (isStoreSetupError(error)) return { outcome: 'skipped', reason: 'store-setup', error };
          // A store that did not answer (down, or too busy to answer in time) may answer the next
          // claim: the occurrence may start until its deadline, so ask again until then. A manual
          // run's caller is waiting for an answer; any other error will not go away by asking.
          if (manual || !isStoreUnavailableError(error)) {
            return { outcome: 'skipped', reason: 'store-unavailable', error };
          }
          const pause = storeRetryDelay * (0.5 + Math.random() / 2);
          if (clock.now() + pause > state.scheduledAt + deadlineMs) {
            return { outcome: 'skipped', reason: 'store-unavailable', error };
          }
          storeRetryDelay = Math.min(storeRetryDelay * 2, claimRetryTiming.maxDelay);
          waitMs = pause;
          continue;
        } finally {
          if (claims !== undefined) claims.give();
          options.onClaimed?.();
        }
        storeRetryDelay = claimRetryTiming.initialDelay;
        if (claim.status === 'skipped') return { outcome: 'skipped', reason: claim.reason };
        if (claim.status === 'wait') {
          // Ask again by the time the blocking lease would expire (a takeover is due then), and
          // before that with a backoff: the holder may finish early (a watcher then sees
          // `already-done`), or a queued occurrence's turn may come.
          let untilRetry = this.#untilStoreTime(claim.retryAt, claim.runningElsewhere);
          if (untilRetry <= 0) {
            // Past by this instance's estimate of the store's clock: the estimate is off (a failed
            // sync, a clock step). Learn it again; if that fails, back off rather than spin.
            await clock.sync().catch(() => {});
            untilRetry = this.#untilStoreTime(claim.retryAt, claim.runningElsewhere);
          }
          // Not due yet: nothing changes before its instant. Otherwise the holder may finish early.
          const notDue = !claim.runningElsewhere && claim.retryAt === state.scheduledAt;
          waitMs = untilRetry <= 0 ? pollDelay : notDue ? untilRetry : Math.min(pollDelay, untilRetry);
          // A claim on a notification is an extra one: the poll cadence goes on where it was.
          if (!woken) {
            pollDelay = Math.min(
              pollDelay * 2,
              claim.runningElsewhere ? maxWatchDelay : lockTiming.pollMaxDelay,
            );
          }
          sawRunning ||= claim.runningElsewhere;
          // Queued behind another occurrence: its finish frees the key for this one. Watching
          // this occurrence run elsewhere, a finish only means already-done, and every instance
          // of a fleet watches every occurrence: those fires poll, with no subscription each.
          if (!notDue && !claim.runningElsewhere)
            wakeUp ??= new ReleaseWakeUp(this.#environment.store, lock.key);
          continue;
        }
        const { lease } = claim;
        // Granted: no more waiting on the key while the occurrence runs.
        wakeUp?.close();
        wakeUp = undefined;
        if (signal?.aborted || stopping?.aborted) {
          // Granted while the runner began to stop: give the lease back (it expires at once, and
          // another instance takes the occurrence over) rather than hold it for a ttl.
          await ledger.renewOccurrence(lease, 1).catch(() => {});
          return { outcome: 'skipped', reason: 'shutdown' };
        }
        if (lease.scheduledAt === state.scheduledAt && sawRunning && !claim.takeover) {
          // A running occurrence only ever ends or is taken over: granted afresh, the store lost its
          // record (a Redis restart without persistence). It may well have completed: do not run it.
          await ledger
            .finishOccurrence(lease, { outcome: 'failure', error: storeResetMessage })
            .catch(() => {});
          return { outcome: 'skipped', reason: 'store-reset' };
        }
        if (lease.scheduledAt === state.scheduledAt) {
          state.takeover = claim.takeover;
          return this.#run(state, signal, { lease, requestedAt });
        }
        // An older occurrence goes first: run it as this fire's own business, then ask again.
        // It is a scheduled occurrence of the job's, whatever brought this fire about.
        const handed = this.#state(lease.scheduledAt, { ...options, kind: 'scheduled' });
        handed.takeover = claim.takeover;
        const firedMono = time.monotonic();
        const result = await this.#run(handed, signal, { lease, requestedAt });
        this.#report(handed, result, time.monotonic() - firedMono);
        pollDelay = lockTiming.pollInitialDelay;
        waitMs = 0;
      }
    } finally {
      wakeUp?.close();
      unlinkStopping?.();
    }
  }

  /** When, by the store's clock, the occurrence's fires first try to start: its instant plus its jitter. */
  #startsAt(state: FireState): number {
    return state.scheduledAt + jitterOf(this.job, state.scheduledAt);
  }

  /**
   * ms until the store's clock reaches `storeTime`, by this instance's estimate: past a lease's
   * expiry by a margin (the store judges it), at a not-yet-due instant with the estimate's doubt.
   */
  #untilStoreTime(storeTime: number, leaseExpiry: boolean): number {
    const { clock } = this.#environment;
    const margin = leaseExpiry ? expiryMarginMs : (clock.offset?.uncertaintyMs ?? 0);
    return storeTime - clock.now() + margin;
  }

  /** Without a run ledger: the lock alone (or, for `lock: false`, this instance) guards overlap. */
  async #fireWithoutLedger(state: FireState, signal: AbortSignal | undefined): Promise<FireResult> {
    const { clock } = this.#environment;
    if (state.kind !== 'manual') {
      const deadlineMs = state.kind === 'catch-up' ? (this.job.catchUpMs ?? 0) : this.job.startingDeadlineMs;
      if (clock.now() - state.scheduledAt > deadlineMs) return { outcome: 'skipped', reason: 'missed' };
      try {
        await clock.waitUntil(this.#startsAt(state), signal);
      } catch (error) {
        if (signal?.aborted && error === signal.reason) return { outcome: 'skipped', reason: 'shutdown' };
        return { outcome: 'skipped', reason: 'store-unavailable', error };
      }
    }
    if (this.job.lock === false && this.#running >= (this.job.concurrency ?? 1)) {
      return { outcome: 'skipped', reason: 'overlap' };
    }
    return this.#run(state, signal, undefined);
  }

  /** Runs one occurrence through the pipeline, under `lease` when the ledger granted one. */
  async #run(
    state: FireState,
    signal: AbortSignal | undefined,
    grant: OccurrenceGrant | undefined,
  ): Promise<FireResult> {
    const properties = new ResilienceProperties();
    properties.set(FIRE_STATE, state);
    if (grant !== undefined) {
      state.token = grant.lease.token;
      properties.set(OCCURRENCE_GRANT, grant);
    }
    this.#running++;
    let outcome: Outcome<unknown, unknown>;
    try {
      outcome = await this.#pipeline.settle((context) => this.#attempt(state, context), {
        signal,
        operationKey: new Date(state.scheduledAt).toISOString(),
        properties,
      });
    } finally {
      this.#running--;
    }
    const base: Pick<FireResult, 'token' | 'attempts'> = {};
    if (state.token !== undefined) base.token = state.token;
    if (state.attempts > 0) base.attempts = state.attempts;
    if (outcome.ok) return { outcome: 'success', ...base };
    const error = outcome.error;
    if (state.attempts > 0) return { outcome: 'failure', error, ...base };
    // The job never ran: aborted before it started, or (without a ledger) the lock said no.
    if (signal?.aborted && error === signal.reason)
      return { outcome: 'skipped', reason: 'shutdown', ...base };
    if (isLockNotAcquiredError(error)) return { outcome: 'skipped', reason: 'overlap', ...base };
    if (isInvalidKeyError(error)) return { outcome: 'failure', error, ...base };
    if (isStoreSetupError(error)) return { outcome: 'skipped', reason: 'store-setup', error, ...base };
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
    if (attempt === 1) {
      this.#environment.emit({
        ...this.#eventBase(state),
        type: 'started',
        token,
        takeover: state.takeover,
        lateMs: this.#lateMs(state),
      });
    }
    // An error that escapes the job's code (a promise nobody awaits, a timer that throws) is
    // attributed to this run by the async context entered around `run` (see containment.ts).
    state.containment ??= new OccurrenceContainment(this.job.name, scheduledAt, (error, origin) =>
      this.#environment.emit({ ...this.#eventBase(state), type: 'stray-error', origin, error }),
    );
    const contained = state.containment.attempt(context.signal);
    const { signal } = context;
    const jobLogger = this.#logger;
    let logger: JobLogger | undefined;
    const ctx: JobContext = {
      // Joined with the containment's abort only when the job reads it.
      get signal() {
        return contained.signal;
      },
      job: this.job.name,
      scheduledAt,
      attempt,
      // Made when the job first asks for it: most jobs of a busy instant never log.
      get logger(): JobLogger {
        logger ??= jobLogger.child({ scheduledAt: scheduledAt.toISOString(), attempt });
        return logger;
      },
      token,
    };
    const run = () => (this.job.isolation === 'worker' ? this.#runInWorker(ctx) : this.job.run(ctx));
    const chaos = this.#chaos;
    // The chaos strategies run inside the attempt: an injected fault is an attempt that failed (counted,
    // retried, recorded), an injected latency waits on the attempt's signal.
    const running = contained.run(
      chaos === undefined
        ? run
        : () =>
            chaos.execute(run, {
              signal,
              operationKey: context.operationKey,
              properties: context.properties,
            }),
    );
    // Told the moment the signal aborts, not when the job settles: a job that ignores its signal
    // may never settle, and the timeout strategy reports only after it does.
    const onAbort = () => {
      const reason = signal.reason;
      if (isTimeoutRejectedError(reason)) {
        this.#environment.emit({
          ...this.#eventBase(state),
          type: 'timed-out',
          attempt,
          timeoutMs: reason.timeout,
        });
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

  /** One attempt in a worker thread of its own (`isolation: 'worker'`). */
  #runInWorker(ctx: JobContext): Promise<void> {
    const isolation = this.#environment.isolation;
    if (isolation?.jobWorker === undefined) {
      throw new Error(
        "isolation 'worker' needs a worker module that loads the job from its config file (the resil CLI sets one)",
      );
    }
    return runInWorker(ctx, {
      entry: isolation.jobWorker,
      configPath: isolation.configPath,
      resourceLimits: this.job.resourceLimits,
    });
  }

  #build(): ResiliencePipeline<unknown> {
    const job = this.job;
    const { time, store, ledger } = this.#environment;
    let builder = new PipelineBuilder<unknown>({
      timeProvider: time,
      telemetry: this.#listener({ executions: true }),
    });
    if (job.lock !== false && ledger !== undefined) {
      builder = builder.add(
        occurrenceLeaseStrategy({
          ledger,
          ttlMs: job.lock.ttlMs,
          trim: this.#trim,
          onFinishFailed: (lease, error, context) => {
            const state = context.properties.get(FIRE_STATE);
            if (state === undefined) return;
            this.#environment.emit({
              ...this.#eventBase(state),
              type: 'finish-failed',
              token: lease.token,
              error,
            });
          },
        }),
      );
    } else if (job.lock !== false) {
      const key = job.lock.key;
      builder = builder.add(
        lockStrategy({
          key: () => key,
          ttl: job.lock.ttlMs,
          store,
          // `<instance>/<uuid>`: `resil lock status` can then say which instance holds the lease.
          ownerPrefix: this.#environment.instance,
        }),
      );
    }
    if (job.timeoutMs !== undefined) builder = builder.add(timeoutStrategy(job.timeoutMs));
    if (job.retry !== false) builder = builder.add(retryStrategy(job.retry));
    return builder.build();
  }

  /**
   * The telemetry listener of the job's pipelines: scheduler events, and the config's listener (with
   * its `onPipelineExecuted` when `executions`).
   */
  #listener(options: { executions: boolean }): TelemetryListener {
    const own = (event: TelemetryEvent) => this.#telemetry(event);
    return this.job.telemetry === undefined ? own : alongside(own, this.job.telemetry, options);
  }

  /** Pipeline telemetry as scheduler events: retries, lost leases, store errors and chaos injections. */
  #telemetry(event: TelemetryEvent): void {
    const state = event.context.properties.get(FIRE_STATE);
    if (state === undefined) return;
    const args = event.args as {
      attemptNumber?: number;
      retryDelay?: number;
      outcome?: Outcome<unknown, unknown>;
      error?: unknown;
      key?: string;
    };
    const base = this.#eventBase(state);
    if (event.event === 'OnRetry') {
      this.#environment.emit({
        ...base,
        type: 'retrying',
        attempt: (args.attemptNumber ?? 0) + 1,
        delayMs: args.retryDelay ?? 0,
        error: args.outcome?.error,
      });
    } else if (event.event === 'OnLockLost') {
      this.#environment.emit({ ...base, type: 'lock-lost', key: args.key ?? '' });
    } else if (Object.hasOwn(chaosKindOf, event.event)) {
      const { fault, latency, outcome } = event.args as {
        fault?: unknown;
        latency?: number;
        outcome?: Outcome<unknown, unknown>;
      };
      const error = fault ?? (outcome?.ok === false ? outcome.error : undefined);
      this.#environment.emit({
        ...base,
        type: 'chaos-injected',
        attempt: state.attempts,
        chaos: chaosKindOf[event.event]!,
        ...(latency === undefined ? {} : { latencyMs: latency }),
        ...(error === undefined ? {} : { error }),
      });
    } else if (args.error !== undefined) {
      this.#environment.emit({ ...base, type: 'store-error', error: args.error });
    }
  }

  #eventBase(state: FireState) {
    return {
      job: this.job.name,
      scheduledAt: new Date(state.scheduledAt),
      instance: this.#environment.instance,
      kind: state.kind,
    };
  }

  #lateMs(state: FireState): number | undefined {
    return state.startedAt === undefined || state.kind === 'manual'
      ? undefined
      : state.startedAt - state.scheduledAt;
  }

  /** The fire's end as one event: `succeeded`, `failed` or `skipped`. */
  #report(state: FireState, result: FireResult, elapsedMs: number): void {
    const { time, clock, emit } = this.#environment;
    const base = this.#eventBase(state);
    if (result.outcome === 'skipped') {
      emit({
        ...base,
        type: 'skipped',
        reason: result.reason!,
        durationMs: elapsedMs,
        lateMs: result.reason === 'missed' ? clock.now() - state.scheduledAt : undefined,
        ...(result.error === undefined ? {} : { error: result.error }),
      });
      return;
    }
    emit({
      ...base,
      type: result.outcome === 'success' ? 'succeeded' : 'failed',
      token: result.token,
      takeover: state.takeover,
      attempts: result.attempts ?? 0,
      durationMs: state.startedMono === undefined ? elapsedMs : time.monotonic() - state.startedMono,
      lateMs: this.#lateMs(state),
      ...(result.outcome === 'failure'
        ? { error: result.error, ...(isFenceRejection(result.error) ? { fenceRejected: true } : {}) }
        : {}),
    });
  }
}

/**
 * The scheduler's own listener, then the config's for the job (with its `onPipelineExecuted` when
 * `executions`).
 */
function alongside(
  own: (event: TelemetryEvent) => void,
  configured: TelemetryListener,
  options: { executions: boolean },
): TelemetryListener {
  const both = (event: TelemetryEvent) => {
    own(event);
    configured(event);
  };
  const { onPipelineExecuted } = configured;
  return onPipelineExecuted === undefined || !options.executions
    ? both
    : Object.assign(both, { onPipelineExecuted: onPipelineExecuted.bind(configured) });
}

/** The ledger refused the run's finish: the error itself, or the lost lease it explains. */
function isFenceRejection(error: unknown): boolean {
  return isStaleTokenError(error) || (error instanceof Error && isStaleTokenError(error.cause));
}
