import type { SignalSource } from '../../pipeline/context.ts';
import { parsePositiveDuration } from '../../pipeline/duration.ts';
import { systemTimeProvider, type TimeProvider, type TimerHandle } from '../../pipeline/time.ts';
import { wholeNumber } from '../../pipeline/whole-number.ts';
import { WaiterQueue } from '../concurrency-limiter/waiter-queue.ts';
import { rateLimiterDefaults } from './defaults.ts';
import { granted, type RateLimitDecision, type RateLimiter } from './limiter.ts';
import type { StandaloneLimiterOptions, TokenBucketRateLimiterOptions } from './options.ts';

/**
 * A bucket of `tokenLimit` tokens, full at the start; each execution takes one, and
 * `tokensPerPeriod` come back every `replenishmentPeriod` (measured on the monotonic clock from
 * the limiter's creation). Tokens are counted when asked for, so an idle limiter holds no timer;
 * a timer runs only while requests queue.
 *
 * @example
 * // Shared by two pipelines: bursts of 10, then 5 per second.
 * const limiter = new TokenBucketRateLimiter({ tokenLimit: 10, tokensPerPeriod: 5, replenishmentPeriod: '1s' });
 */
export class TokenBucketRateLimiter implements RateLimiter {
  readonly #tokenLimit: number;
  readonly #tokensPerPeriod: number;
  readonly #period: number;
  readonly #queueLimit: number;
  readonly #time: TimeProvider;
  readonly #queue = new WaiterQueue(() => this.#cancelTimerWhenIdle());
  #tokens: number;
  #replenishedAt: number;
  #timer: TimerHandle | undefined;

  constructor(options: TokenBucketRateLimiterOptions & StandaloneLimiterOptions) {
    this.#tokenLimit = wholeNumber(options.tokenLimit, 'rateLimiter.tokenLimit', 1);
    this.#tokensPerPeriod = wholeNumber(
      options.tokensPerPeriod ?? this.#tokenLimit,
      'rateLimiter.tokensPerPeriod',
      1,
    );
    this.#period = parsePositiveDuration(
      options.replenishmentPeriod ?? rateLimiterDefaults.replenishmentPeriod,
      'rateLimiter.replenishmentPeriod',
    );
    this.#queueLimit = wholeNumber(
      options.queueLimit ?? rateLimiterDefaults.queueLimit,
      'rateLimiter.queueLimit',
      0,
    );
    this.#time = options.timeProvider ?? systemTimeProvider;
    this.#tokens = this.#tokenLimit;
    this.#replenishedAt = this.#time.monotonic();
  }

  /** Tokens available now. */
  get availableTokens(): number {
    this.#replenish();
    return this.#tokens;
  }

  /** Requests waiting for a token. */
  get queued(): number {
    return this.#queue.size;
  }

  acquire(source: SignalSource): RateLimitDecision | Promise<RateLimitDecision> {
    this.#replenish();
    if (this.#queue.size > 0) this.#grantQueued();
    if (this.#tokens > 0 && this.#queue.size === 0) {
      this.#tokens--;
      return granted;
    }
    if (this.#queue.size < this.#queueLimit) {
      const waiting = this.#queue.enqueue(source.signal);
      this.#scheduleReplenishment();
      return waiting.then(() => granted);
    }
    return { granted: false, retryAfter: this.#retryAfter() };
  }

  #replenish(): void {
    const periods = Math.floor((this.#time.monotonic() - this.#replenishedAt) / this.#period);
    if (periods <= 0) return;
    // Periods are counted from the creation instant, so idle time never shifts the schedule.
    this.#replenishedAt += periods * this.#period;
    this.#tokens = Math.min(this.#tokenLimit, this.#tokens + periods * this.#tokensPerPeriod);
  }

  /** Until the period that covers every queued request plus one more. */
  #retryAfter(): number {
    const missing = this.#queue.size + 1 - this.#tokens;
    const periods = Math.ceil(missing / this.#tokensPerPeriod);
    return this.#replenishedAt + periods * this.#period - this.#time.monotonic();
  }

  #scheduleReplenishment(): void {
    if (this.#timer !== undefined || this.#queue.size === 0) return;
    const due = this.#replenishedAt + this.#period - this.#time.monotonic();
    this.#timer = this.#time.setTimeout(this.#onReplenishment, due);
  }

  readonly #onReplenishment = (): void => {
    this.#timer = undefined;
    this.#replenish();
    this.#grantQueued();
    this.#scheduleReplenishment();
  };

  #grantQueued(): void {
    while (this.#tokens > 0 && this.#queue.grantNext()) this.#tokens--;
  }

  #cancelTimerWhenIdle(): void {
    if (this.#queue.size > 0 || this.#timer === undefined) return;
    this.#time.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
