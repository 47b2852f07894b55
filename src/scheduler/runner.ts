import { hasInstanceRegistry, hasRunLedger } from '../ledger/contract.ts';
import { systemTimeProvider, type TimeProvider, type TimerHandle, withDeadline } from '../pipeline/time.ts';
import { type LockStore, storeNameOf } from '../strategies/lock/store.ts';
import { ClaimSlots, claimSlotsPerRunner } from './claim-slots.ts';
import { ConfigDriftWatch, type DriftVariant, FleetDefinitions } from './config-drift.ts';
import { describeError } from './credentials.ts';
import { type DstNotice, DstNoticeFinder, describeDstNotice, type JobDstNotices } from './dst.ts';
import { ShutdownError, UnknownJobError } from './errors.ts';
import { logSchedulerEvents } from './event-log.ts';
import { type FireKind, SchedulerEvents, type SchedulerListener } from './events.ts';
import { Fifo } from './fifo.ts';
import {
  type FireEnvironment,
  type FireOptions,
  type FireResult,
  JobFirer,
  type SchedulerLogger,
  type SkipReason,
} from './fire.ts';
import { type DueEntry, FireQueue, type NextDue } from './fire-queue.ts';
import { firstClaimer } from './first-claims.ts';
import { startInstanceHeartbeat } from './instance-heartbeat.ts';
import { ledgerKeyOf, type ResolvedConfig, type ResolvedJob } from './job.ts';
import { runJobHooks } from './job-hooks.ts';
import { type JobSchedule, JobSchedules } from './occurrence.ts';
import { StoreClock } from './store-clock.ts';

export type { FireResult, SchedulerLogger, SkipReason };

const noDrift: ReadonlyMap<string, DriftVariant[]> = new Map();

export interface JobRunnerOptions {
  config: ResolvedConfig;
  /** pino logger (from `createLogger()`); every fire logs one line on it. */
  logger: SchedulerLogger;
  /** Only these jobs (by name), even if disabled. Defaults to every enabled job. */
  jobs?: string[];
  /** The clock every fire is timed on. Defaults to the system clock. */
  timeProvider?: TimeProvider;
  /** How often the offset to the store's clock is re-learnt. Defaults to 60 s. */
  clockRefreshMs?: number;
  /** Offsets to the store's clock beyond this are logged as warnings. Defaults to 1 s. */
  clockWarnThresholdMs?: number;
  /** After the grace period, how long aborted jobs get to settle and release their leases. Defaults to 5 s. */
  abortSettleMs?: number;
  /** What the instance registry (`resil instances`) shows as this instance's version. Defaults to `unknown`. */
  version?: string;
}

/**
 * How many scheduled fires of a runner wait for their first claim's answer at once; fires due past
 * it are held until one is answered (see `JobRunner.#held`). Twice the claims in flight
 * ({@link claimSlotsPerRunner}): the next ones are ready as slots free up.
 */
const claimingFiresLimit = 2 * claimSlotsPerRunner;

/** A scheduled fire not started yet (see `JobRunner.#held`). */
interface HeldFire {
  readonly firer: JobFirer;
  readonly scheduledAt: number;
}

/** A fire in progress, tracked for graceful shutdown. */
interface InFlightFire {
  readonly job: string;
  readonly scheduledAt: number;
  readonly controller: AbortController;
  /** True once the job's `run` was called: only then does the grace period apply. */
  started: boolean;
  done: Promise<FireResult>;
}

/** A job in the runner's fire queue; its pipeline is built when it first fires. */
class ScheduledJob implements DueEntry {
  /** The job's next instant (the queue's key). */
  dueAt = Number.NaN;
  /**
   * Every occurrence at or before this instant is handled: fired, caught up, or passed before
   * the start. No instant of the schedule lies between it and `dueAt`.
   */
  handledThrough = Number.NaN;
  #firer: JobFirer | undefined;

  constructor(
    readonly job: ResolvedJob,
    readonly schedule: JobSchedule,
    readonly order: number,
    readonly environment: FireEnvironment,
  ) {}

  get firer(): JobFirer {
    this.#firer ??= new JobFirer(this.job, this.environment);
    return this.#firer;
  }
}

