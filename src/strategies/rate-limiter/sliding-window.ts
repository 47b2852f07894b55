import type { SignalSource } from '../../pipeline/context.ts';
import { parsePositiveDuration } from '../../pipeline/duration.ts';
import { systemTimeProvider, type TimeProvider, type TimerHandle } from '../../pipeline/time.ts';
import { wholeNumber } from '../../pipeline/whole-number.ts';
import { WaiterQueue } from '../concurrency-limiter/waiter-queue.ts';
import { rateLimiterDefaults } from './defaults.ts';
import { granted, type RateLimitDecision, type RateLimiter } from './limiter.ts';
import type { SlidingWindowRateLimiterOptions, StandaloneLimiterOptions } from './options.ts';

/**
 * At most `permitLimit` permits in any `window`. The window is `segmentsPerWindow` segments of
 * `window / segmentsPerWindow`; the permits taken in a segment come back when it slides out of the
 * window. Segments advance when asked for, so an idle limiter holds no timer; a timer runs only
 * while requests queue.
 *
 * @example
 * // At most 100 calls in any minute, in 6 segments of 10 s.
 * const limiter = new SlidingWindowRateLimiter({ permitLimit: 100, window: '1m', segmentsPerWindow: 6 });
 */
export class SlidingWindowRateLimiter implements RateLimiter {
  readonly #permitLimit: number;
  readonly #segmentLength: number;
  readonly #queueLimit: number;
  readonly #time: TimeProvider;
  readonly #queue = new WaiterQueue(() => this.#cancelTimerWhenIdle());
  /** Permits taken per segment, a ring; `#current` is the newest segment. */
  readonly #segments: number[];
  #current = 0;
  #currentStartedAt: number;
  #taken = 0;
  #timer: TimerHandle | undefined;

  constructor(options: SlidingWindowRateLimiterOptions & StandaloneLimiterOptions) {
    this.#permitLimit = wholeNumber(options.permitLimit, 'rateLimiter.permitLimit', 1);
    const window = parsePositiveDuration(options.window ?? rateLimiterDefaults.window, 'rateLimiter.window');
    const segments = wholeNumber(
      options.segmentsPerWindow ?? rateLimiterDefaults.segmentsPerWindow,
      'rateLimiter.segmentsPerWindow',
      1,
    );
    this.#segmentLength = window / segments;
    this.#segments = new Array<number>(segments).fill(0);
    this.#queueLimit = wholeNumber(
      options.queueLimit ?? rateLimiterDefaults.queueLimit,
      'rateLimiter.queueLimit',
      0,
    );
    this.#time = options.timeProvider ?? systemTimeProvider;
    this.#currentStartedAt = this.#time.monotonic();
  }

  /** Permits available now. */
  get availablePermits(): number {
    this.#advance();
    return this.#permitLimit - this.#taken;
  }

  /** Requests waiting for a permit. */
  get queued(): number {
    return this.#queue.size;
  }

  acquire(source: SignalSource): RateLimitDecision | Promise<RateLimitDecision> {
    this.#advance();
    if (this.#queue.size > 0) this.#grantQueued();
    if (this.#taken < this.#permitLimit && this.#queue.size === 0) {
      this.#take();
      return granted;
    }
    if (this.#queue.size < this.#queueLimit) {
      const waiting = this.#queue.enqueue(source.signal);
      this.#scheduleAdvance();
      return waiting.then(() => granted);
    }
    return { granted: false, retryAfter: this.#retryAfter() };
  }

  #take(): void {
    this.#segments[this.#current]!++;
    this.#taken++;
  }

  #advance(): void {
    const steps = Math.floor((this.#time.monotonic() - this.#currentStartedAt) / this.#segmentLength);
    if (steps <= 0) return;
    const ring = this.#segments.length;
    for (let step = Math.min(steps, ring); step > 0; step--) {
      // The segment after the newest is the oldest: it leaves the window and becomes the newest.
      this.#current = (this.#current + 1) % ring;
      this.#taken -= this.#segments[this.#current]!;
      this.#segments[this.#current] = 0;
    }
    this.#currentStartedAt += steps * this.#segmentLength;
  }

  /** Until enough of the oldest segments slide out to serve every queued request plus one more. */
  #retryAfter(): number | undefined {
    let missing = this.#queue.size + 1 - (this.#permitLimit - this.#taken);
    const ring = this.#segments.length;
    for (let step = 1; step <= ring; step++) {
      missing -= this.#segments[(this.#current + step) % ring]!;
      if (missing <= 0) {
        return this.#currentStartedAt + step * this.#segmentLength - this.#time.monotonic();
      }
    }
    // More requests queue than one window serves: the wait depends on later arrivals.
    return undefined;
  }

  #scheduleAdvance(): void {
    if (this.#timer !== undefined || this.#queue.size === 0) return;
    const due = this.#currentStartedAt + this.#segmentLength - this.#time.monotonic();
    this.#timer = this.#time.setTimeout(this.#onAdvance, due);
  }

  readonly #onAdvance = (): void => {
    this.#timer = undefined;
    this.#advance();
    this.#grantQueued();
    this.#scheduleAdvance();
  };

  #grantQueued(): void {
    while (this.#taken < this.#permitLimit && this.#queue.grantNext()) this.#take();
  }

  #cancelTimerWhenIdle(): void {
    if (this.#queue.size > 0 || this.#timer === undefined) return;
    this.#time.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
