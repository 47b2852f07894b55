import type { ResilienceContext, SignalSource } from '../../pipeline/context.ts';
import { parseDuration, parsePositiveDuration } from '../../pipeline/duration.ts';
import { checkOption, InvalidOptionError } from '../../pipeline/errors.ts';
import type { StrategyEnvironment } from '../../pipeline/strategy.ts';
import { type TimeProvider, withDeadline } from '../../pipeline/time.ts';
import { StoreUnavailableError } from '../lock/errors.ts';
import { rateLimiterDefaults } from './defaults.ts';
import { granted, type RateLimitDecision, type RateLimiter } from './limiter.ts';
import type {
  RateLimiterStrategyOptions,
  SlidingWindowRateLimiterOptions,
  TokenBucketRateLimiterOptions,
} from './options.ts';
import type {
  OnRateLimiterStoreUnavailableArguments,
  RateLimitPermits,
  SharedRateLimitPolicy,
} from './shared.ts';
import { SlidingWindowRateLimiter } from './sliding-window.ts';
import { TokenBucketRateLimiter } from './token-bucket.ts';

/** Defaults of the rate limiter's `store` options. A test pins each of them. */
export const sharedRateLimiterDefaults = {
  /** How long a call waits for the store's decision before deciding locally. */
  storeTimeout: 500,
  /** After the store failed, how long the limiter decides locally before asking the store again. */
  localInterval: 1_000,
} as const;

/** What the strategy options of a shared limiter may hold besides the kind's own. */
interface SharedOptions {
  store?: unknown;
  key?: unknown;
  storeTimeout?: unknown;
  limiter?: unknown;
  tokenLimit?: unknown;
  permitLimit?: unknown;
  queueLimit?: unknown;
  segmentsPerWindow?: unknown;
}

/** The GCRA policy of the strategy options (token bucket or sliding window), validated. */
export function sharedRateLimitPolicy(options: RateLimiterStrategyOptions): SharedRateLimitPolicy {
  const given = options as SharedOptions;
  if (given.tokenLimit !== undefined) {
    const { tokenLimit, tokensPerPeriod, replenishmentPeriod } = options as TokenBucketRateLimiterOptions;
    const period = parsePositiveDuration(
      replenishmentPeriod ?? rateLimiterDefaults.replenishmentPeriod,
      'rateLimiter.replenishmentPeriod',
    );
    return { intervalMs: period / (tokensPerPeriod ?? tokenLimit), burst: tokenLimit };
  }
  const { permitLimit, window } = options as SlidingWindowRateLimiterOptions;
  const length = parsePositiveDuration(window ?? rateLimiterDefaults.window, 'rateLimiter.window');
  return { intervalMs: length / permitLimit, burst: permitLimit };
}

/**
 * A rate limiter whose budget lives in a store, shared by every process that uses the same store
 * and `key`: one atomic decision per call, on the store's clock (a GCRA, see
 * {@link SharedRateLimitPolicy}). Made by a store's `sharedRateLimiter()` for the rate limiter
 * strategy's `store` option.
 *
 * - A token bucket (`tokenLimit`, `tokensPerPeriod`, `replenishmentPeriod`) keeps its burst and its
 *   rate; its tokens come back one at a time, every `replenishmentPeriod / tokensPerPeriod`, instead
 *   of `tokensPerPeriod` at once.
 * - A sliding window (`permitLimit`, `window`) is a bucket of `permitLimit` refilled at
 *   `permitLimit` per `window`: a burst of `permitLimit`, then one permit every
 *   `window / permitLimit`.
 * - Not supported with a store, and refused with `InvalidOptionError`: `limiter`,
 *   `segmentsPerWindow` (there are no segments) and `queueLimit` above 0 (no fleet-wide queue).
 * - Fail-open: when the store fails or does not answer within `storeTimeout` (500 ms), the call is
 *   decided by a limiter in this process with the same options, and so is every call for the next
 *   second; then the store is asked again. Each switch reports `OnRateLimiterStoreUnavailable`.
 */
export class SharedRateLimiter implements RateLimiter {
  readonly #permits: RateLimitPermits;
  readonly #key: string;
  readonly #policy: SharedRateLimitPolicy;
  readonly #local: RateLimiter;
  readonly #timeout: number;
  readonly #time: TimeProvider;
  readonly #environment: StrategyEnvironment;
  /** Until when (monotonic ms) calls are decided locally, after the store failed. */
  #localUntil = Number.NEGATIVE_INFINITY;

