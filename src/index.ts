export { ResiliencePipelineBuilder } from './builder/resilience-pipeline-builder.ts';
export { defineConfig, defineJob } from './config/define.ts';
export {
  type ClaimRequest,
  type ClaimResult,
  hasInstanceRegistry,
  hasJobPauses,
  hasRunLedger,
  type InstanceInfo,
  type InstanceRegistry,
  type JobPause,
  type LedgerSkipReason,
  type OccurrenceLease,
  type OccurrenceState,
  type OverlapPolicy,
  overlapPolicies,
  type PausableRunLedger,
  type RegisteredInstance,
  type RunLedger,
  type RunOutcome,
  type RunRecord,
  type RunResult,
  type RunTrigger,
} from './ledger/contract.ts';
// A store of your own on the run ledger's primitive: see docs/stores.md.
export {
  type ClaimDecision,
  type Decision,
  decideClaim,
  decideFinish,
  decideRenew,
  type FinishDecision,
  holdsOwnLease,
  type LedgerChanges,
  type LedgerEntry,
  type LedgerView,
  leaseOf,
  publicRecord,
  type ResolvedTrim,
  trimmed,
} from './ledger/decide.ts';
export {
  type Applied,
  compareAndWrite,
  LedgerEngine,
  type LedgerPrimitive,
  type ReadTarget,
  type StoredView,
  type WriteChanges,
  type WriteReply,
} from './ledger/engine.ts';
export { MemoryLockStore, type MemoryLockStoreOptions } from './ledger/memory-store.ts';
export { currentContext } from './pipeline/ambient.ts';
export {
  DerivedSignal,
  ResilienceContext,
  type ResilienceContextOptions,
  type SignalSource,
} from './pipeline/context.ts';
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
export type {
  Callback,
  Next,
  PipelineExecutedEvent,
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
export { isShutdownError, ShutdownError } from './scheduler/errors.ts';
export type {
  DstPolicy,
  JobChaosOptions,
  JobContext,
  JobDefinition,
  JobIsolation,
  JobLockOptions,
  JobLogger,
  JobResourceLimits,
  ResilConfig,
  SchedulerTelemetry,
} from './scheduler/job.ts';
export { chaosDefaults } from './strategies/chaos/defaults.ts';
export type {
  BehaviorGeneratorArguments,
  ChaosBehaviorStrategyOptions,
  ChaosFaultStrategyOptions,
  ChaosLatencyStrategyOptions,
  ChaosOutcomeStrategyOptions,
  ChaosStrategyOptions,
  EnabledGeneratorArguments,
  FaultGeneratorArguments,
  InjectionRateGeneratorArguments,
  LatencyGeneratorArguments,
  OnBehaviorInjectedArguments,
  OnFaultInjectedArguments,
  OnLatencyInjectedArguments,
  OnOutcomeInjectedArguments,
  OutcomeGeneratorArguments,
} from './strategies/chaos/options.ts';
export {
  chaosBehaviorStrategy,
  chaosFaultStrategy,
  chaosLatencyStrategy,
  chaosOutcomeStrategy,
} from './strategies/chaos/strategy.ts';
export { circuitBreakerDefaults } from './strategies/circuit-breaker/defaults.ts';
export {
  BrokenCircuitError,
  IsolatedCircuitError,
  isBrokenCircuitError,
  isIsolatedCircuitError,
} from './strategies/circuit-breaker/errors.ts';
export {
  type OnCircuitStoreRestoredArguments,
  type OnCircuitStoreUnavailableArguments,
  SharedCircuitBreaker,
  sharedCircuitDefaults,
} from './strategies/circuit-breaker/fleet.ts';
export {
  CircuitBreakerManualControl,
  CircuitBreakerStateProvider,
} from './strategies/circuit-breaker/manual-control.ts';
export type {
  BreakDurationGeneratorArguments,
  CircuitBreakerPredicateArguments,
  CircuitBreakerStrategyOptions,
  CircuitState,
  OnCircuitClosedArguments,
  OnCircuitHalfOpenedArguments,
  OnCircuitOpenedArguments,
} from './strategies/circuit-breaker/options.ts';
export {
  type CircuitProbeClaim,
  type CircuitSync,
  type CircuitSyncReply,
  type CircuitTransition,
  isSharedCircuitStore,
  type LocalCircuitBreaker,
  type SharedCircuitState,
  type SharedCircuitStore,
  type SharedCircuits,
} from './strategies/circuit-breaker/shared.ts';
export { circuitBreakerStrategy } from './strategies/circuit-breaker/strategy.ts';
export { concurrencyLimiterDefaults } from './strategies/concurrency-limiter/defaults.ts';
export {
  ConcurrencyLimiterRejectedError,
  isConcurrencyLimiterRejectedError,
} from './strategies/concurrency-limiter/errors.ts';
export type {
  ConcurrencyLimiterStrategyOptions,
  OnConcurrencyLimiterRejectedArguments,
} from './strategies/concurrency-limiter/options.ts';
export { concurrencyLimiterStrategy } from './strategies/concurrency-limiter/strategy.ts';
export type {
  FallbackActionArguments,
  FallbackPredicateArguments,
  FallbackStrategyOptions,
  OnFallbackArguments,
} from './strategies/fallback/options.ts';
export { fallbackStrategy } from './strategies/fallback/strategy.ts';
export { hedgingDefaults } from './strategies/hedging/defaults.ts';
export type {
  HedgingActionGeneratorArguments,
  HedgingDelayGeneratorArguments,
  HedgingPredicateArguments,
  HedgingStrategyOptions,
  OnHedgingArguments,
} from './strategies/hedging/options.ts';
export { hedgingStrategy } from './strategies/hedging/strategy.ts';
export { lockDefaults } from './strategies/lock/defaults.ts';
export {
  InvalidKeyError,
  isInvalidKeyError,
  isLockLostError,
  isLockNotAcquiredError,
  isStaleTokenError,
  isStoreSetupError,
  isStoreUnavailableError,
  LockLostError,
  LockNotAcquiredError,
  StaleTokenError,
  StoreSetupError,
  StoreUnavailableError,
} from './strategies/lock/errors.ts';
export type {
  LockEventArguments,
  LockStoreErrorArguments,
  LockStrategyOptions,
} from './strategies/lock/options.ts';
export type { LeaseInfo, LockStore } from './strategies/lock/store.ts';
export { type LockStrategyError, lockStrategy } from './strategies/lock/strategy.ts';
export { getLockToken, LOCK_TOKEN } from './strategies/lock/token.ts';
export { rateLimiterDefaults } from './strategies/rate-limiter/defaults.ts';
export { isRateLimiterRejectedError, RateLimiterRejectedError } from './strategies/rate-limiter/errors.ts';
export type { RateLimitDecision, RateLimiter } from './strategies/rate-limiter/limiter.ts';
export type {
  OnRateLimiterRejectedArguments,
  RateLimiterStrategyOptions,
  SharedRateLimiterOptions,
  SlidingWindowRateLimiterOptions,
  StandaloneLimiterOptions,
  TokenBucketRateLimiterOptions,
} from './strategies/rate-limiter/options.ts';
export {
  isSharedRateLimitStore,
  type OnRateLimiterStoreUnavailableArguments,
  type RateLimitPermits,
  type SharedRateLimitPolicy,
  type SharedRateLimitStore,
} from './strategies/rate-limiter/shared.ts';
export { SharedRateLimiter, sharedRateLimiterDefaults } from './strategies/rate-limiter/shared-limiter.ts';
export { SlidingWindowRateLimiter } from './strategies/rate-limiter/sliding-window.ts';
export { rateLimiterStrategy } from './strategies/rate-limiter/strategy.ts';
export { TokenBucketRateLimiter } from './strategies/rate-limiter/token-bucket.ts';
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
