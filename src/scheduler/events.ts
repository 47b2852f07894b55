import type { StrayErrorOrigin } from './containment.ts';
import type { SkipReason } from './fire.ts';

/**
 * How a fire came about: a cron fire, a catch-up at start, a manual run (`jobs run`, `trigger()`),
 * or an occurrence of `resil jobs backfill`.
 */
export type FireKind = 'scheduled' | 'catch-up' | 'manual' | 'backfill';

/** What every event of one occurrence carries. */
export interface OccurrenceEventBase {
  /** The job's name. */
  readonly job: string;
  /** The occurrence: the instant its schedule named (for a manual run, when it was asked for). */
  readonly scheduledAt: Date;
  /** The instance that emitted the event. */
  readonly instance: string;
  readonly kind: FireKind;
}

/** The job's `run` is called for the first time for this occurrence. */
export interface StartedEvent extends OccurrenceEventBase {
  readonly type: 'started';
  /** The fencing token of the occurrence's lease (locked jobs). */
  readonly token: number | undefined;
  /** True when this instance took over an occurrence whose holder stopped renewing. */
  readonly takeover: boolean;
  /** Start minus `scheduledAt`, by the store's clock (not for manual runs). */
  readonly lateMs: number | undefined;
}

/** The run ended: `succeeded` or `failed` (the final error, after retries). */
export interface FinishedEvent extends OccurrenceEventBase {
  readonly type: 'succeeded' | 'failed';
  readonly token: number | undefined;
  readonly takeover: boolean;
  /** How many times `run` was called (1 + retries). */
  readonly attempts: number;
  /** Run time of the job, all attempts, ms. */
  readonly durationMs: number;
  readonly lateMs: number | undefined;
  /** For `failed`: the final error. */
  readonly error?: unknown;
  /** For `failed`: the ledger refused the finish because another instance took the occurrence over. */
  readonly fenceRejected?: boolean;
}

/** The fire did not run the job, and why. */
export interface SkippedEvent extends OccurrenceEventBase {
  readonly type: 'skipped';
  readonly reason: SkipReason;
  /** How long the decision took, ms. */
  readonly durationMs: number;
  /** For `missed`: how late the fire was, by the store's clock. */
  readonly lateMs: number | undefined;
  /** For `store-unavailable` and `store-setup`: the store's error. */
  readonly error?: unknown;
}

/** An attempt failed and the retry strategy will try again after `delayMs`. */
export interface RetryingEvent extends OccurrenceEventBase {
  readonly type: 'retrying';
  /** The attempt that failed (1 for the first). */
  readonly attempt: number;
  readonly delayMs: number;
  readonly error: unknown;
}

/** An attempt's timeout fired: its signal is aborted (the attempt may still be settling). */
export interface TimedOutEvent extends OccurrenceEventBase {
  readonly type: 'timed-out';
  readonly attempt: number;
  readonly timeoutMs: number;
}

/** The lease was lost while the job ran (taken over, cancelled, or not renewed in time): its signal is aborted. */
export interface LockLostEvent extends OccurrenceEventBase {
  readonly type: 'lock-lost';
  readonly key: string;
}

/** A store call behind the lease failed (a renewal, a release); the lease logic retries or gives up. */
export interface StoreErrorEvent extends OccurrenceEventBase {
  readonly type: 'store-error';
  readonly error: unknown;
}

/** The run ended but the ledger could not record it: another instance may run it again. */
export interface FinishFailedEvent extends OccurrenceEventBase {
  readonly type: 'finish-failed';
  readonly token: number;
  readonly error: unknown;
}

/**
 * One of the job's chaos strategies (its `chaos` option) injected into an attempt: the attempt's
 * outcome, told as any other, may come from it rather than from the job's own code.
 */
export interface ChaosInjectedEvent extends OccurrenceEventBase {
  readonly type: 'chaos-injected';
  /** The attempt injected into (1 for the first). */
  readonly attempt: number;
  /** The strategy that injected: `'fault'`, `'latency'`, `'outcome'` or `'behavior'`. */
  readonly chaos: 'fault' | 'latency' | 'outcome' | 'behavior';
  /** The injected delay, for `'latency'`. */
  readonly latencyMs?: number;
  /** The injected error: the fault, or the error of an injected outcome. */
  readonly error?: unknown;
}

/**
 * An error escaped a job's code after the attempt it came from had ended (a rejection or a throw
 * from a timer the job left behind): the recorded outcome stands; this reports it.
 */
export interface StrayErrorEvent extends OccurrenceEventBase {
  readonly type: 'stray-error';
  readonly origin: StrayErrorOrigin;
  readonly error: unknown;
}

/** Everything the scheduler tells its subscribers (log lines, metrics, a dashboard). */
export type SchedulerEvent =
  | StartedEvent
  | FinishedEvent
  | SkippedEvent
  | RetryingEvent
  | TimedOutEvent
  | LockLostEvent
  | StoreErrorEvent
  | FinishFailedEvent
  | StrayErrorEvent
  | ChaosInjectedEvent;

export type SchedulerListener = (event: SchedulerEvent) => void;

/**
 * The scheduler's event stream: listeners in subscription order, each called synchronously; a
 * listener that throws is ignored, so one subscriber cannot break a fire or another subscriber.
 */
export class SchedulerEvents {
  readonly #listeners = new Set<SchedulerListener>();

  /** Subscribes `listener`; returns the function that unsubscribes it. */
  on(listener: SchedulerListener): () => void {
    if (typeof listener !== 'function') throw new TypeError('on(listener) needs a function');
    // A wrapper, so the same function subscribed twice gets two subscriptions, each removable.
    const entry: SchedulerListener = (event) => listener(event);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  emit(event: SchedulerEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A subscriber's bug is not the fire's problem.
      }
    }
  }
}