/** Where in a list of `count` jobs this instance starts its fires of one instant: FNV-1a of its name. */
function firstInOrder(instance: string, count: number): number {
  if (count === 0) return 0;
  let hash = 0x811c9dc5;
  for (let index = 0; index < instance.length; index++) {
    hash = Math.imul(hash ^ instance.charCodeAt(index), 0x01000193) >>> 0;
  }
  return hash % count;
}

/** The least time between two instants of a schedule: croner's schedules are to the second. */
const minInstantGapMs = 1_000;

/** How many occurrences a late fire enumerates when it reports those that passed unfired. */
const missedReportLimit = 100;

/** Up to this many jobs, the `runner started` line lists them; beyond, a debug line does. */
const listedJobsLimit = 20;

/**
 * Schedules jobs on one timer (a {@link FireQueue} of each job's next instant, which croner
 * computes) and fires every occurrence through the job's pipeline (see {@link JobFirer}, built at
 * the job's first fire): the engine behind `resil run`.
 *
 * @example
 * const runner = new JobRunner({ config: await loadConfig(), logger: createLogger() });
 * await runner.start();
 * process.once('SIGTERM', () => runner.stop().then(() => process.exit(0)));
 */
export class JobRunner {
  readonly #config: ResolvedConfig;
  readonly #logger: SchedulerLogger;
  readonly #time: TimeProvider;
  readonly #clock: StoreClock;
  readonly #environment: FireEnvironment;
  readonly #jobs: ScheduledJob[];
  readonly #queue: FireQueue<ScheduledJob>;
  readonly #inFlight = new Set<InFlightFire>();
  /**
   * Scheduled fires not started yet, oldest first: due while
   * {@link claimingFiresLimit} fires were already waiting for their first claim's answer. A fire
   * held here is two numbers and a reference; started, it holds its whole chain of calls until its
   * claim is answered (ten thousand jobs due together would hold them all at once).
   */
  readonly #held = new Fifo<HeldFire>();
  /**
   * Fires of the current wake of jobs another live instance claims first ({@link firstClaimer}):
   * held behind this wake's other fires once the wake is over (a microtask), so that each instance
   * of a fleet claims its own share of a burst first, and the rest when those occurrences have
   * likely run (one read then answers). Fires of a later wake still go after them.
   */
  readonly #heldAfterWake = new Fifo<HeldFire>();
  /** The microtask that moves {@link #heldAfterWake} into {@link #held} is queued. */
  #afterWakeQueued = false;
  /** Scheduled fires started and waiting for their first claim's answer. */
  #claiming = 0;
  /** True while `#startHeld` runs: a fire it starts may end at once and call it again. */
  #startingHeld = false;
  readonly #events = new SchedulerEvents();
  /** Aborted when stop() begins: fires claim nothing more. */
  readonly #stopping = new AbortController();
  readonly #clockRefreshMs: number;
  readonly #abortSettleMs: number;
  readonly #version: string;
  /** Registers this instance in the store's registry while it runs (`resil instances`). */
  #heartbeat: { stop(): Promise<void> } | undefined;
  #driftWatch: ConfigDriftWatch | undefined;
  #refreshTimer: TimerHandle | undefined;
  #state: 'idle' | 'running' | 'stopping' = 'idle';
  #stopped: Promise<void> | undefined;

