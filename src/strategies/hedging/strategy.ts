import { runWithContext } from '../../pipeline/ambient.ts';
import { DerivedSignal, type ResilienceContext } from '../../pipeline/context.ts';
import { type Duration, parseDuration } from '../../pipeline/duration.ts';
import { InvalidOptionError } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import { wholeNumber } from '../concurrency-limiter/whole-number.ts';
import { hedgingDefaults, hedgingLimits } from './defaults.ts';
import type { HedgingStrategyOptions, OnHedgingArguments } from './options.ts';

/**
 * Starts another attempt when the current ones are slow (`delay`) or fail (`shouldHandle`), up
 * to `maxHedgedAttempts` more, and returns the first acceptable outcome; when every attempt
 * fails, the primary attempt's outcome. Each attempt runs with its own context and signal; the
 * losers' signals are aborted, and the execution settles once they have settled too, so no
 * attempt outlives it. Polly v8 semantics and defaults.
 *
 * @example
 * new PipelineBuilder().add(hedgingStrategy({ maxHedgedAttempts: 2, delay: '100ms' }))
 */
export function hedgingStrategy(options: HedgingStrategyOptions = {}): StrategyFactory<never> {
  return {
    name: 'hedging',
    create: (environment) => new HedgingStrategy(options, environment),
  };
}

interface Attempt<T> {
  readonly signal: DerivedSignal;
  outcome: Outcome<T, unknown>;
  /** True when `shouldHandle` rejected the outcome. */
  handled: boolean;
  /** Resolves (never rejects) once `outcome` and `handled` are set. */
  settled: Promise<unknown>;
}

/** Fallback mode: wait for the running attempts, never for a timer. */
const untilAttemptsSettle = -1;

class HedgingStrategy implements ResilienceStrategy {
  readonly #maxAttempts: number;
  readonly #delay: number;
  readonly #options: HedgingStrategyOptions;
  readonly #environment: StrategyEnvironment;

  constructor(options: HedgingStrategyOptions, environment: StrategyEnvironment) {
    const { min, max } = hedgingLimits.maxHedgedAttempts;
    this.#maxAttempts =
      wholeNumber(
        options.maxHedgedAttempts ?? hedgingDefaults.maxHedgedAttempts,
        'hedging.maxHedgedAttempts',
        min,
        max,
      ) + 1;
    this.#delay = parseHedgingDelay(options.delay ?? hedgingDefaults.delay, 'hedging.delay');
    for (const name of ['delayGenerator', 'shouldHandle', 'actionGenerator', 'onHedging'] as const) {
      if (options[name] !== undefined && typeof options[name] !== 'function') {
        throw new InvalidOptionError(`hedging.${name}`, options[name], 'a function');
      }
    }
    this.#options = options;
    this.#environment = environment;
  }

  async execute<T>(
    callback: Callback<T>,
    context: ResilienceContext,
    next: Next,
  ): Promise<Outcome<T, unknown>> {
    const attempts: Attempt<T>[] = [];
    /** Settled attempts not looked at yet, in the order they settled. */
    const settled: Attempt<T>[] = [];
    let running = 0;
    let wake: (() => void) | undefined;
    let exhausted = false;
    let winner: Attempt<T> | undefined;
    const time = this.#environment.timeProvider;

    const waitForAttempt = (ms: number) =>
      new Promise<Attempt<T> | undefined>((resolve) => {
        let timer: unknown;
        wake = () => {
          wake = undefined;
          if (timer !== undefined) time.clearTimeout(timer);
          resolve(settled.shift());
        };
        if (ms > 0) {
          timer = time.setTimeout(() => {
            wake = undefined;
            resolve(undefined);
          }, ms);
        }
      });

    try {
      for (;;) {
        if (context.signal.aborted) return Outcome.failure(context.signal.reason);
        if (!exhausted && attempts.length < this.#maxAttempts) {
          const attempt = await this.#start(attempts.length, callback, context, next);
          if (attempt) {
            attempts.push(attempt);
            running++;
            attempt.settled.then(() => {
              running--;
              settled.push(attempt);
              wake?.();
            });
          } else {
            exhausted = true;
          }
        }
        let attempt = settled.shift();
        if (!attempt) {
          if (running === 0) {
            // Every attempt failed: like Polly, the primary attempt's outcome is the result.
            winner = attempts[0]!;
            return winner.outcome;
          }
          const canStartMore = !exhausted && attempts.length < this.#maxAttempts;
          const ms = canStartMore ? await this.#delayBefore(attempts.length, context) : untilAttemptsSettle;
          if (ms === 0) continue;
          attempt = await waitForAttempt(ms);
          if (!attempt) continue;
        }
        if (!attempt.handled) {
          winner = attempt;
          return attempt.outcome;
        }
      }
    } finally {
      let lost: unknown;
      for (const attempt of attempts) {
        if (attempt === winner) continue;
        lost ??= new DOMException('Another hedged attempt completed first.', 'AbortError');
        attempt.signal.abort(lost);
      }
      for (const attempt of attempts) await attempt.settled;
      for (const attempt of attempts) attempt.signal.dispose();
    }
  }

