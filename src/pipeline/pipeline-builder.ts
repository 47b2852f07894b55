import { ResiliencePipeline } from './pipeline.ts';
import type { StrategyEnvironment, StrategyFactory, TelemetryListener } from './strategy.ts';
import { systemTimeProvider, type TimeProvider } from './time.ts';

export interface PipelineBuilderOptions {
  /** The clock for every strategy. Defaults to the system clock; pass a `FakeTimeProvider` in tests. */
  timeProvider?: TimeProvider;
  /** Receives every strategy event (`OnRetry`, `OnTimeout`, ...). A throwing listener is ignored. */
  telemetry?: TelemetryListener;
}

/**
 * Builds a pipeline from strategy factories: `retryStrategy()`, `timeoutStrategy()`, ...
 * Only what you add is bundled. Strategies run in the order added (first = outermost);
 * options are validated and state is created in `build()`.
 *
 * @example
 * const pipeline = new PipelineBuilder().add(timeoutStrategy(5_000)).add(retryStrategy()).build();
 */
export class PipelineBuilder<E = never> {
  readonly #factories: StrategyFactory<unknown>[] = [];
  readonly #options: PipelineBuilderOptions;

  constructor(options: PipelineBuilderOptions = {}) {
    this.#options = options;
  }

  /** Appends a strategy: it runs inside every strategy added before it. */
  add<F>(factory: StrategyFactory<F>): PipelineBuilder<E | F> {
    this.#factories.push(factory);
    return this as PipelineBuilder<E | F>;
  }

  /** Validates every strategy's options and creates a new pipeline with fresh strategy state. */
  build(): ResiliencePipeline<E> {
    const timeProvider = this.#options.timeProvider ?? systemTimeProvider;
    const telemetry = this.#options.telemetry;
    const strategies = this.#factories.map((factory) => {
      const environment: StrategyEnvironment = {
        timeProvider,
        report: telemetry
          ? (event, context, args) => {
              try {
                telemetry({ event, strategy: factory.name, context, args });
              } catch {
                // Telemetry must never change an execution's outcome.
              }
            }
          : () => {},
      };
      return factory.create(environment);
    });
    return new ResiliencePipeline<E>(strategies);
  }
}
