import type { TimeProvider } from '../../pipeline/time.ts';
import { healthMetricsLayout } from './defaults.ts';

/** Executions and failures sampled over the sampling duration. */
export interface HealthInfo {
  readonly throughput: number;
  readonly failureRate: number;
  readonly failureCount: number;
}

/** Success and failure counts over a sampling duration (Polly's HealthMetrics). */
export interface HealthMetrics {
  incrementSuccess(): void;
  incrementFailure(): void;
  reset(): void;
  healthInfo(): HealthInfo;
}

/**
 * Rolling windows when the sampling duration is long enough to cut into ten of them; otherwise a
 * single window that restarts each sampling duration.
 */
export function createHealthMetrics(samplingDuration: number, time: TimeProvider): HealthMetrics {
  const { numberOfWindows, windowResolution } = healthMetricsLayout;
  return samplingDuration < windowResolution * numberOfWindows
    ? new SingleHealthMetrics(samplingDuration, time)
    : new RollingHealthMetrics(samplingDuration, numberOfWindows, time);
}

function healthInfo(successes: number, failures: number): HealthInfo {
  const throughput = successes + failures;
  return { throughput, failureRate: throughput === 0 ? 0 : failures / throughput, failureCount: failures };
}

/**
 * The sampling duration as a queue of windows, each opened by the first outcome at least a window
 * length after the previous one started; a window leaves the queue, and its counts the totals, once
 * it started a whole sampling duration ago. The windows live in a fixed ring, so recording an
 * outcome never allocates.
 */
export class RollingHealthMetrics implements HealthMetrics {
  readonly #samplingDuration: number;
  readonly #windowDuration: number;
  readonly #time: TimeProvider;
  // Windows start at least a window length apart and the oldest started less than a sampling
  // duration ago, so at most numberOfWindows are live; one spare slot absorbs rounding.
  readonly #startedAt: number[];
  readonly #windowSuccesses: number[];
  readonly #windowFailures: number[];
  #oldest = 0;
  #live = 0;
  #successes = 0;
  #failures = 0;

  constructor(samplingDuration: number, numberOfWindows: number, time: TimeProvider) {
    this.#samplingDuration = samplingDuration;
    this.#windowDuration = samplingDuration / numberOfWindows;
    this.#time = time;
    const capacity = numberOfWindows + 1;
    this.#startedAt = new Array<number>(capacity).fill(0);
    this.#windowSuccesses = new Array<number>(capacity).fill(0);
    this.#windowFailures = new Array<number>(capacity).fill(0);
  }

  incrementSuccess(): void {
    this.#successes++;
    this.#windowSuccesses[this.#currentWindow()]!++;
  }

  incrementFailure(): void {
    this.#failures++;
    this.#windowFailures[this.#currentWindow()]!++;
  }

  reset(): void {
    this.#oldest = 0;
    this.#live = 0;
    this.#successes = 0;
    this.#failures = 0;
  }

  healthInfo(): HealthInfo {
    this.#currentWindow();
    return healthInfo(this.#successes, this.#failures);
  }

  /** Opens a window when the current one is over, drops expired ones, returns the current slot. */
  #currentWindow(): number {
    const now = this.#time.monotonic();
    const capacity = this.#startedAt.length;
    let current = (this.#oldest + this.#live - 1) % capacity;
    if (this.#live === 0 || now - this.#startedAt[current]! >= this.#windowDuration) {
      if (this.#live === capacity) this.#dropOldest();
      current = (this.#oldest + this.#live) % capacity;
      this.#startedAt[current] = now;
      this.#windowSuccesses[current] = 0;
      this.#windowFailures[current] = 0;
      this.#live++;
    }
    // The current window started at most `now`, so it is never dropped here.
    while (now - this.#startedAt[this.#oldest]! >= this.#samplingDuration) this.#dropOldest();
    return current;
  }

  #dropOldest(): void {
    const oldest = this.#oldest;
    this.#successes -= this.#windowSuccesses[oldest]!;
    this.#failures -= this.#windowFailures[oldest]!;
    this.#oldest = (oldest + 1) % this.#startedAt.length;
    this.#live--;
  }
}

/** One window for the whole sampling duration, restarted by the first outcome after it ends. */
export class SingleHealthMetrics implements HealthMetrics {
  readonly #samplingDuration: number;
  readonly #time: TimeProvider;
  #startedAt: number;
  #successes = 0;
  #failures = 0;

  constructor(samplingDuration: number, time: TimeProvider) {
    this.#samplingDuration = samplingDuration;
    this.#time = time;
    this.#startedAt = time.monotonic();
  }

  incrementSuccess(): void {
    this.#restartWhenOver();
    this.#successes++;
  }

  incrementFailure(): void {
    this.#restartWhenOver();
    this.#failures++;
  }

  reset(): void {
    this.#startedAt = this.#time.monotonic();
    this.#successes = 0;
    this.#failures = 0;
  }

  healthInfo(): HealthInfo {
    this.#restartWhenOver();
    return healthInfo(this.#successes, this.#failures);
  }

  #restartWhenOver(): void {
    if (this.#time.monotonic() - this.#startedAt >= this.#samplingDuration) this.reset();
  }
}
