import type { OverlapPolicy } from '../ledger/contract.ts';
import type { Duration } from '../pipeline/duration.ts';
import type { TelemetryListener } from '../pipeline/strategy.ts';
import type {
  ChaosBehaviorStrategyOptions,
  ChaosFaultStrategyOptions,
  ChaosLatencyStrategyOptions,
  ChaosOutcomeStrategyOptions,
} from '../strategies/chaos/options.ts';
import type { LockStore } from '../strategies/lock/store.ts';
import type { RetryStrategyOptions } from '../strategies/retry/options.ts';
import type { FinishedEvent, SchedulerEvent, SkippedEvent } from './events.ts';

/** The logger a job receives: pino's methods, no pino types needed. */
export interface JobLogger {
  debug(object: object | string, message?: string): void;
  info(object: object | string, message?: string): void;
  warn(object: object | string, message?: string): void;
  error(object: object | string, message?: string): void;
}

/** What `run(ctx)` receives for one attempt of one scheduled occurrence. */
export interface JobContext {
  /** Aborted on timeout, on a lost lease and on shutdown after the grace period. Pass it on. */
  readonly signal: AbortSignal;
  /** The job's name. */
  readonly job: string;
  /** The instant the schedule named for this occurrence; identical on every instance. */
  readonly scheduledAt: Date;
  /** 1 for the first attempt, 2 for the first retry, ... */
  readonly attempt: number;
  readonly logger: JobLogger;
  /** The fencing token of the job's lock (also `getLockToken()`); undefined for `lock: false`. */
  readonly token: number | undefined;
}

export interface JobLockOptions {
  /** Lock key. Defaults to the job's name. */
  key?: string;
  /** Lease length, renewed every ttl / 3 while the job runs. Defaults to 30 s. */
  ttl?: Duration;
  /**
   * Kept for configs written before `overlap`: a job does not poll its lock. `wait >= ttl` without
   * an `overlap` reads as `overlap: 'buffer-all'`; any other value changes nothing. Defaults to 0.
   */
  wait?: Duration;
}

export interface JobDefinition {
  /** Unique name: the default lock key, the key of the run ledger, the name in logs. */
  name: string;
  /** Cron expression (croner syntax, optional seconds field), e.g. `'0 2 * * *'`. */
  schedule: string;
  /** The work. Honour `ctx.signal`; pass `ctx.token` to writes that must be fenced. */
  run: (ctx: JobContext) => unknown;
  /** IANA timezone for the schedule. Defaults to the config's `timezone`, else the machine's. */
  timezone?: string;
  /** `false` to run without a lock (no fleet-wide dedup). Defaults to `{ key: name, ttl: '30s', wait: 0 }`. */
  lock?: false | JobLockOptions;
  /** Per-attempt timeout. Defaults to none. */
  timeout?: Duration | false;
  /** Retry options (Polly v8 names), or `false`. Defaults to no retry. */
  retry?: false | RetryStrategyOptions;
  /**
   * Chaos strategies (Polly v8's, see docs/strategies/chaos.md) between the retry and `run(ctx)`,
   * to rehearse a failing job in staging: each key adds one strategy with those options. An injected
   * fault, outcome or latency is an attempt of the job as the others are, so `timeout` and `retry`
   * see it and the run ledger records it. `false` or none: no chaos. Defaults to none.
   *
   * @example
   * defineJob({ name: 'sync', schedule: '0 * * * *', retry: {}, chaos: { fault: { injectionRate: 0.5, fault: new Error('chaos') } }, run });
   */
  chaos?: false | JobChaosOptions;
  /** `false` to keep the job in the config without scheduling it. Defaults to true. */
  enabled?: boolean;
  /**
   * At start, the latest scheduled occurrence inside this window that the ledger does not hold
   * runs once. Defaults to none (no catch-up). A job the ledger has never seen is not backfilled.
   */
  catchUp?: Duration;
  /**
   * A fire that cannot start within this after its instant is skipped as `missed`; a buffered fire
   * waits at most this long; an occurrence whose holder died is taken over until its lease has been
   * expired this long. Defaults to 1 min.
   */
  startingDeadline?: Duration;
  /**
   * What a fire does while an earlier occurrence of the job runs anywhere in the fleet:
   * `'skip'` (recorded as skipped, reason `overlap`), `'buffer-one'`, `'buffer-all'` (wait, then run
   * oldest first), `'cancel-other'` (abort the running one, then run), `'allow-all'` (run
   * concurrently, each under its own lease). Defaults to `'skip'` (`'buffer-all'` when
   * `lock.wait >= lock.ttl`). Needs a lock; `lock: false` jobs only avoid overlapping themselves.
   */
  overlap?: OverlapPolicy;
  /**
   * At most this many occurrences of the job run at once, fleet-wide: a whole number >= 1. With
   * more than 1, each runs under a lease of its own (it no longer excludes other jobs sharing its
   * lock key), and `overlap` decides what a fire does while that many run (`cancel-other` cancels
   * the oldest). Not with `overlap: 'allow-all'`, which is unbounded. `lock: false` jobs bound their
   * runs on each instance only. Defaults to 1.
   *
   * @example
   * defineJob({ name: 'export', schedule: '* * * * *', concurrency: 3, overlap: 'buffer-all', run });
   */
  concurrency?: number;
  /**
   * Spreads the fleet's load: each occurrence starts this much later at most, by a delay in
   * [0, jitter) that every instance derives alike from the job's name and `scheduledAt` (see
   * `jitterOf`). The occurrence stays `scheduledAt`; the starting deadline still counts from it, so
   * jitter must be smaller than `startingDeadline`. Defaults to none.
   *
   * @example
   * defineJob({ name: 'sync', schedule: '0 * * * *', jitter: '5m', run: sync });
   */
  jitter?: Duration;
  /**
   * Where `run` runs: `'none'` in the runner's process (an error escaping it fails the run, see
   * containment), `'worker'` in a worker thread of its own for each run, which loads the config
   * file again and runs the job of this name there, so its crash, `process.exit()`, memory
   * exhaustion or blocked event loop fail that run only. Defaults to the config's `isolation`,
   * else `'none'`.
   *
   * @example
   * defineJob({ name: 'import', schedule: '0 * * * *', isolation: 'worker', resourceLimits: { maxOldGenerationSizeMb: 256 }, run });
   */
  isolation?: JobIsolation;
  /**
   * What a fixed local time (`30 2 * * *`: second, minute and hour fields without `*` or a step)
   * does on a day it does not exist, in the spring-forward gap: `'shift'` runs it once at the first
   * instant after the gap (03:00 CEST for 02:30 in Europe/Berlin), `'skip'` does not run it that
   * day. Either way a fixed time that occurs twice (fall back) runs once, at its first instant, and
   * an interval schedule (`0 * * * *`) runs once per real instant. Defaults to `'shift'`.
   *
   * @example
   * defineJob({ name: 'backup', schedule: '30 2 * * *', timezone: 'Europe/Berlin', dst: 'skip', run });
   */
  dst?: DstPolicy;
  /**
   * The worker's limits for `isolation: 'worker'` (Node's `Worker` `resourceLimits`): a run that
   * needs more fails, the runner goes on. Defaults to Node's (the process's limits).
   */
  resourceLimits?: JobResourceLimits;
  /** Called when this instance ran an occurrence and it succeeded. Defaults to the config's `onSuccess`. */
  onSuccess?: JobHook<FinishedEvent>;
  /** Called when this instance ran an occurrence and it failed (after retries). Defaults to the config's `onFailure`. */
  onFailure?: JobHook<FinishedEvent>;
  /**
   * Called when this instance decided not to run an occurrence (overlap, missed, store-unavailable,
   * shutdown, store-reset; not `already-done`, which another instance decided). Defaults to the config's `onSkip`.
   */
  onSkip?: JobHook<SkippedEvent>;
}

