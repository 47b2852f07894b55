import type { StrategyEnvironment } from '../../pipeline/strategy.ts';
import type { CircuitBehavior } from './behavior.ts';
import type { CircuitController } from './controller.ts';
import type { CircuitBreakerStrategyOptions } from './options.ts';

/**
 * A change of a shared circuit's state that one instance asks the store for, in the same round
 * trip as its counts. The breaker decides every transition; the store only applies it atomically,
 * under its guard:
 * - `open`: the fleet's counts reached the failure ratio; applied only while the circuit is still
 *   closed at the generation the instance saw (`CircuitSync.generation`), so that of several
 *   instances deciding at once one opens it;
 * - `close` / `reopen`: the outcome of the half-open probe, applied only while this instance
 *   (`owner`) still holds the probe lease that {@link SharedCircuits.claimProbe} gave it;
 * - `isolate` / `reset`: `CircuitBreakerManualControl.isolate()` / `close()`, applied always.
 */
export type CircuitTransition = 'open' | 'close' | 'reopen' | 'isolate' | 'reset';

/** What one instance sends the store in a sync: its counts since the last one, and a transition. */
export interface CircuitSync {
  /** The instance's id for the probe lease (random per breaker). */
  readonly owner: string;
  /** Outcomes counted as successes since the last sync. */
  readonly successes: number;
  /** Outcomes counted as failures since the last sync. */
  readonly failures: number;
  /** ms; the store keeps the counts in ten buckets of a tenth of it. */
  readonly samplingDuration: number;
  readonly transition?: CircuitTransition | undefined;
  /** With `open` / `reopen`: ms the circuit stays open. */
  readonly breakDuration: number;
  /** With `open`: the generation the instance saw the circuit closed at. */
  readonly generation: number;
}

/** The shared circuit as the store sees it after a sync or a claim. */
export interface SharedCircuitState {
  /** `open` also while a probe runs (half-open is the prober's own state). */
  readonly state: 'closed' | 'open' | 'isolated';
  /** While open: ms until a probe may be claimed (the break, or the running probe's lease). 0 otherwise. */
  readonly retryAfter: number;
  /** Bumped by every transition: an instance that sees it change knows the circuit moved. */
  readonly generation: number;
}

export interface CircuitSyncReply extends SharedCircuitState {
  /** The fleet's counts over the sampling duration, these included. */
  readonly successes: number;
  readonly failures: number;
}

export interface CircuitProbeClaim extends SharedCircuitState {
  /** True when this instance got the probe lease: it runs the fleet's one half-open probe. */
  readonly claimed: boolean;
}

/**
 * What a store does for a shared circuit breaker: two atomic steps (one round trip on Redis and
 * PostgreSQL) on the circuit of `key`, the breaker's `key` option, which the store puts under its
 * own prefix or table. The breaker decides every transition; the store applies it under its guard.
 */
export interface SharedCircuits {
  /**
   * Applies `sync.transition` if its guard holds, adds the counts to the current bucket (dropping
   * buckets older than the sampling duration), and returns the circuit with the fleet's counts.
   */
  syncCircuit(key: string, sync: CircuitSync): Promise<CircuitSyncReply>;
  /**
   * Takes the probe lease for `leaseMs` if the circuit is open, its break is over and no live lease
   * exists (atomically: of many instances asking at once, one gets it), and returns the circuit.
   */
  claimProbe(
    key: string,
    claim: { readonly owner: string; readonly leaseMs: number },
  ): Promise<CircuitProbeClaim>;
  /** Throws `InvalidKeyError` when the store cannot keep `key`: the breaker fails at `build()`. */
  checkKey?(key: string): void;
}

/**
 * The circuit breaker as the strategy built it from its options, handed to a store's
 * `sharedCircuitBreaker()`. A store passes it on, unopened, to `new SharedCircuitBreaker(breaker, circuits)`.
 */
export interface LocalCircuitBreaker {
  /** ms, validated: `breakDuration`. */
  readonly breakDuration: number;
  /** The local failure-ratio counts, which decide while the store is unreachable. */
  readonly behavior: CircuitBehavior;
  readonly options: CircuitBreakerStrategyOptions;
  readonly environment: StrategyEnvironment;
}

/**
 * A store that can share a circuit breaker's circuit with every instance that uses the same store
 * and key (`MemoryLockStore`, `RedisLockStore`, `PostgresLockStore`, `MysqlLockStore`): the circuit
 * breaker strategy's `store` option. The store makes the breaker (a `SharedCircuitBreaker` on its
 * own {@link SharedCircuits}), so that a pipeline without a store carries none of this code.
 *
 * @example
 * class KvCircuitStore implements SharedCircuitStore, SharedCircuits {
 *   syncCircuit(key, sync) { ... }
 *   claimProbe(key, claim) { ... }
 *   sharedCircuitBreaker(breaker) { return new SharedCircuitBreaker(breaker, this); }
 * }
 */
export interface SharedCircuitStore {
  /** The breaker sharing its circuit through this store. Called by the circuit breaker strategy. */
  sharedCircuitBreaker(breaker: LocalCircuitBreaker): CircuitController;
}

/** True for a store that can share a circuit (see {@link SharedCircuitStore}). */
export function isSharedCircuitStore(value: unknown): value is SharedCircuitStore {
  return (
    typeof (value as Partial<SharedCircuitStore> | null | undefined)?.sharedCircuitBreaker === 'function'
  );
}
