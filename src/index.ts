export { currentContext } from './pipeline/ambient.ts';
export { DerivedSignal, ResilienceContext, type SignalSource } from './pipeline/context.ts';
export { type Duration, type DurationUnit, formatDuration, parseDuration } from './pipeline/duration.ts';
export {
  InvalidOptionError,
  isInvalidOptionError,
  isRejection,
  isResilienceError,
  ResilienceError,
} from './pipeline/errors.ts';
export {
  type ErrorCode,
  type Failure,
  type MatchHandlers,
  Outcome,
  type Success,
} from './pipeline/outcome.ts';
export { type ExecuteOptions, ResiliencePipeline } from './pipeline/pipeline.ts';
export { PipelineBuilder, type PipelineBuilderOptions } from './pipeline/pipeline-builder.ts';
export { ResilienceProperties, ResiliencePropertyKey } from './pipeline/properties.ts';
export { ResiliencePipelineBuilder } from './pipeline/resilience-pipeline-builder.ts';
export type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
  TelemetryEvent,
  TelemetryListener,
} from './pipeline/strategy.ts';
export {
  delay,
  neverAbortedSignal,
  systemTimeProvider,
  type TimeProvider,
  type TimerHandle,
} from './pipeline/time.ts';
export { retryDefaults } from './strategies/retry/defaults.ts';
export type {
  BackoffType,
  OnRetryArguments,
  RetryDelayGeneratorArguments,
  RetryPredicateArguments,
  RetryStrategyOptions,
} from './strategies/retry/options.ts';
export { handleErrorsExceptAbort, retryStrategy } from './strategies/retry/strategy.ts';
export { timeoutDefaults } from './strategies/timeout/defaults.ts';
export { isTimeoutRejectedError, TimeoutRejectedError } from './strategies/timeout/errors.ts';
export type {
  OnTimeoutArguments,
  TimeoutGeneratorArguments,
  TimeoutStrategyOptions,
} from './strategies/timeout/options.ts';
export { timeoutStrategy } from './strategies/timeout/strategy.ts';
