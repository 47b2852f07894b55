import type { ResilienceContext } from '../../pipeline/context.ts';
import { checkCallbacks } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import { wholeNumber } from '../../pipeline/whole-number.ts';
import { concurrencyLimiterDefaults } from './defaults.ts';
import { ConcurrencyLimiterRejectedError } from './errors.ts';
import type { ConcurrencyLimiterStrategyOptions, OnConcurrencyLimiterRejectedArguments } from './options.ts';
import { WaiterQueue } from './waiter-queue.ts';

/**
 * Lets at most `permitLimit` executions run at once (a bulkhead); up to `queueLimit` more wait
 * first in, first out, and the rest are rejected with `ConcurrencyLimiterRejectedError`. A queued
 * execution whose caller aborts leaves the queue and fails with the abort reason. The state lives
 * in the built pipeline: every execution of it shares the limit.
 *
 * @example
 * new PipelineBuilder().add(concurrencyLimiterStrategy({ permitLimit: 10, queueLimit: 100 }))
 */
export function concurrencyLimiterStrategy(
  options: ConcurrencyLimiterStrategyOptions | number = {},
): StrategyFactory<ConcurrencyLimiterRejectedError> {
  const resolved = typeof options === 'number' ? { permitLimit: options } : options;
  return {
    name: 'concurrency-limiter',
    create: (environment) => new ConcurrencyLimiterStrategy(resolved, environment),
  };
}

class ConcurrencyLimiterStrategy implements ResilienceStrategy {
  readonly #permitLimit: number;
  readonly #queueLimit: number;
  readonly #onRejected: ConcurrencyLimiterStrategyOptions['onRejected'];
  readonly #environment: StrategyEnvironment;
  readonly #queue = new WaiterQueue();
  #running = 0;

  constructor(options: ConcurrencyLimiterStrategyOptions, environment: StrategyEnvironment) {
    this.#permitLimit = wholeNumber(
      options.permitLimit ?? concurrencyLimiterDefaults.permitLimit,
      'concurrencyLimiter.permitLimit',
      1,
    );
    this.#queueLimit = wholeNumber(
      options.queueLimit ?? concurrencyLimiterDefaults.queueLimit,
      'concurrencyLimiter.queueLimit',
      0,
    );
    checkCallbacks(options, 'concurrencyLimiter', ['onRejected']);
    this.#onRejected = options.onRejected;
    this.#environment = environment;
  }

  execute<T>(callback: Callback<T>, context: ResilienceContext, next: Next): Promise<Outcome<T, unknown>> {
    if (this.#running < this.#permitLimit) {
      this.#running++;
      return this.#run(callback, context, next);
    }
    if (this.#queue.size < this.#queueLimit) return this.#queued(callback, context, next);
    return this.#reject(context);
  }

  async #run<T>(callback: Callback<T>, context: ResilienceContext, next: Next): Promise<Outcome<T, unknown>> {
    try {
      return await next(callback, context);
    } finally {
      this.#release();
    }
  }

  async #queued<T>(
    callback: Callback<T>,
    context: ResilienceContext,
    next: Next,
  ): Promise<Outcome<T, unknown>> {
    try {
      // A finishing execution hands its permit straight to the oldest waiter (see #release).
      await this.#queue.enqueue(context.signal);
    } catch (reason) {
      return Outcome.failure(reason);
    }
    return this.#run(callback, context, next);
  }

  #release(): void {
    // Handing the permit over (instead of freeing it) keeps the queue fair: a new arrival cannot
    // take it between the release and the waiter's turn.
    if (!this.#queue.grantNext()) this.#running--;
  }

  async #reject<T>(context: ResilienceContext): Promise<Outcome<T, unknown>> {
    const args: OnConcurrencyLimiterRejectedArguments = { context };
    this.#environment.report('OnRateLimiterRejected', context, args);
    try {
      if (this.#onRejected) await this.#onRejected(args);
    } catch (error) {
      return Outcome.failure(error);
    }
    return Outcome.failure(new ConcurrencyLimiterRejectedError(this.#permitLimit, this.#queueLimit));
  }
}
