import type { TimeProvider } from '../pipeline/time.ts';
import type { RateLimitPermits, SharedRateLimitPolicy } from '../strategies/rate-limiter/shared.ts';
import { gcraDecide, gcraMicroseconds } from '../strategies/rate-limiter/shared-limiter.ts';

/**
 * `MemoryLockStore`'s shared rate limits: each key's GCRA arrival time (microseconds of the store's
 * clock) in a map, decided synchronously, so atomic. Shared by every pipeline on the store, in this
 * process only. A key whose arrival time the clock passed is a full bucket, and is dropped.
 */
export class MemoryRateLimitPermits implements RateLimitPermits {
  readonly #arrivals = new Map<string, number>();
  readonly #time: TimeProvider;

  constructor(time: TimeProvider) {
    this.#time = time;
  }

  take(key: string, policy: SharedRateLimitPolicy): Promise<number> {
    const now = Math.round(this.#time.now() * 1000);
    const { interval, tolerance } = gcraMicroseconds(policy);
    const stored = this.#arrivals.get(key);
    if (stored !== undefined && stored <= now) this.#arrivals.delete(key);
    const { wait, tat } = gcraDecide(stored, now, interval, tolerance);
    if (wait === 0) this.#arrivals.set(key, tat);
    return Promise.resolve(wait / 1000);
  }
}