  constructor(options: JobRunnerOptions) {
    this.#config = options.config;
    this.#time = options.timeProvider ?? systemTimeProvider;
    this.#logger = options.logger.child({ instance: options.config.instance });
    this.#clockRefreshMs = options.clockRefreshMs ?? 60_000;
    this.#abortSettleMs = options.abortSettleMs ?? 5_000;
    this.#version = options.version ?? 'unknown';
    this.#clock = new StoreClock(options.config.store, this.#time, {
      logger: this.#logger,
      warnThresholdMs: options.clockWarnThresholdMs,
    });
    this.#events.on(logSchedulerEvents(this.#logger));
    this.#events.on(runJobHooks(options.config.jobs, this.#logger, this.#time));
    const telemetry = options.config.telemetry;
    if (telemetry?.onSchedulerEvent) this.#events.on((event) => telemetry.onSchedulerEvent!(event));
    this.#environment = environmentFor(options.config, this.#clock, this.#time, this.#logger, this.#events);
    const schedules = new JobSchedules();
    const selected = selectJobs(options.config, options.jobs);
    // Jobs due at the same instant fire in the config's order, from a place in it that depends on
    // the instance's name: the instances of a fleet then claim different jobs first, and each
    // mostly finds the rest already done instead of racing the others for every job.
    const start = firstInOrder(options.config.instance, selected.length);
    this.#jobs = selected.map(
      (job, index) =>
        new ScheduledJob(
          job,
          schedules.of(job),
          (index - start + selected.length) % selected.length,
          this.#environment,
        ),
    );
    this.#queue = new FireQueue({
      time: this.#time,
      onDue: (scheduled, now) => this.#onDue(scheduled, now),
      // The queue wakes a few ms before an instant (see `FireQueue`): when some job claims
      // through a store that can warm up (`RunLedger.warmUp`), that wake also sends it one
      // request, so the claims go out on an awake connection.
      onPrepare:
        typeof this.#environment.ledger?.warmUp === 'function' &&
        this.#jobs.some(({ job }) => job.lock !== false)
          ? () => this.#warmUpStore()
          : undefined,
      onClockStep: (stepMs) =>
        this.#logger.info(
          { stepMs },
          `the wall clock stepped ${stepMs > 0 ? 'forward' : 'back'}: every job's next instant is checked against it`,
        ),
    });
  }

  /** The jobs this runner schedules. */
  get jobs(): readonly ResolvedJob[] {
    return this.#jobs.map((scheduled) => scheduled.job);
  }

  /** Subscribes to the runner's events (one per fire's start and end, retries, ...); returns the unsubscribe. */
  on(listener: SchedulerListener): () => void {
    return this.#events.on(listener);
  }

  /** The error for a job name the config does not define, with a suggestion. */
  unknownJob(name: string): UnknownJobError {
    const known = this.#config.jobs.map((candidate) => candidate.name);
    return new UnknownJobError(name, known, this.#config.filepath);
  }

  /**
   * The scheduled jobs that live instances run with other definitions (config drift), as this
   * instance saw at its last heartbeat; empty when the store keeps no instance registry.
   */
  get configDrift(): ReadonlyMap<string, DriftVariant[]> {
    return this.#driftWatch?.drift ?? noDrift;
  }

  /** This instance's view of the store's clock. */
  get clock(): StoreClock {
    return this.#clock;
  }

  /**
   * Learns the store's clock, schedules every job and starts catch-up runs. Resolves once the jobs
   * are scheduled and catch-up decided (catch-up runs continue in the background). A store that is down at start is
   * logged, not fatal: fires are skipped as `store-unavailable` until it returns.
   */
  async start(): Promise<void> {
    if (this.#state !== 'idle') {
      throw new Error('start() was called twice: a scheduler starts once (and not again after stop()).');
    }
    this.#state = 'running';
    const { store } = this.#config;
    if (this.#environment.ledger === undefined) {
      this.#logger.warn(
        { store: storeNameOf(store) },
        'the store keeps no run ledger: only the lock deduplicates occurrences, and catchUp is ignored',
      );
    }
    await this.#syncClock('start');
    if (this.#state !== 'running') return;
    this.#scheduleClockRefresh();

    const startedAt = this.#time.now();
    if (this.#jobs.length === 0) {
      this.#logger.warn(
        'no enabled job in the config: nothing to schedule (enable one, or name it with --job)',
      );
    }
    // Asked right after a job's next instant, the DST finder finds its schedule still parsed.
    const dstNotices = new DstNoticeFinder(startedAt);
    const touchedByDst: JobDstNotices[] = [];
    for (const scheduled of this.#jobs) {
      // Occurrences before the start are not this instance's to fire (catch-up decides those).
      scheduled.handledThrough = startedAt;
      const next = scheduled.schedule.nextAfter(startedAt);
      const notices = dstNotices.of(scheduled.job);
      if (notices !== undefined) touchedByDst.push(notices);
      if (next === undefined) {
        this.#logger.warn(
          { job: scheduled.job.name, schedule: scheduled.job.schedule },
          'this schedule never fires (no future instant matches it): the job will not run',
        );
        continue;
      }
      scheduled.dueAt = next;
      this.#queue.add(scheduled);
    }
    this.#queue.start();
    this.#logStarted(store);
    this.#logDstNotices(touchedByDst);
    if (hasInstanceRegistry(store)) {
      this.#driftWatch = new ConfigDriftWatch({
        own: new FleetDefinitions(this.#jobs.map(({ job }) => job)),
        registry: store,
        instance: this.#config.instance,
        logger: this.#logger,
      });
      this.#heartbeat = startInstanceHeartbeat(store, {
        definitions: this.#driftWatch,
        time: this.#time,
        instance: this.#config.instance,
        version: this.#version,
        jobs: this.#jobs.length,
        startedAt: Math.round(this.#clock.now()),
        clockOffsetMs: () => this.#clock.offset?.offsetMs ?? 0,
        onError: (error) => this.#logger.debug({ err: error }, 'instance registry: heartbeat failed'),
      });
    }
    // Deciding is a few ledger reads; the catch-up runs themselves go on in the background.
    await Promise.all(
      this.#jobs
        .filter(({ job }) => job.catchUpMs !== undefined)
        .map((scheduled) => this.#catchUp(scheduled)),
    );
  }

  /**
   * Graceful stop: no new fires; fires still waiting to start are dropped; running jobs get
   * `config.shutdownGraceMs` to finish, then their signals abort (`ShutdownError`) and their leases
   * are released as they settle. Resolves when done (idempotent).
   */
  stop(options: { graceMs?: number } = {}): Promise<void> {
    this.#stopped ??= this.#stop(options.graceMs ?? this.#config.shutdownGraceMs);
    return this.#stopped;
  }

  /**
   * Runs `name` now through its full pipeline, as `resil jobs run` does (a manual run: no
   * deadline; skipped as `overlap` while another occurrence holds its lease), tracked like any
   * fire, so `stop()` waits for it. Any job of the config, scheduled here or not.
   */
  trigger(name: string, options: TriggerOptions = {}): Promise<FireResult> {
    return this.#fireNow(name, 'trigger', Math.round(this.#clock.now()), { ...options, kind: 'manual' });
  }

  /**
   * Runs the past occurrence `scheduledAt` of `name` through its full pipeline, as `resil jobs
   * backfill` does: claimed like a fire (at most once across the fleet; one done already is skipped
   * as `already-done`, one skipped as `missed` or `paused` runs), under its overlap policy, and
   * allowed to start until its starting deadline counted from now.
   */
  backfill(
    name: string,
    scheduledAt: number,
    options: Omit<TriggerOptions, 'force'> = {},
  ): Promise<FireResult> {
    return this.#fireNow(name, 'backfill', scheduledAt, { ...options, kind: 'backfill' });
  }

  #fireNow(
    name: string,
    method: string,
    scheduledAt: number,
    options: TriggerOptions & { kind: FireKind },
  ): Promise<FireResult> {
    if (this.#state === 'stopping') {
      return Promise.reject(new Error(`${method}("${name}") after stop(): the scheduler is stopped.`));
    }
    const job = this.#config.jobs.find((candidate) => candidate.name === name);
    if (job === undefined) return Promise.reject(this.unknownJob(name));
    const scheduled = this.#jobs.find((candidate) => candidate.job === job);
    const firer = scheduled?.firer ?? new JobFirer(job, this.#environment);
    const { signal, onAttemptAborted, ...fireOptions } = options;
    return this.#track(firer, scheduledAt, fireOptions, signal, onAttemptAborted);
  }

  /** @internal Resolves when no fire is in progress (tests). */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight].map((fire) => fire.done));
  }

  async #stop(graceMs: number): Promise<void> {
    const wasRunning = this.#state === 'running';
    this.#state = 'stopping';
    this.#queue.stop();
    if (this.#refreshTimer !== undefined) this.#time.clearTimeout(this.#refreshTimer);
    this.#stopping.abort(new ShutdownError('The job runner is stopping.'));
    // Before start(), only triggered runs can be in flight; they get the grace period too.
    if (!wasRunning && this.#inFlight.size === 0) return;

    // Held fires start now, and end at once as the others not started do (skipped: shutdown).
    this.#moveHeldAfterWake();
    this.#startHeld();
    const notStarted = new ShutdownError(
      'The job runner is stopping: the fire was dropped before the job started.',
    );
    for (const fire of this.#inFlight) if (!fire.started) fire.controller.abort(notStarted);
    const running = [...this.#inFlight].filter((fire) => fire.started).length;
    this.#logger.info({ running, graceMs }, 'stopping: no new fires, waiting for running jobs');
    if (!(await this.#settle(graceMs))) {
      this.#logger.warn(
        { running: this.#inFlight.size, graceMs },
        'grace period over: aborting the signals of running jobs',
      );
      const reason = new ShutdownError('The job runner is stopping: the grace period ran out.');
      for (const fire of this.#inFlight) fire.controller.abort(reason);
      if (!(await this.#settle(this.#abortSettleMs))) {
        const stuck = [...this.#inFlight].map((fire) => ({
          job: fire.job,
          scheduledAt: new Date(fire.scheduledAt).toISOString(),
        }));
        this.#logger.error(
          { running: stuck.length, jobs: stuck, abortSettleMs: this.#abortSettleMs },
          `jobs ignored their aborted signal: stopping without ${stuck.map((fire) => `${fire.job} (${fire.scheduledAt})`).join(', ')}; their leases expire after their ttl`,
        );
      }
    }
    await this.#heartbeat?.stop();
    this.#logger.info('runner stopped');
  }

  /** True when every in-flight fire settled within `ms`. */
  async #settle(ms: number): Promise<boolean> {
    if (this.#inFlight.size === 0) return true;
    return withDeadline(
      this.idle().then(() => true),
      ms,
      () => false,
      this.#time,
    );
  }

  /** One line per job whose fixed local time a DST transition of the next 12 months touches. */
  #logDstNotices(touched: readonly JobDstNotices[]): void {
    // The finder hands jobs of one schedule, zone and policy the same notices: each rendered once
    // (a sentence formats instants with Intl, which a config of 100,000 jobs pays for dearly).
    const rendered = new Map<
      readonly DstNotice[],
      { transitions: object[]; message: string; skips: boolean }
    >();
    for (const { job, timezone, dst, notices } of touched) {
      let line = rendered.get(notices);
      if (line === undefined) {
        line = {
          transitions: notices.map((notice) => ({
            date: notice.date,
            kind: notice.kind,
            localTimes: notice.localTimes,
            runsAt: notice.runsAt === undefined ? null : new Date(notice.runsAt).toISOString(),
          })),
          message: `DST: ${notices.map((notice) => describeDstNotice(notice, timezone, dst)).join('; ')}`,
          skips: notices.some((notice) => notice.kind === 'gap' && notice.runsAt === undefined),
        };
        rendered.set(notices, line);
      }
      const fields = { job, timezone, dst, transitions: line.transitions };
      if (line.skips) this.#logger.warn(fields, line.message);
      else this.#logger.info(fields, line.message);
    }
  }

  #logStarted(store: LockStore): void {
    const summary = (scheduled: ScheduledJob) => ({
      name: scheduled.job.name,
      schedule: scheduled.job.schedule,
      timezone: scheduled.job.timezone,
      nextRun: Number.isNaN(scheduled.dueAt) ? null : new Date(scheduled.dueAt).toISOString(),
      lock: scheduled.job.lock === false ? false : scheduled.job.lock.key,
    });
    const first = this.#queue.peek();
    const fields = {
      jobCount: this.#jobs.length,
      earliest:
        first === undefined ? null : { job: first.job.name, nextRun: new Date(first.dueAt).toISOString() },
      store: storeNameOf(store),
    };
    // A line per start, not a megabyte: past a few jobs the list goes to debug.
    if (this.#jobs.length <= listedJobsLimit) {
      this.#logger.info(
        { ...fields, jobs: this.#jobs.map(summary) },
        `runner started: ${this.#jobs.length} job(s) scheduled`,
      );
      return;
    }
    this.#logger.info(fields, `runner started: ${this.#jobs.length} job(s) scheduled`);
    this.#logger.debug({ jobs: this.#jobs.map(summary) }, 'scheduled jobs');
  }

  /**
   * The queue found `scheduled` due at `now`: fires its occurrence, returns its next instant (or,
   * for a fire on time, how to find it once the fire has started).
   */
  #onDue(scheduled: ScheduledJob, now: number): NextDue {
    const { job, schedule } = scheduled;
    try {
      let scheduledAt = scheduled.dueAt;
      // The next instant is looked for before the fire only when this wake may have passed it: a
      // schedule's instants are whole seconds apart. Else it is found once the fire has started
      // (croner takes up to a few hundred microseconds, which the fire would start late by).
      let next: number | undefined;
      if (now >= scheduledAt + minInstantGapMs) {
        next = schedule.nextAfter(scheduledAt);
        if (next !== undefined && next <= now) {
          // Later than the next instant too (a frozen process, a busy loop, a clock stepped
          // forward): only the latest passed occurrence fires.
          scheduledAt = schedule.latestAtOrBefore(now) ?? scheduledAt;
          next = schedule.nextAfter(scheduledAt);
        }
      }
      const last = scheduled.handledThrough;
      if (scheduledAt <= last) {
        // Catch-up ran this occurrence already (the store's clock was ahead of this one's).
        this.#logger.debug(
          { job: job.name, scheduledAt: new Date(scheduledAt).toISOString() },
          'repeated fire ignored',
        );
        return schedule.nextAfter(last);
      }
      if (scheduledAt !== scheduled.dueAt) this.#reportUnfired(scheduled, last, scheduledAt);
      scheduled.handledThrough = scheduledAt;
      if (!this.#claimsFirst(job)) {
        // After the wake: the fires it makes due that this instance claims first go before it.
        this.#heldAfterWake.push({ firer: scheduled.firer, scheduledAt });
        this.#holdAfterWake();
      } else if (this.#claiming >= claimingFiresLimit || this.#held.size > 0) {
        this.#held.push({ firer: scheduled.firer, scheduledAt });
      } else {
        this.#fireScheduled(scheduled.firer, scheduledAt);
      }
      if (next !== undefined) return next;
      return () => {
        try {
          return schedule.nextAfter(scheduledAt);
        } catch (error) {
          // Only a bug gets here (the schedule was validated): said, rather than the job silently gone.
          this.#logger.error(
            { job: job.name, schedule: job.schedule, err: error },
            'the next instant of the schedule could not be computed: the job fires no more',
          );
          return undefined;
        }
      };
    } catch (error) {
      // Fires never throw (every error becomes a logged result): this only guards against a bug.
      this.#logger.error({ job: job.name, err: error }, 'unexpected error in a fire');
      return schedule.nextAfter(Math.max(now, scheduled.handledThrough));
    }
  }

  /** Starts a scheduled fire; once its first claim is answered, a held one may start. */
  #fireScheduled(firer: JobFirer, scheduledAt: number): void {
    this.#claiming++;
    let claimed = false;
    const onClaimed = () => {
      if (claimed) return;
      claimed = true;
      this.#claiming--;
      this.#startHeld();
    };
    this.#track(firer, scheduledAt, { kind: 'scheduled', onClaimed }).finally(onClaimed);
  }

  /**
   * Starts held fires, oldest first, while fewer than the limit wait for a first claim (all once
   * stopping). Not reentered: a fire that ends at once (a job without a lock, a stop) calls it
   * again from inside `#fireScheduled`, and this loop goes on instead, so the stack stays flat.
   */
  #startHeld(): void {
    if (this.#startingHeld) return;
    this.#startingHeld = true;
    try {
      while (this.#held.size > 0) {
        if (this.#claiming >= claimingFiresLimit && this.#state !== 'stopping') return;
        const next = this.#held.shift()!;
        this.#fireScheduled(next.firer, next.scheduledAt);
      }
    } finally {
      this.#startingHeld = false;
    }
  }

  #holdAfterWake(): void {
    if (this.#afterWakeQueued) return;
    this.#afterWakeQueued = true;
    queueMicrotask(() => {
      this.#afterWakeQueued = false;
      this.#moveHeldAfterWake();
      this.#startHeld();
    });
  }

  #moveHeldAfterWake(): void {
    for (let next = this.#heldAfterWake.shift(); next !== undefined; next = this.#heldAfterWake.shift()) {
      this.#held.push(next);
    }
  }

  /**
   * True when this instance claims the job first in a burst: alone, or the job's
   * {@link firstClaimer} among the live instances that run the same jobs (the instance registry's
   * last read). A job without a lock runs on every instance, and without a run ledger only the
   * lock keeps a second run out: neither waits.
   */
  #claimsFirst(job: ResolvedJob): boolean {
    if (job.lock === false || this.#environment.ledger === undefined) return true;
    const instances = this.#driftWatch?.sameJobsInstances;
    if (instances === undefined || instances.length < 2) return true;
    return firstClaimer(job.name, instances) === this.#config.instance;
  }

  /** A fire came so late that earlier occurrences passed without one (a frozen process, a busy loop). */
  #reportUnfired(scheduled: ScheduledJob, last: number, scheduledAt: number): void {
    const { instants, more } = scheduled.schedule.between(last, scheduledAt, missedReportLimit);
    if (instants.length === 0) return;
    this.#logger.warn(
      {
        job: scheduled.job.name,
        outcome: 'skipped',
        reason: 'missed',
        count: more ? `>${missedReportLimit}` : instants.length,
        first: new Date(instants[0]!).toISOString(),
        last: new Date(instants.at(-1)!).toISOString(),
      },
      'occurrences passed while this instance could not fire (frozen or overloaded); only the latest is fired',
    );
  }

  #track(
    firer: JobFirer,
    scheduledAt: number,
    options: FireOptions,
    callerSignal?: AbortSignal,
    onAttemptAborted?: FireOptions['onAttemptAborted'],
  ): Promise<FireResult> {
    const fire: InFlightFire = {
      job: firer.job.name,
      scheduledAt,
      controller: new AbortController(),
      started: false,
      done: undefined as unknown as Promise<FireResult>,
    };
    const signal =
      callerSignal === undefined
        ? fire.controller.signal
        : AbortSignal.any([fire.controller.signal, callerSignal]);
    fire.done = firer
      .fire(scheduledAt, {
        ...options,
        signal,
        stopping: this.#stopping.signal,
        onAttemptAborted,
        onStart: () => (fire.started = true),
      })
      .finally(() => this.#inFlight.delete(fire));
    this.#inFlight.add(fire);
    return fire.done;
  }

  async #catchUp(scheduled: ScheduledJob): Promise<void> {
    const { job } = scheduled;
    const ledger = this.#environment.ledger;
    if (ledger === undefined) return;
    const now = this.#clock.now();
    const latest = scheduled.schedule.latestAtOrBefore(now);
    const log = this.#logger.child({ job: job.name, kind: 'catch-up' });
    if (latest === undefined || now - latest > job.catchUpMs!) {
      log.debug({ catchUpMs: job.catchUpMs }, 'no occurrence inside the catch-up window');
      return;
    }
    const scheduledAt = new Date(latest).toISOString();
    const key = ledgerKeyOf(job);
    try {
      // A finished occurrence is skipped by its claim (`already-done`); only a job the ledger has
      // never seen is decided here.
      const history = await ledger.runHistory(job.name, { key, limit: 1 });
      if (history.length === 0) {
        log.info(
          { scheduledAt },
          'the run ledger has never seen this job: no catch-up (nothing is backfilled)',
        );
        return;
      }
    } catch (error) {
      log.warn({ scheduledAt, error: describeError(error) }, 'catch-up skipped: store unavailable');
      return;
    }
    if (this.#state !== 'running') return;
    log.info({ scheduledAt }, 'catching up a missed occurrence');
    if (scheduled.handledThrough < latest) scheduled.handledThrough = latest;
    this.#track(scheduled.firer, latest, { kind: 'catch-up' });
  }

  async #syncClock(when: 'start' | 'refresh'): Promise<void> {
    try {
      await this.#clock.sync();
    } catch (error) {
      const fields = { error: describeError(error) };
      if (when === 'start') {
        this.#logger.warn(
          fields,
          "could not read the store's clock: fires confirm it with the store until it answers",
        );
      } else {
        this.#logger.debug(fields, "could not refresh the store's clock offset: keeping the last one");
      }
    }
  }

  /** A few ms before an instant (the queue's `onPrepare`): `RunLedger.warmUp`, answer unread. */
  #warmUpStore(): void {
    this.#environment.ledger?.warmUp?.().catch(() => {
      // Only a head start: the fires ask the store themselves.
    });
  }

  #scheduleClockRefresh(): void {
    if (!this.#clock.hasStoreClock || this.#state !== 'running') return;
    this.#refreshTimer = this.#time.setTimeout(() => {
      this.#refreshTimer = undefined;
      void this.#syncClock('refresh').then(() => this.#scheduleClockRefresh());
    }, this.#clockRefreshMs);
  }
}

