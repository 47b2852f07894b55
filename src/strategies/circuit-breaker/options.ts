import type { ResilienceContext } from '../../pipeline/context.ts';
import type { Duration } from '../../pipeline/duration.ts';
import type { Outcome } from '../../pipeline/outcome.ts';
import type { CircuitBreakerManualControl, CircuitBreakerStateProvider } from './manual-control.ts';
import type { SharedCircuitStore } from './shared.ts';

/**
 * `closed`: executions flow and outcomes are sampled. `open`: executions are rejected with
 * `BrokenCircuitError` until the break duration has passed. `half-open`: one probe execution is
 * let through; its outcome closes or re-opens the circuit. `isolated`: held open by
 * `CircuitBreakerManualControl.isolate()` until `close()`.
 */
export type CircuitState = 'closed' | 'open' | 'half-open' | 'isolated';

export interface CircuitBreakerPredicateArguments {
  /** The execution's outcome: `outcome.ok` with `value`, or `error`. */
  readonly outcome: Outcome<unknown, unknown>;
  readonly context: ResilienceContext;
}

export interface BreakDurationGeneratorArguments {
  /** Failures / executions in the sampling duration (1 in consecutive-failures mode once a failure counted). */
  readonly failureRate: number;
  /** Failures in the sampling duration (in consecutive-failures mode: the run of failures). */
  readonly failureCount: number;
  /** How many times the circuit went half-open since it last closed: 0 on the first break. */
  readonly halfOpenAttempts: number;
  readonly context: ResilienceContext;
}

export interface OnCircuitOpenedArguments {
  readonly context: ResilienceContext;
  /** The outcome that broke the circuit; `undefined` when `isManual`. */
  readonly outcome: Outcome<unknown, unknown> | undefined;
  /** How long the circuit stays open, in milliseconds (`Infinity` when isolated). */
  readonly breakDuration: number;
  /** True when `CircuitBreakerManualControl.isolate()` opened it. */
  readonly isManual: boolean;
}

export interface OnCircuitClosedArguments {
  readonly context: ResilienceContext;
  /** The outcome that closed the circuit (the probe's); `undefined` when `isManual`. */
  readonly outcome: Outcome<unknown, unknown> | undefined;
  /** True when `CircuitBreakerManualControl.close()` closed it. */
  readonly isManual: boolean;
}

export interface OnCircuitHalfOpenedArguments {
  /** The context of the probe execution. */
  readonly context: ResilienceContext;
}

/**
 * Options of the circuit breaker. By default it breaks on a failure ratio sampled over time
 * (Polly's advanced circuit breaker); set `consecutiveFailures` instead to break after that many
 * failures in a row (cockatiel's ConsecutiveBreaker).
 */
export interface CircuitBreakerStrategyOptions {
  /**
   * Share of handled failures among the executions of the sampling duration at which the circuit
   * breaks: 0.5 breaks when half or more failed. Defaults to 0.1. Above 0, up to 1.
   */
  failureRatio?: number;
  /**
   * Executions the sampling duration must hold before the ratio counts, so that two failures out of
   * three at night do not break the circuit. Defaults to 100. At least 2.
   */
  minimumThroughput?: number;
  /**
   * How far back outcomes are sampled, in ten rolling windows: outcomes older than this stop
   * counting, a tenth of the duration at a time. Defaults to 30 s. From 500 ms to 1 day.
   */
  samplingDuration?: Duration;
  /**
   * Breaks after this many handled failures in a row instead of on a ratio; any unhandled outcome
   * (a success) resets the count. Cannot be combined with `failureRatio`, `minimumThroughput` or
   * `samplingDuration`. Defaults to off. At least 1.
   */
  consecutiveFailures?: number;
  /** How long the circuit stays open before a probe is let through. Defaults to 5 s. From 500 ms to 1 day. */
  breakDuration?: Duration;
  /**
   * Chooses the break duration each time the circuit opens (e.g. longer after each failed probe:
   * `({ halfOpenAttempts }) => 2 ** halfOpenAttempts * 1_000`). Synchronous, since the state changes
   * at once; a result that is not a valid duration, or a throw, keeps `breakDuration`.
   */
  breakDurationGenerator?: (args: BreakDurationGeneratorArguments) => Duration;
  /**
   * Decides whether an outcome counts as a failure. Defaults to every error except an abort of the
   * caller's signal; successful values count as successes. If it throws, the execution fails with
   * its error and the outcome is not counted.
   */
  shouldHandle?: (args: CircuitBreakerPredicateArguments) => boolean | PromiseLike<boolean>;
  /** Called when the circuit opens (also when isolated); the execution that opened it waits for it. */
  onOpened?: (args: OnCircuitOpenedArguments) => void | PromiseLike<void>;
  /** Called when the circuit closes; the execution (or `close()`) that closed it waits for it. */
  onClosed?: (args: OnCircuitClosedArguments) => void | PromiseLike<void>;
  /** Called when the circuit goes half-open; the probe execution starts after it. */
  onHalfOpened?: (args: OnCircuitHalfOpenedArguments) => void | PromiseLike<void>;
  /** Lets you isolate (hold open) and close the circuit by hand. One control may serve several breakers. */
  manualControl?: CircuitBreakerManualControl;
  /** Reports the circuit's state. One provider per breaker. */
  stateProvider?: CircuitBreakerStateProvider;
  /**
   * Shares the circuit with every process whose breaker has the same `store` and `key`
   * (`MemoryLockStore`, `RedisLockStore`, `PostgresLockStore`, `MysqlLockStore`): their outcomes
   * count towards one failure ratio, an opening rejects calls everywhere within about a second, one call in the whole
   * fleet probes after the break, and `manualControl` acts on all of them. Calls on a closed circuit
   * make no store round trip: counts and state are synced in the background, every 250 ms per
   * breaker. While the store cannot be reached each process falls back to its own breaker. Not with
   * `consecutiveFailures`. Defaults to none: the circuit is this pipeline's own.
   */
  store?: SharedCircuitStore;
  /** The shared circuit's name in `store`; required with `store`. */
  key?: string;
}