/**
 * A job's chaos strategies, each with the options of its strategy; they run outermost first in this
 * order: latency, fault, outcome, behavior (Polly's usual order), the job's `run` innermost.
 */
export interface JobChaosOptions {
  /** `chaosFaultStrategy` options: an injected attempt fails with `fault` without calling `run`. */
  fault?: ChaosFaultStrategyOptions;
  /** `chaosLatencyStrategy` options: an injected attempt waits `latency` (aborted with `ctx.signal`), then calls `run`. */
  latency?: ChaosLatencyStrategyOptions;
  /** `chaosOutcomeStrategy` options: an injected attempt ends with `outcomeGenerator`'s value or error without calling `run`. */
  outcome?: ChaosOutcomeStrategyOptions;
  /** `chaosBehaviorStrategy` options: an injected attempt runs `behaviorGenerator`, then `run`. */
  behavior?: ChaosBehaviorStrategyOptions;
}

/** What a fixed local time does on the day the spring-forward gap skips it: see `JobDefinition.dst`. */
export type DstPolicy = 'shift' | 'skip';

/** Where a job's `run` runs: in the runner's process, or in a worker thread of its own per run. */
export type JobIsolation = 'none' | 'worker';

/** The limits of an isolated job's worker thread, as Node's `Worker` takes them; each in MB. */
export interface JobResourceLimits {
  /** The main heap's maximum size. */
  maxOldGenerationSizeMb?: number;
  /** The heap space for recently created objects. */
  maxYoungGenerationSizeMb?: number;
  /** The memory range for generated code. */
  codeRangeSizeMb?: number;
  /** The thread's maximum stack size. */
  stackSizeMb?: number;
}

/**
 * A job's hook: called once per occurrence, on the instance that decided it, with the scheduler's
 * event. Not awaited by the fire: a hook that throws, rejects or hangs is logged and changes nothing.
 */
export type JobHook<Event> = (event: Event) => unknown;

/**
 * What the config's `telemetry` receives: each job's pipeline events and the scheduler's events.
 * `openTelemetry()` from `resil/opentelemetry` is one; both members are optional.
 *
 * @example
 * defineConfig({ telemetry: openTelemetry({ tracer, meter }), jobs });
 */