  constructor(
    options: RateLimiterStrategyOptions,
    environment: StrategyEnvironment,
    permits: RateLimitPermits,
  ) {
    const given = options as SharedOptions;
    const refused = {
      limiter: 'no limiter with store: a shared limit is made from tokenLimit or permitLimit options',
      segmentsPerWindow:
        'no segmentsPerWindow with store: a shared sliding window has no segments, a permit comes back every window / permitLimit',
    } as const;
    for (const option of ['limiter', 'segmentsPerWindow'] as const) {
      if (given[option] !== undefined) {
        throw new InvalidOptionError(`rateLimiter.${option}`, given[option], refused[option]);
      }
    }
    if (given.queueLimit !== undefined && given.queueLimit !== 0) {
      throw new InvalidOptionError(
        'rateLimiter.queueLimit',
        given.queueLimit,
        '0 with store: a shared limit rejects at once, it has no queue',
      );
    }
    const key = given.key;
    checkOption('rateLimiter.key', key, typeof key === 'string' && key.length > 0, 'a non-empty string');
    permits.checkKey?.(key as string);
    this.#key = key as string;
    this.#time = environment.timeProvider;
    // The local limiter validates the kind's options with today's messages.
    this.#local =
      given.tokenLimit !== undefined
        ? new TokenBucketRateLimiter({
            ...(options as TokenBucketRateLimiterOptions),
            timeProvider: this.#time,
          })
        : new SlidingWindowRateLimiter({
            ...(options as SlidingWindowRateLimiterOptions),
            timeProvider: this.#time,
          });
    this.#policy = sharedRateLimitPolicy(options);
    this.#timeout = parseDuration(
      given.storeTimeout ?? sharedRateLimiterDefaults.storeTimeout,
      'rateLimiter.storeTimeout',
      1,
      3_600_000,
    );
    this.#environment = environment;
    this.#permits = permits;
  }

  /** The burst and interval the store applies to `key`'s budget. */
  get policy(): SharedRateLimitPolicy {
    return this.#policy;
  }

  acquire(source: SignalSource): RateLimitDecision | Promise<RateLimitDecision> {
    if (this.#time.monotonic() < this.#localUntil) return this.#local.acquire(source);
    let decision: Promise<number>;
    try {
      decision = this.#permits.take(this.#key, this.#policy);
    } catch (error) {
      decision = Promise.reject(error);
    }
    return withDeadline(decision, this.#timeout, this.#timedOut, this.#time).then(decided, (error: unknown) =>
      this.#decideLocally(source, error),
    );
  }

  readonly #timedOut = (): never => {
    throw new StoreUnavailableError(
      `The rate limit store did not decide "${this.#key}" within ${this.#timeout} ms.`,
    );
  };

  #decideLocally(source: SignalSource, error: unknown): RateLimitDecision | Promise<RateLimitDecision> {
    const now = this.#time.monotonic();
    // Calls that were in flight when the store failed fail too: the switch is reported once.
    if (now >= this.#localUntil) {
      const localFor = sharedRateLimiterDefaults.localInterval;
      this.#localUntil = now + localFor;
      // The strategy hands its context as the signal source.
      const context = source as ResilienceContext;
      const args: OnRateLimiterStoreUnavailableArguments = { context, key: this.#key, error, localFor };
      this.#environment.report('OnRateLimiterStoreUnavailable', context, args);
    }
    return this.#local.acquire(source);
  }
}

/**
 * The policy in whole microseconds, as the stores compute: `interval` between two permits, and
 * `tolerance`, how far ahead of the clock the arrival time may be for a permit to be granted
 * (`(burst - 1) * interval`). Whole numbers keep the stores' arithmetic exact.
 */
export function gcraMicroseconds(policy: SharedRateLimitPolicy): { interval: number; tolerance: number } {
  const interval = Math.max(1, Math.round(policy.intervalMs * 1000));
  return { interval, tolerance: (policy.burst - 1) * interval };
}

/**
 * One GCRA decision in microseconds: the key's arrival time `stored` (or none), the clock `now`.
 * Returns the microseconds to wait (> 0, the arrival time unchanged) or 0 and the new arrival time.
 * The memory store runs it; the Redis script and the SQL statements are the same arithmetic.
 */
export function gcraDecide(
  stored: number | undefined,
  now: number,
  interval: number,
  tolerance: number,
): { wait: number; tat: number } {
  const tat = stored === undefined || stored < now ? now : stored;
  const wait = tat - now - tolerance;
  return wait > 0 ? { wait, tat } : { wait: 0, tat: tat + interval };
}

function decided(wait: number): RateLimitDecision {
  return wait > 0 ? { granted: false, retryAfter: wait } : granted;
}
