import type { ResilienceContext } from '../../pipeline/context.ts';
import { checkCallbacks, checkOption, InvalidOptionError } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import { RateLimiterRejectedError } from './errors.ts';
import type { RateLimitDecision, RateLimiter } from './limiter.ts';
import type {
  OnRateLimiterRejectedArguments,
  RateLimiterStrategyOptions,
  SlidingWindowRateLimiterOptions,
  TokenBucketRateLimiterOptions,
} from './options.ts';
import { isSharedRateLimitStore, type SharedRateLimitStore } from './shared.ts';
import { SlidingWindowRateLimiter } from './sliding-window.ts';
import { TokenBucketRateLimiter } from './token-bucket.ts';

/**
 * Takes a permit from a token bucket or a sliding window before each execution, waiting in a
 * bounded queue (`queueLimit`, default 0) when none is free, on the pipeline's clock. Beyond the
 * queue the execution is rejected with `RateLimiterRejectedError` (`retryAfter` in ms when known).
 * A queued execution whose caller aborts leaves the queue and fails with the abort reason.
 *
 * @example
 * new PipelineBuilder().add(rateLimiterStrategy({ tokenLimit: 10, tokensPerPeriod: 5, replenishmentPeriod: '1s' }))
 * new PipelineBuilder().add(rateLimiterStrategy({ permitLimit: 100, window: '1m', segmentsPerWindow: 6, queueLimit: 10 }))
 */
export function rateLimiterStrategy(
  options: RateLimiterStrategyOptions,
): StrategyFactory<RateLimiterRejectedError> {
  return {
    name: 'rate-limiter',
    create: (environment) => new RateLimiterStrategy(options, environment),
  };
}

type GivenOptions = RateLimiterStrategyOptions &
  Partial<Record<'limiter' | 'tokenLimit' | 'permitLimit' | 'store', unknown>>;

function createLimiter(options: GivenOptions, environment: StrategyEnvironment): RateLimiter {
  const kinds = (['limiter', 'tokenLimit', 'permitLimit'] as const).filter(
    (kind) => options[kind] !== undefined,
  );
  if (kinds.length !== 1) {
    throw new InvalidOptionError(
      'rateLimiter',
      kinds.length === 0 ? options : kinds.join(' and '),
      'exactly one of tokenLimit (token bucket), permitLimit (sliding window) or limiter',
    );
  }
  const store = options.store;
  if (store) {
    // The store makes the shared limiter, so a pipeline without one carries none of its code.
    checkOption('rateLimiter.store', store, isSharedRateLimitStore(store), 'a store');
    return (store as SharedRateLimitStore).sharedRateLimiter(options, environment);
  }
  if (kinds[0] === 'tokenLimit') {
    return new TokenBucketRateLimiter({
      ...(options as TokenBucketRateLimiterOptions),
      timeProvider: environment.timeProvider,
    });
  }
  if (kinds[0] === 'permitLimit') {
    return new SlidingWindowRateLimiter({
      ...(options as SlidingWindowRateLimiterOptions),
      timeProvider: environment.timeProvider,
    });
  }
  const limiter = options.limiter as RateLimiter;
  checkOption(
    'rateLimiter.limiter',
    limiter,
    typeof limiter.acquire === 'function',
    'a RateLimiter (an object with acquire())',
  );
  return limiter;
}

class RateLimiterStrategy implements ResilienceStrategy {
  readonly #limiter: RateLimiter;
  readonly #onRejected: RateLimiterStrategyOptions['onRejected'];
  readonly #environment: StrategyEnvironment;

  constructor(options: RateLimiterStrategyOptions, environment: StrategyEnvironment) {
    checkOption('rateLimiter', options, typeof options === 'object' && options !== null, 'an options object');
    this.#limiter = createLimiter(options, environment);
    checkCallbacks(options, 'rateLimiter', ['onRejected']);
    this.#onRejected = options.onRejected;
    this.#environment = environment;
  }

  execute<T>(callback: Callback<T>, context: ResilienceContext, next: Next): Promise<Outcome<T, unknown>> {
    let decision: RateLimitDecision | Promise<RateLimitDecision>;
    try {
      decision = this.#limiter.acquire(context);
    } catch (error) {
      // A custom limiter that throws fails this execution, like a throwing option callback.
      decision = Promise.reject(error);
    }
    if (typeof (decision as Partial<PromiseLike<unknown>>).then === 'function') {
      // Queued, asked of a store, or thrown: a rejected wait fails the execution with its reason.
      return (decision as Promise<RateLimitDecision>).then(
        (settled) => this.#decide(settled, callback, context, next),
        Outcome.failure,
      );
    }
    return this.#decide(decision as RateLimitDecision, callback, context, next);
  }

  #decide<T>(
    decision: RateLimitDecision,
    callback: Callback<T>,
    context: ResilienceContext,
    next: Next,
  ): Promise<Outcome<T, unknown>> {
    return decision.granted ? next(callback, context) : this.#reject(context, decision.retryAfter);
  }

  async #reject<T>(context: ResilienceContext, retryAfter: number | undefined): Promise<Outcome<T, unknown>> {
    const args: OnRateLimiterRejectedArguments = { context, retryAfter };
    this.#environment.report('OnRateLimiterRejected', context, args);
    try {
      if (this.#onRejected) await this.#onRejected(args);
    } catch (error) {
      return Outcome.failure(error);
    }
    return Outcome.failure(new RateLimiterRejectedError(retryAfter));
  }
}