export interface SchedulerTelemetry {
  /**
   * The telemetry listener of the pipeline of the job named `job` (its strategy events and, with
   * `onPipelineExecuted`, its executions), asked once per job when the config is loaded.
   */
  pipelineListener?(job: string): TelemetryListener | undefined;
  /** Receives every scheduler event, as a `scheduler.on()` subscriber does. */
  onSchedulerEvent?(event: SchedulerEvent): void;
  /**
   * Exports what is still buffered (a batching span processor, a periodic metric reader). The
   * `resil` CLI awaits it, for at most 5 s, after each command and before the process exits.
   */
  flush?(): void | Promise<void>;
}

export interface ResilConfig {
  /** Where leases and the run ledger live, shared by every job. Defaults to a MemoryLockStore. */
  store?: LockStore;
  /** Default timezone for every job. */
  timezone?: string;
  /** Name of this instance in the ledger and logs. Defaults to `hostname:pid`. */
  instance?: string;
  /** On SIGINT/SIGTERM, how long running jobs may finish before their signals abort. Defaults to 30 s. */
  shutdownGrace?: Duration;
  /** How long completed occurrences stay in the run ledger. Defaults to 7 days. */
  ledgerRetention?: Duration;
  /**
   * How many of a job's latest records the run ledger keeps; a record of an occurrence still inside
   * its starting deadline or catch-up window (it dedupes that occurrence's fires) is kept past that
   * number. Defaults to 100.
   */
  ledgerRecordLimit?: number;
  /** Every job's `isolation` unless the job has its own. Defaults to `'none'`. */
  isolation?: JobIsolation;
  /** Every job's `onSuccess` unless the job has its own. Defaults to none. */
  onSuccess?: JobHook<FinishedEvent>;
  /** Every job's `onFailure` unless the job has its own. Defaults to none. */
  onFailure?: JobHook<FinishedEvent>;
  /** Every job's `onSkip` unless the job has its own. Defaults to none. */
  onSkip?: JobHook<SkippedEvent>;
  /** Metrics and traces of every job: `openTelemetry({ tracer, meter })` from `resil/opentelemetry`. Defaults to none. */
  telemetry?: SchedulerTelemetry;
  jobs: JobDefinition[];
}

/** A job after validation: durations in ms, defaults applied. */
export interface ResolvedJob {
  readonly name: string;
  readonly schedule: string;
  readonly timezone: string | undefined;
  readonly run: (ctx: JobContext) => unknown;
  readonly lock: false | { readonly key: string; readonly ttlMs: number; readonly waitMs: number };
  readonly timeoutMs: number | undefined;
  readonly retry: false | RetryStrategyOptions;
  /** The job's chaos strategies' options; undefined (or none of the four) for none. */
  readonly chaos?: JobChaosOptions | undefined;
  readonly enabled: boolean;
  readonly catchUpMs: number | undefined;
  readonly startingDeadlineMs: number;
  readonly overlap: OverlapPolicy;
  /** How many occurrences may run at once (undefined reads as 1). */
  readonly concurrency?: number | undefined;
  /** The job's `jitter` in ms; undefined (or 0) for none. */
  readonly jitterMs?: number | undefined;
  /** Where `run` runs, the config's default applied (undefined reads as `'none'`). */
  readonly isolation?: JobIsolation | undefined;
  /** The job's DST policy (undefined reads as `'shift'`). */
  readonly dst?: DstPolicy | undefined;
  /** The worker's limits for `isolation: 'worker'`. */
  readonly resourceLimits?: JobResourceLimits | undefined;
  /** The job's hooks, the config's defaults applied. */
  readonly onSuccess?: JobHook<FinishedEvent> | undefined;
  readonly onFailure?: JobHook<FinishedEvent> | undefined;
  readonly onSkip?: JobHook<SkippedEvent> | undefined;
  /** The config's `telemetry.pipelineListener(name)`, for the job's pipeline. */
  readonly telemetry?: TelemetryListener | undefined;
}

/** A config after validation. */
export interface ResolvedConfig {
  /** The file it came from. */
  readonly filepath: string;
  readonly store: LockStore;
  readonly instance: string;
  readonly shutdownGraceMs: number;
  readonly ledgerRetentionMs: number;
  readonly ledgerRecordLimit: number;
  readonly jobs: readonly ResolvedJob[];
  /** The config's `telemetry`. */
  readonly telemetry?: SchedulerTelemetry | undefined;
  /**
   * The module a job with `isolation: 'worker'` runs in, in a worker thread: it loads `filepath`
   * and runs the job of the name it is given. Set by the CLI's config loader; without it (a config
   * given as objects to `createScheduler()`), such a job cannot run.
   */
  readonly jobWorker?: string | URL | undefined;
}

/** The key a job's occurrences live under in the run ledger: its lock key, else its name. */
export function ledgerKeyOf(job: Pick<ResolvedJob, 'name' | 'lock'>): string {
  return job.lock === false ? job.name : job.lock.key;
}
