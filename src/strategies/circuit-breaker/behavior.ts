import type { HealthInfo, HealthMetrics } from './health-metrics.ts';
import type { CircuitState } from './options.ts';

/** Decides when a closed circuit breaks. The controller calls it for every outcome. */
export interface CircuitBehavior {
  /** An outcome `shouldHandle` did not count as a failure. */
  onUnhandledOutcome(state: CircuitState): void;
  /** A handled failure; returns true when a closed circuit must break. */
  onHandledOutcome(state: CircuitState): boolean;
  onCircuitClosed(): void;
  /** Figures for `breakDurationGenerator`. */
  healthInfo(): HealthInfo;
}

/**
 * Polly's advanced circuit breaker: breaks when, over the sampling duration, at least
 * `minimumThroughput` executions ran and the share of failures reached `failureRatio`.
 * Outcomes of executions that were already running when the circuit opened still count, so that
 * the ratio stays true; a failed probe does not (the circuit re-opens on it anyway).
 */
export class FailureRatioBehavior implements CircuitBehavior {
  readonly #failureRatio: number;
  readonly #minimumThroughput: number;
  readonly #metrics: HealthMetrics;

  constructor(failureRatio: number, minimumThroughput: number, metrics: HealthMetrics) {
    this.#failureRatio = failureRatio;
    this.#minimumThroughput = minimumThroughput;
    this.#metrics = metrics;
  }

  onUnhandledOutcome(): void {
    this.#metrics.incrementSuccess();
  }

  onHandledOutcome(state: CircuitState): boolean {
    if (state === 'half-open') return false;
    this.#metrics.incrementFailure();
    if (state !== 'closed') return false;
    const info = this.#metrics.healthInfo();
    return info.throughput >= this.#minimumThroughput && info.failureRate >= this.#failureRatio;
  }

  onCircuitClosed(): void {
    this.#metrics.reset();
  }

  healthInfo(): HealthInfo {
    return this.#metrics.healthInfo();
  }
}

/** cockatiel's ConsecutiveBreaker: breaks after `threshold` handled failures in a row while closed. */
export class ConsecutiveFailuresBehavior implements CircuitBehavior {
  readonly #threshold: number;
  #consecutiveFailures = 0;

  constructor(threshold: number) {
    this.#threshold = threshold;
  }

  onUnhandledOutcome(state: CircuitState): void {
    if (state === 'closed') this.#consecutiveFailures = 0;
  }

  onHandledOutcome(state: CircuitState): boolean {
    if (state !== 'closed') return false;
    this.#consecutiveFailures++;
    return this.#consecutiveFailures >= this.#threshold;
  }

  onCircuitClosed(): void {
    this.#consecutiveFailures = 0;
  }

  healthInfo(): HealthInfo {
    const failures = this.#consecutiveFailures;
    return { throughput: failures, failureRate: failures > 0 ? 1 : 0, failureCount: failures };
  }
}