/**
 * Runs one job now through its full pipeline (lock, run ledger record, timeout, retry), as
 * `resil jobs run` does. The run's `scheduledAt` is now; it is recorded in the run ledger's history.
 * Throws `UnknownJobError` for a name the config does not define.
 *
 * @example
 * const result = await runJobNow(config, 'nightly-report', createLogger());
 * process.exitCode = result.outcome === 'success' ? 0 : result.outcome === 'failure' ? 1 : 3;
 */
export async function runJobNow(
  config: ResolvedConfig,
  jobName: string,
  logger: SchedulerLogger,
  options: TriggerOptions & {
    timeProvider?: TimeProvider;
    /** Also told every event of the run. */
    onEvent?: SchedulerListener;
  } = {},
): Promise<FireResult> {
  const { timeProvider, onEvent, ...trigger } = options;
  const runner = await syncedRunner(config, jobName, logger, timeProvider, onEvent);
  return runner.trigger(jobName, trigger);
}

/**
 * Runs the past occurrences `scheduledAts` of `jobName` (oldest first), as `resil jobs backfill`
 * does: each through `JobRunner.backfill`, one after another, so that each meets the job's overlap
 * policy as its own fire would; `onResult` hears each result as it comes. Stops at the first
 * `shutdown` (the signal aborted).
 */
