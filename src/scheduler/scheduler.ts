import { MemoryLockStore } from '../ledger/memory-store.ts';
import type { TimeProvider } from '../pipeline/time.ts';
import { ConfigError } from './config-error.ts';
import type { SchedulerListener } from './events.ts';
import type { FireResult, SchedulerLogger } from './fire.ts';
import type { ResilConfig, ResolvedConfig } from './job.ts';
import { JobSchedules } from './occurrence.ts';
import { resolveConfigSync } from './resolve.ts';
import { JobRunner } from './runner.ts';

export interface SchedulerOptions extends ResilConfig {
  /** The clock of every timer and lease judgement. Defaults to the system clock. */
  timeProvider?: TimeProvider;
  /**
   * Where the scheduler's own lines go (start, stop, clock offsets), and the base of each job's
   * `ctx.logger`. Defaults to none: subscribe with `on()` instead (a pino logger fits as it is).
   */
  logger?: SchedulerLogger;
  /** Only these jobs (by name) are scheduled, even if disabled. Defaults to every enabled job. */
  only?: string[];
}

/** Who runs a job by hand and why (recorded with the run), and whether it is forced. */
export interface ManualRunOptions {
  /** Recorded as the run's `actor`, e.g. `ops@host-1`. */
  readonly actor?: string;
  /** Recorded as the run's `triggerReason`. */
  readonly reason?: string;
  /** Run at once, beside whatever runs, under a lease of its own (the overlap policy is not asked). */
  readonly force?: boolean;
  /** Aborts the run (while it waits, it is skipped as `shutdown`). */
  readonly signal?: AbortSignal;
}

/** What `trigger()` resolves to. */
export type TriggerResult = FireResult;

/** The scheduler behind `resil run`, to embed in your own process. */
export interface Scheduler {
  /** Learns the store's clock, schedules the jobs and starts catch-up runs. Once only. */
  start(): Promise<void>;
  /**
   * No new fires; running jobs get `graceMs` (default: the config's `shutdownGrace`, 30 s) to
   * finish, then their signals abort and their leases are released. Idempotent.
   */
  stop(options?: { graceMs?: number }): Promise<void>;
  /**
   * Runs a job now through its full pipeline, like `resil jobs run`: under its overlap policy (a
   * `skip` while another occurrence runs is not recorded), or with `force` beside whatever runs.
   * `actor` and `reason` are recorded with the run (`trigger: 'manual'`).
   */
  trigger(name: string, options?: ManualRunOptions): Promise<TriggerResult>;
  /**
   * Runs the past occurrence `scheduledAt` of a job, like one occurrence of `resil jobs backfill`:
   * at most once across the fleet, skipped as `already-done` when it ran (an occurrence skipped as
   * `missed` or `paused` runs), under its overlap policy; recorded with `trigger: 'backfill'`.
   */
  backfill(
    name: string,
    scheduledAt: Date | number,
    options?: Omit<ManualRunOptions, 'force'>,
  ): Promise<TriggerResult>;
  /** The next `count` instants of the job's schedule (default 5), after now by the scheduler's clock. */
  nextRuns(name: string, count?: number): Date[];
  /** Subscribes to every event (`started`, `succeeded`, `failed`, `skipped`, ...); returns the unsubscribe. */
  on(listener: SchedulerListener): () => void;
}

const silentLogger: SchedulerLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silentLogger,
};

/** The name `ConfigError`s from `createScheduler()` give as their file. */
const optionsFile = 'createScheduler() options';

/**
 * Creates a scheduler for `options` (a config from `defineConfig()` plus `timeProvider`,
 * `logger`, `only`), validated as a config file is: bad input throws a `ConfigError` that lists
 * every problem (unknown option, bad cron, bad duration, duplicate job name, ...).
 *
 * @example
 * import { createScheduler } from 'resil/scheduler';
 * const scheduler = createScheduler({ store, jobs: [nightlyReport] });
 * scheduler.on((event) => { if (event.type === 'failed') alert(event.job, event.error); });
 * await scheduler.start();
 * process.once('SIGTERM', () => void scheduler.stop({ graceMs: 30_000 }));
 */
export function createScheduler(options: SchedulerOptions): Scheduler {
  const { timeProvider, logger, only, ...config } = options;
  // The default store judges leases on the scheduler's clock, fake or not.
  if (config.store === undefined && timeProvider !== undefined) {
    config.store = new MemoryLockStore({ timeProvider });
  }
  const resolved: ResolvedConfig = resolveConfigSync(config, optionsFile);
  // A worker loads the job from its config file; jobs given here as objects have none.
  const isolated = resolved.jobs.filter((job) => job.isolation === 'worker');
  if (isolated.length > 0) {
    throw new ConfigError(
      isolated.map((job) => ({
        file: optionsFile,
        job: job.name,
        option: 'isolation',
        value: 'worker',
        message:
          "a worker loads its job from a config file, which createScheduler() options are not: run such jobs with the resil CLI, or use isolation: 'none'",
      })),
    );
  }
  const runner = new JobRunner({
    config: resolved,
    logger: logger ?? silentLogger,
    jobs: only,
    timeProvider,
  });
  const schedules = new JobSchedules();
  return {
    start: () => runner.start(),
    stop: (stopOptions) => runner.stop(stopOptions),
    trigger: (name, manual = {}) => runner.trigger(name, manual),
    backfill: (name, scheduledAt, manual = {}) => runner.backfill(name, Number(scheduledAt), manual),
    nextRuns(name, count = 5) {
      const job = resolved.jobs.find((candidate) => candidate.name === name);
      if (job === undefined) throw runner.unknownJob(name);
      if (!(Number.isInteger(count) && count >= 0)) {
        throw new RangeError(`nextRuns("${name}", count): count must be a whole number >= 0, got ${count}`);
      }
      const schedule = schedules.of(job);
      const instants: Date[] = [];
      let cursor = runner.clock.now();
      while (instants.length < count) {
        const next = schedule.nextAfter(cursor);
        if (next === undefined) break;
        instants.push(new Date(next));
        cursor = next;
      }
      return instants;
    },
    on: (listener) => runner.on(listener),
  };
}
