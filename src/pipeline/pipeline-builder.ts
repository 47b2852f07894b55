import { checkFunction, checkOption } from './errors.ts';
import { ResiliencePipeline } from './pipeline.ts';
import type {
  PipelineExecutedEvent,
  ResilienceStrategy,
  StrategyFactory,
  TelemetryListener,
} from './strategy.ts';
import { systemTimeProvider, type TimeProvider } from './time.ts';

export interface PipelineBuilderOptions {
  /** The clock for every strategy. Defaults to the system clock; pass a `FakeTimeProvider` in tests. */
  timeProvider?: TimeProvider;
  /**
   * Receives every strategy event (`OnRetry`, `OnTimeout`, ...) with the same arguments as the
   * strategy's own callback, and every execution's duration when it has `onPipelineExecuted`
   * (`openTelemetry()` from `resil/opentelemetry` does). A throwing listener is ignored. Defaults to none.
   */
  telemetry?: TelemetryListener;
}

const timeProviderMethods = ['now', 'monotonic', 'setTimeout', 'clearTimeout'] as const;

const noTelemetry = () => {};

/** The outermost step for a listener that measures executions (Polly's `PipelineExecuted`). */
function executionTelemetry(
  time: TimeProvider,
  listener: { onPipelineExecuted(event: PipelineExecutedEvent): void },
): ResilienceStrategy {
  return {
    execute(callback, context, next) {
      const started = time.monotonic();
      return next(callback, context).then((outcome) => {
        try {
          // Called on the listener: it may use `this`.
          listener.onPipelineExecuted({ duration: time.monotonic() - started, outcome, context });
        } catch {
          // Telemetry must never change an execution's outcome.
        }
        return outcome;
      });
    },
  };
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
    const { timeProvider, telemetry } = this.#options;
    checkOption(
      'timeProvider',
      timeProvider,
      timeProvider === undefined ||
        timeProviderMethods.every((method) => typeof timeProvider?.[method] === 'function'),
      `a TimeProvider (${timeProviderMethods.join(', ')})`,
    );
    checkFunction('telemetry', telemetry);
    const onPipelineExecuted = telemetry?.onPipelineExecuted;
    checkFunction('telemetry.onPipelineExecuted', onPipelineExecuted);
    const time = timeProvider ?? systemTimeProvider;
    const strategies = this.#factories.map((factory) =>
      factory.create({
        timeProvider: time,
        telemetryEnabled: telemetry !== undefined,
        report: telemetry
          ? (event, context, args) => {
              try {
                telemetry({ event, strategy: factory.name, context, args });
              } catch {
                // Telemetry must never change an execution's outcome.
              }
            }
          : noTelemetry,
      }),
    );
    if (onPipelineExecuted) {
      strategies.unshift(
        executionTelemetry(time, telemetry as { onPipelineExecuted(event: PipelineExecutedEvent): void }),
      );
    }
    return new ResiliencePipeline<E>(strategies);
  }
}
