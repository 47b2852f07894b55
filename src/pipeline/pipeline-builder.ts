import { InvalidOptionError } from './errors.ts';
import { ResiliencePipeline } from './pipeline.ts';
import type { StrategyEnvironment, StrategyFactory, TelemetryListener } from './strategy.ts';
import { systemTimeProvider, type TimeProvider } from './time.ts';

export interface PipelineBuilderOptions {
  /** The clock for every strategy. Defaults to the system clock; pass a `FakeTimeProvider` in tests. */
  timeProvider?: TimeProvider;
  /**
   * Receives every strategy event (`OnRetry`, `OnTimeout`, ...) with the same arguments as the
   * strategy's own callback. A throwing listener is ignored. Defaults to none.
   */
  telemetry?: TelemetryListener;
}

const timeProviderMethods = ['now', 'monotonic', 'setTimeout', 'clearTimeout'] as const;

function validateBuilderOptions(options: PipelineBuilderOptions): void {
  const time = options.timeProvider;
  if (
    time !== undefined &&
    (typeof time !== 'object' ||
      time === null ||
      timeProviderMethods.some((method) => typeof time[method] !== 'function'))
  ) {
    throw new InvalidOptionError(
      'timeProvider',
      time,
      'a TimeProvider (now, monotonic, setTimeout, clearTimeout)',
    );
  }
  if (options.telemetry !== undefined && typeof options.telemetry !== 'function') {
    throw new InvalidOptionError('telemetry', options.telemetry, 'a function');
  }
}

/**
 * Builds a pipeline from strategy factories: `retryStrategy()`, `timeoutStrategy()`, ...
 * Only what you add is bundled. Strategies run in the order added (first = outermost);
 * options are validated and state is created in `build()`, so each `build()` makes a pipeline
 * with fresh state.
 *
 * @example
 * const pipeline = new PipelineBuilder()
 *   .add(timeoutStrategy('5s'))
 *   .add(retryStrategy({ delay: '200ms', backoffType: 'exponential' }))
 *   .build();
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
    validateBuilderOptions(this.#options);
    const timeProvider = this.#options.timeProvider ?? systemTimeProvider;
    const telemetry = this.#options.telemetry;
    const strategies = this.#factories.map((factory) => {
      const environment: StrategyEnvironment = {
        timeProvider,
        telemetryEnabled: telemetry !== undefined,
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
