import type { ResilienceContext } from '../../pipeline/context.ts';
import type { Duration } from '../../pipeline/duration.ts';
import type { Outcome } from '../../pipeline/outcome.ts';

export interface HedgingPredicateArguments {
  /** The attempt's outcome: `outcome.ok` with `value`, or `error`. */
  readonly outcome: Outcome<unknown, unknown>;
  /** The attempt's own context (its signal aborts when another attempt wins). */
  readonly context: ResilienceContext;
  /** The attempt that produced `outcome`: 0 for the primary one, 1 for the first hedge, ... */
  readonly attemptNumber: number;
}

export interface HedgingDelayGeneratorArguments {
  readonly context: ResilienceContext;
  /** The attempt that starts when the delay elapses: 1 for the first hedge, ... */
  readonly attemptNumber: number;
}

export interface HedgingActionGeneratorArguments {
  /** The context the hedging strategy was called with. */
  readonly primaryContext: ResilienceContext;
  /** The hedged attempt's own context: pass it on, its signal aborts when another attempt wins. */
  readonly actionContext: ResilienceContext;
  /** The attempt being started: 1 for the first hedge, ... */
  readonly attemptNumber: number;
  /**
   * Runs the original callback (through the strategies added after hedging) with `context`;
   * resolves with its value or rejects with its error.
   */
  readonly callback: (context: ResilienceContext) => Promise<unknown>;
}

export interface OnHedgingArguments {
  readonly primaryContext: ResilienceContext;
  readonly actionContext: ResilienceContext;
  /** The hedged attempt about to start: 1 for the first hedge, ... */
  readonly attemptNumber: number;
}

export interface HedgingStrategyOptions {
  /**
   * Hedged attempts on top of the primary one, so at most `maxHedgedAttempts + 1` run in total.
   * Defaults to 1. From 1 to 10.
   */
  maxHedgedAttempts?: number;
  /**
   * How long to wait for an attempt before starting the next one (latency mode); an attempt that
   * fails (per `shouldHandle`) starts the next one at once. `0` starts every attempt at once
   * (parallel mode); a negative number (`-1`) starts the next attempt only when the previous
   * ones failed (fallback mode). Defaults to 2 s.
   */
  delay?: Duration;
  /** Chooses the delay before each hedged attempt, with the same meaning as `delay`, which it overrides. */
  delayGenerator?: (args: HedgingDelayGeneratorArguments) => Duration | PromiseLike<Duration>;
  /**
   * Decides whether an attempt's outcome is unacceptable, so that another attempt is awaited or
   * started. Defaults to every error except an abort of the caller's signal; values are accepted.
   */
  shouldHandle?: (args: HedgingPredicateArguments) => boolean | PromiseLike<boolean>;
  /**
   * Creates the action of a hedged attempt (not the primary one), for instance a call to another
   * replica; return `undefined` to start no more hedged attempts. Defaults to running the original
   * callback again.
   */
  actionGenerator?: (args: HedgingActionGeneratorArguments) => (() => unknown) | undefined;
  /** Called before each hedged attempt starts. */
  onHedging?: (args: OnHedgingArguments) => void | PromiseLike<void>;
}