export async function backfillJob(
  config: ResolvedConfig,
  jobName: string,
  scheduledAts: readonly number[],
  logger: SchedulerLogger,
  options: Omit<TriggerOptions, 'force'> & {
    timeProvider?: TimeProvider;
    onEvent?: SchedulerListener;
    onResult?: (scheduledAt: number, result: FireResult) => void;
  } = {},
): Promise<FireResult[]> {
  const { timeProvider, onEvent, onResult, ...backfill } = options;
  const runner = await syncedRunner(config, jobName, logger, timeProvider, onEvent);
  const results: FireResult[] = [];
  for (const scheduledAt of scheduledAts) {
    const result = await runner.backfill(jobName, scheduledAt, backfill);
    results.push(result);
    onResult?.(scheduledAt, result);
    if (result.outcome === 'skipped' && result.reason === 'shutdown') break;
  }
  return results;
}

async function syncedRunner(
  config: ResolvedConfig,
  jobName: string,
  logger: SchedulerLogger,
  timeProvider: TimeProvider | undefined,
  onEvent: SchedulerListener | undefined,
): Promise<JobRunner> {
  const runner = new JobRunner({ config, logger, jobs: [jobName], timeProvider });
  if (onEvent) runner.on(onEvent);
  try {
    // Only so that the ledger's start/end times are on the store's clock; a manual run does not wait.
    await runner.clock.sync();
  } catch {
    // The claim reports an unreachable store as the result.
  }
  return runner;
}

