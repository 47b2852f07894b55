import type { ResilienceContext } from './context.ts';
import type { Outcome } from './outcome.ts';
import type { TimeProvider } from './time.ts';

/** The user's callback. */
export type Callback<T> = (context: ResilienceContext) => T | PromiseLike<T>;

/** Runs the rest of the pipeline (inner strategies, then the callback) with `context`. */
export type Next = <T>(callback: Callback<T>, context: ResilienceContext) => Promise<Outcome<T, unknown>>;

/**
 * One built strategy. It runs the rest of the pipeline through `next` and resolves to an outcome
 * rather than rejecting, so strategies hand results to each other without exceptions: an option
 * callback that throws (`shouldHandle`, `onRetry`, ...) becomes a failed outcome.
 */
export interface ResilienceStrategy {
  execute<T>(callback: Callback<T>, context: ResilienceContext, next: Next): Promise<Outcome<T, unknown>>;
  /**
   * True when code under this strategy reads the ambient context without being handed one (the
   * lock strategy: `getLockToken()`). A pipeline with such a strategy runs its callback in the
   * ambient context, so `currentContext()` finds it across `await`s. Defaults to false: on Node 20,
   * entering an AsyncLocalStorage makes every promise in the process slower, so a pipeline whose
   * strategies never read it does not enter it. The ambient context is set up when `currentContext()`
   * or `getLockToken()` is loaded (always, through the package entry) or `lockStrategy()` is called:
   * in a bundle that has none of them there is none to enter, and a nested pipeline does not see
   * the outer execution's properties.
   */
  readonly usesAmbientContext?: boolean;
}

/** One strategy event, as received by the builder's `telemetry` listener. */
export interface TelemetryEvent {
  /** Polly's event name: `OnRetry`, `OnTimeout`, `OnLockRejected`, `OnLockLost`, ... */
  readonly event: string;
  /** The strategy that raised it (`retry`, `timeout`, `lock`, ...). */
  readonly strategy: string;
  readonly context: ResilienceContext;
  /** The same arguments the strategy's own callback (`onRetry`, ...) receives. */
  readonly args: unknown;
}

/** One execution of a pipeline, as received by a listener's `onPipelineExecuted`. */
export interface PipelineExecutedEvent {
  /** From the start of `execute()` / `settle()` to its outcome, ms by the builder's `timeProvider`. */
  readonly duration: number;
  readonly outcome: Outcome<unknown, unknown>;
  readonly context: ResilienceContext;
}

/**
 * Receives every strategy event of a pipeline (the builder's `telemetry` option).
 *
 * @example
 * const telemetry: TelemetryListener = ({ strategy, event }) => log.info({ strategy }, event);
 */
export interface TelemetryListener {
  (event: TelemetryEvent): void;
  /**
   * Also called after every execution, with its duration and outcome: what Polly reports as
   * `PipelineExecuted`. Only a listener that has it pays for measuring executions. Defaults to none.
   */
  readonly onPipelineExecuted?: ((event: PipelineExecutedEvent) => void) | undefined;
}

/** What a strategy gets from the builder when it is created in `build()`. */
export interface StrategyEnvironment {
  readonly timeProvider: TimeProvider;
  /** Reports an event to the builder's telemetry listener (a no-op when there is none). */
  report(event: string, context: ResilienceContext, args: unknown): void;
  /**
   * False when nobody listens to `report`, so a strategy can skip work done only for telemetry
   * (measuring durations, building arguments). Treat `undefined` as true.
   */
  readonly telemetryEnabled?: boolean;
}

/**
 * A strategy's options, validated and turned into a {@link ResilienceStrategy} by `build()`.
 * `E` is the union of the errors the strategy can raise; pipelines track it for `settle()`.
 */
export interface StrategyFactory<E = never> {
  /** The strategy's name in telemetry events (`retry`, `timeout`, ...). */
  readonly name: string;
  create(environment: StrategyEnvironment): ResilienceStrategy;
  /** Type-level only: the errors this strategy can raise. */
  readonly __errors?: E;
}
