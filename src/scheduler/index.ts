export { ConfigError, type ConfigProblem, isConfigError } from './config-error.ts';
export {
  attributeStrayError,
  isJobExitError,
  isStrayJobError,
  JobExitError,
  type RunningJob,
  runningJob,
  type StrayErrorAttribution,
  type StrayErrorOrigin,
  StrayJobError,
} from './containment.ts';
export { isShutdownError, isUnknownJobError, ShutdownError, UnknownJobError } from './errors.ts';
export { logSchedulerEvents } from './event-log.ts';
export type {
  ChaosInjectedEvent,
  FinishedEvent,
  FinishFailedEvent,
  FireKind,
  LockLostEvent,
  OccurrenceEventBase,
  RetryingEvent,
  SchedulerEvent,
  SchedulerListener,
  SkippedEvent,
  StartedEvent,
  StoreErrorEvent,
  StrayErrorEvent,
  TimedOutEvent,
} from './events.ts';
export type { FireResult, SchedulerLogger, SkipReason } from './fire.ts';
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
} from './job.ts';
export {
  createScheduler,
  type ManualRunOptions,
  type Scheduler,
  type SchedulerOptions,
  type TriggerResult,
} from './scheduler.ts';
export { isJobWorkerError, JobWorkerError } from './worker-run.ts';
