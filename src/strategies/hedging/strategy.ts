import { DerivedSignal, type ResilienceContext } from '../../pipeline/context.ts';
import { type Duration, parseDuration } from '../../pipeline/duration.ts';
import { checkCallbacks } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import { invokeCallback } from '../../pipeline/pipeline.ts';
import { isAbortOf } from '../../pipeline/should-handle.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import { wholeNumber } from '../../pipeline/whole-number.ts';
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
  settled: Promise<void>;
}

/** A hedged attempt prepared by `actionGenerator` and `onHedging`, ready to start. */
interface HedgedAction<T> {
  readonly signal: DerivedSignal;
  readonly context: ResilienceContext;
  /** Undefined: run the original callback. */
  readonly action: (() => Promise<Outcome<T, unknown>>) | undefined;
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
    checkCallbacks(options, 'hedging', ['delayGenerator', 'shouldHandle', 'actionGenerator', 'onHedging']);
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

    const onSettled = (attempt: Attempt<T>) => {
      running--;
      settled.push(attempt);
      wake?.();
    };
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
          const number = attempts.length;
          const run = number === 0 ? undefined : await this.#prepareHedge(number, callback, context, next);
          if (run === null) {
            exhausted = true;
          } else {
            running++;
            attempts.push(this.#launch(number, run, callback, context, next, onSettled));
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
          const ms = !canStartMore
            ? untilAttemptsSettle
            : this.#options.delayGenerator
              ? await this.#generatedDelay(attempts.length, context)
              : this.#delay;
          if (ms === 0) continue;
          attempt = await waitForAttempt(ms);
          if (!attempt) continue;
        }
        if (!attempt.handled) {
          winner = attempt;
          return attempt.outcome;
        }
      }
    } catch (error) {
      // onHedging or delayGenerator threw: the execution fails with that error, and (winner
      // unset) every running attempt is aborted below.
      return Outcome.failure(error);
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

  /**
   * Runs `actionGenerator` and `onHedging` for hedged attempt `attemptNumber`: its action
   * (undefined for the original callback), or null when the generator declines.
   */
  async #prepareHedge<T>(
    attemptNumber: number,
    callback: Callback<T>,
    primaryContext: ResilienceContext,
    next: Next,
  ): Promise<HedgedAction<T> | undefined | null> {
    const signal = new DerivedSignal(primaryContext);
    const actionContext = primaryContext.derive(signal);
    let action: (() => Promise<Outcome<T, unknown>>) | undefined;
    const generate = this.#options.actionGenerator;
    if (generate) {
      try {
        const generated = generate({
          primaryContext,
          actionContext,
          attemptNumber,
          callback: (context) => next(callback, context).then(Outcome.unwrap),
        });
        if (generated === undefined) {
          signal.dispose();
          return null;
        }
        action = () =>
          invokeCallback(generated as Callback<T>, actionContext) as Promise<Outcome<T, unknown>>;
      } catch (error) {
        // Like Polly, a throwing generator is this attempt's failure.
        action = () => Promise.resolve(Outcome.failure(error));
      }
    }
    const args: OnHedgingArguments = { primaryContext, actionContext, attemptNumber };
    this.#environment.report('OnHedging', actionContext, args);
    try {
      if (this.#options.onHedging) await this.#options.onHedging(args);
    } catch (error) {
      // Like Polly, a throwing onHedging fails the execution (execute() aborts the running attempts).
      signal.dispose();
      throw error;
    }
    return { signal, context: actionContext, action };
  }

  #launch<T>(
    attemptNumber: number,
    hedge: HedgedAction<T> | undefined,
    callback: Callback<T>,
    primaryContext: ResilienceContext,
    next: Next,
    onSettled: (attempt: Attempt<T>) => void,
  ): Attempt<T> {
    const signal = hedge?.signal ?? new DerivedSignal(primaryContext);
    const context = hedge?.context ?? primaryContext.derive(signal);
    const attempt: Attempt<T> = { signal, outcome: undefined!, handled: false, settled: undefined! };
    attempt.settled = this.#settle(
      attempt,
      hedge?.action ?? (() => next(callback, context)),
      context,
      attemptNumber,
      onSettled,
    );
    return attempt;
  }

  /** Runs the attempt to its outcome and verdict; never rejects. */
  async #settle<T>(
    attempt: Attempt<T>,
    run: () => Promise<Outcome<T, unknown>>,
    context: ResilienceContext,
    attemptNumber: number,
    onSettled: (attempt: Attempt<T>) => void,
  ): Promise<void> {
    try {
      attempt.outcome = await run();
    } catch (error) {
      attempt.outcome = Outcome.failure(error);
    }
    try {
      const outcome = attempt.outcome;
      attempt.handled =
        outcome.ok && !this.#options.shouldHandle
          ? false
          : await this.#shouldHandle(outcome, context, attemptNumber);
    } catch (error) {
      // A throwing shouldHandle becomes the accepted outcome, so the caller sees the error.
      attempt.outcome = Outcome.failure(error);
      attempt.handled = false;
    }
    onSettled(attempt);
  }

  #shouldHandle(
    outcome: Outcome<unknown, unknown>,
    context: ResilienceContext,
    attemptNumber: number,
  ): boolean | PromiseLike<boolean> {
    const shouldHandle = this.#options.shouldHandle;
    if (shouldHandle) return shouldHandle({ outcome, context, attemptNumber });
    return !outcome.ok && !isAbortOf(context, outcome.error);
  }

  async #generatedDelay(attemptNumber: number, context: ResilienceContext): Promise<number> {
    const generated = await this.#options.delayGenerator!({ context, attemptNumber });
    return parseHedgingDelay(generated, 'hedging.delayGenerator()');
  }
}

/** A duration, or any negative number for fallback mode. */
function parseHedgingDelay(value: Duration, option: string): number {
  if (typeof value === 'number' && value < 0) return untilAttemptsSettle;
  return parseDuration(value, option);
}