  /** Starts attempt `attemptNumber`; undefined when `actionGenerator` declines. */
  async #start<T>(
    attemptNumber: number,
    callback: Callback<T>,
    primaryContext: ResilienceContext,
    next: Next,
  ): Promise<Attempt<T> | undefined> {
    const signal = new DerivedSignal(primaryContext);
    const actionContext = primaryContext.derive(signal);
    let run = () => next(callback, actionContext);
    const generate = this.#options.actionGenerator;
    if (attemptNumber > 0 && generate) {
      try {
        const action = generate({
          primaryContext,
          actionContext,
          attemptNumber,
          callback: (context) => next(callback, context).then(Outcome.unwrap),
        });
        if (action === undefined) {
          signal.dispose();
          return undefined;
        }
        run = () => invoke(action as () => T, actionContext);
      } catch (error) {
        // Like Polly, a throwing generator is this attempt's failure.
        run = () => Promise.resolve(Outcome.failure(error));
      }
    }
    if (attemptNumber > 0) {
      const args: OnHedgingArguments = { primaryContext, actionContext, attemptNumber };
      this.#environment.report('OnHedging', actionContext, args);
      try {
        if (this.#options.onHedging) await this.#options.onHedging(args);
      } catch (error) {
        // Like Polly, a throwing onHedging fails the execution (the running attempts are aborted).
        signal.dispose();
        throw error;
      }
    }
    const attempt: Attempt<T> = { signal, outcome: undefined!, handled: false, settled: undefined! };
    attempt.settled = run()
      .catch(Outcome.failure<T>)
      .then(async (outcome) => {
        attempt.outcome = outcome;
        attempt.handled = await this.#shouldHandle(outcome, actionContext, attemptNumber);
      })
      .catch((error: unknown) => {
        // A throwing shouldHandle becomes the accepted outcome, so the caller sees the error.
        attempt.outcome = Outcome.failure(error);
        attempt.handled = false;
      });
    return attempt;
  }

  #shouldHandle(
    outcome: Outcome<unknown, unknown>,
    context: ResilienceContext,
    attemptNumber: number,
  ): boolean | PromiseLike<boolean> {
    const shouldHandle = this.#options.shouldHandle;
    if (shouldHandle) return shouldHandle({ outcome, context, attemptNumber });
    return !outcome.ok && !(context.signal.aborted && outcome.error === context.signal.reason);
  }

  async #delayBefore(attemptNumber: number, context: ResilienceContext): Promise<number> {
    const generate = this.#options.delayGenerator;
    if (!generate) return this.#delay;
    return parseHedgingDelay(await generate({ context, attemptNumber }), 'hedging.delayGenerator()');
  }
}

async function invoke<T>(action: () => T, context: ResilienceContext): Promise<Outcome<T, unknown>> {
  try {
    return Outcome.success(await runWithContext(context, action));
  } catch (error) {
    return Outcome.failure(error);
  }
}

/** A duration, or any negative number for fallback mode. */
function parseHedgingDelay(value: Duration, option: string): number {
  if (typeof value === 'number' && value < 0) return untilAttemptsSettle;
  return parseDuration(value, option);
}