/** What `trigger()` takes: see {@link FireOptions}. */
export type TriggerOptions = Pick<FireOptions, 'signal' | 'onAttemptAborted' | 'force' | 'actor' | 'reason'>;

function environmentFor(
  config: ResolvedConfig,
  clock: StoreClock,
  time: TimeProvider,
  logger: SchedulerLogger,
  events: SchedulerEvents,
): FireEnvironment {
  return {
    store: config.store,
    ledger: hasRunLedger(config.store) ? config.store : undefined,
    clock,
    time,
    instance: config.instance,
    ledgerRetentionMs: config.ledgerRetentionMs,
    ledgerRecordLimit: config.ledgerRecordLimit,
    logger,
    emit: (event) => events.emit(event),
    isolation: { configPath: config.filepath, jobWorker: config.jobWorker },
    claims: new ClaimSlots(claimSlotsPerRunner),
  };
}

function selectJobs(config: ResolvedConfig, names: readonly string[] | undefined): ResolvedJob[] {
  if (names === undefined || names.length === 0) return config.jobs.filter((job) => job.enabled);
  const known = config.jobs.map((job) => job.name);
  return [...new Set(names)].map((name) => {
    const job = config.jobs.find((candidate) => candidate.name === name);
    if (job === undefined) throw new UnknownJobError(name, known, config.filepath);
    return job;
  });
}
