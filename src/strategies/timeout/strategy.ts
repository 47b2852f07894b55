import { DerivedSignal, type ResilienceContext } from '../../pipeline/context.ts';
import { type Duration, parseDuration } from '../../pipeline/duration.ts';
import { checkCallbacks } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import { type Deadline, DeadlineQueue } from './deadline-queue.ts';
import { defaultTimeout, maxTimeout, minTimeout } from './defaults.ts';
import { TimeoutRejectedError } from './errors.ts';
import type { OnTimeoutArguments, TimeoutStrategyOptions } from './options.ts';

/**
 * Aborts the callback's `context.signal` when `timeout` elapses. Cooperative, as in Polly v8: the
 * callback must honour its signal; if it then fails, the execution fails with
 * `TimeoutRejectedError`. A callback that ignores the signal and succeeds keeps its value. An
 * abort of the caller's own signal passes through untouched.
 *
 * @example
 * new PipelineBuilder().add(timeoutStrategy('5s')).build();
 * new PipelineBuilder().add(timeoutStrategy({ timeout: '5s', onTimeout: ({ timeout }) => log.warn({ timeout }) })).build();
 */
export function timeoutStrategy(
  options: TimeoutStrategyOptions | Duration = {},
): StrategyFactory<TimeoutRejectedError> {
  return {
    name: 'timeout',
    create: (environment) => createTimeout(options, environment),
  };
}

/** One execution's timeout: its derived signal, and its place in the strategy's deadline queue. */
class PendingTimeout extends DerivedSignal implements Deadline {
  dueAt = 0;
  previous: Deadline | undefined = undefined;
  next: Deadline | undefined = undefined;
  queued = false;
  /** Set when this timeout's own timer fired first. */
  error: TimeoutRejectedError | undefined = undefined;
  readonly #context: ResilienceContext;
  readonly timeout: number;

  constructor(context: ResilienceContext, timeout: number) {
    super(context);
    this.#context = context;
    this.timeout = timeout;
  }

  expire(): void {
    // The caller's abort came first: its reason stays the one the callback sees.
    if (this.#context.signal.aborted) return;
    this.error = new TimeoutRejectedError(this.timeout);
    this.abort(this.error);
  }
}

function createTimeout(
  options: TimeoutStrategyOptions | Duration,
  environment: StrategyEnvironment,
): ResilienceStrategy {
  const resolved: TimeoutStrategyOptions =
    typeof options === 'object' && options !== null ? options : { timeout: options };
  const fixedTimeout = parseDuration(
    resolved.timeout ?? defaultTimeout,
    'timeout.timeout',
    minTimeout,
    maxTimeout,
  );
  checkCallbacks(resolved, 'timeout', ['timeoutGenerator', 'onTimeout']);
  const { timeoutGenerator, onTimeout } = resolved;
  const deadlines = new DeadlineQueue(environment.timeProvider);

  return {
    async execute<T>(callback: Callback<T>, context: ResilienceContext, next: Next) {
      let timeout = fixedTimeout;
      if (timeoutGenerator) {
        try {
          const value = await timeoutGenerator({ context });
          // 0, a negative number or Infinity: no timeout for this execution.
          timeout =
            typeof value === 'number' && (value <= 0 || value === Infinity)
              ? 0
              : parseDuration(value, 'timeout.timeoutGenerator()');
        } catch (error) {
          return Outcome.failure<T>(error);
        }
        if (timeout === 0) return next(callback, context);
      }

      const pending = new PendingTimeout(context, timeout);
      deadlines.add(pending, timeout);
      let outcome: Outcome<T, unknown>;
      try {
        outcome = await next(callback, context.derive(pending));
      } finally {
        deadlines.remove(pending);
        pending.dispose();
      }
      const error = pending.error;
      if (error === undefined || outcome.ok) return outcome;

      const args: OnTimeoutArguments = { context, timeout };
      try {
        environment.report('OnTimeout', context, args);
        if (onTimeout) await onTimeout(args);
      } catch (thrown) {
        return Outcome.failure<T>(thrown);
      }
      // The callback usually fails with the signal's reason (our error), or with an AbortError
      // caused by it (node:timers/promises, events.once): both say only that our timer fired, so
      // our error is the outcome. Anything else it threw after the timer fired is kept as the cause.
      const thrown = outcome.error;
      const causedByUs = thrown === error || (thrown instanceof Error && thrown.cause === error);
      return Outcome.failure<T>(causedByUs ? error : new TimeoutRejectedError(timeout, { cause: thrown }));
    },
  };
}
