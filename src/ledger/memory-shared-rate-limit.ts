import type { TimeProvider } from '../pipeline/time.ts';
import type { RateLimitPermits } from '../strategies/rate-limiter/shared.ts';
import { gcraDecide, gcraMicroseconds } from '../strategies/rate-limiter/shared-limiter.ts';

/**
 * `MemoryLockStore`'s shared rate limits: each key's GCRA arrival time (microseconds of the store's
 * clock) in a map, decided synchronously, so atomic. Shared by every pipeline on the store, in this
 * process only. A key whose arrival time the clock passed is a full bucket, and is dropped.
 */
export class MemoryRateLimits {
  readonly #arrivals = new Map<string, number>();
  readonly #time: TimeProvider;

  constructor(time: TimeProvider) {
    this.#time = time;
  }

  /**
   * The permits of one limiter. It always asks for its own key and policy: the policy in
   * microseconds is computed once, at its first call.
   */
  permits(): RateLimitPermits {
    let gcra: { interval: number; tolerance: number } | undefined;
    return {
      take: (key, policy) => {
        gcra ??= gcraMicroseconds(policy);
        return Promise.resolve(this.#take(key, gcra.interval, gcra.tolerance));
      },
    };
  }

  /** One decision on `key`'s budget: the ms to wait, 0 when a permit was taken. */
  #take(key: string, interval: number, tolerance: number): number {
    const now = Math.round(this.#time.now() * 1000);
    const stored = this.#arrivals.get(key);
    if (stored !== undefined && stored <= now) this.#arrivals.delete(key);
    const { wait, tat } = gcraDecide(stored, now, interval, tolerance);
    if (wait === 0) this.#arrivals.set(key, tat);
    return wait / 1000;
  }
}
