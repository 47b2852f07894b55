import {
  hasInstanceRegistry,
  hasJobPauses,
  hasRunLedger,
  type JobPause,
  type PausableRunLedger,
  type RunRecord,
} from '../../ledger/contract.ts';
import { type DriftVariant, FleetDefinitions, findConfigDrift } from '../../scheduler/config-drift.ts';
import { UnknownJobError } from '../../scheduler/errors.ts';
import { ledgerKeyOf, type ResolvedConfig, type ResolvedJob } from '../../scheduler/job.ts';
import { JobSchedule, JobSchedules } from '../../scheduler/occurrence.ts';
import { formatRelative, formatTimeIn, localTimezone } from '../time-format.ts';
import { isoOrNull } from './history.ts';
import { inMemoryStoreNote, readStore } from './store-read.ts';

/** The job called `name`; throws `UnknownJobError` (exit code 2) naming the jobs the config does define. */
export function jobNamed(config: ResolvedConfig, name: string): ResolvedJob {
  const job = config.jobs.find((each) => each.name === name);
  if (job === undefined) {
    throw new UnknownJobError(
      name,
      config.jobs.map((each) => each.name),
      config.filepath,
    );
  }
  return job;
}

/**
 * The first `count` instants of the job's schedule strictly after `after`, oldest first (fewer when
 * the schedule has no more), computed as `resil run` fires them: in the job's timezone, a fixed
 * local time in a DST gap as the job's `dst` policy says.
 */
export function nextRuns(
  job: Pick<ResolvedJob, 'schedule' | 'timezone' | 'dst'>,
  after: number,
  count: number,
): number[] {
  return new JobSchedule(job).between(after, Number.POSITIVE_INFINITY, count).instants;
}

/** A pause as `jobs list --json` and the dashboard show it. */
export interface PauseEntry {
  by: string;
  /** ISO 8601, store clock. */
  pausedAt: string;
  reason: string | null;
}

export function pauseEntryOf(pause: JobPause): PauseEntry {
  return { by: pause.by, pausedAt: new Date(pause.pausedAt).toISOString(), reason: pause.reason ?? null };
}

/** `by ops-1 at 2026-12-01 02:00:00 UTC (5m ago), reason: migration` */
export function describePause(pause: JobPause, timezone: string, now = Date.now()): string {
  const at = new Date(pause.pausedAt);
  const reason = pause.reason === undefined ? '' : `, reason: ${pause.reason}`;
  return `by ${pause.by} at ${formatTimeIn(at, timezone)} (${formatRelative(at, now)})${reason}`;
}

/**
 * The config's store when its pauses are the fleet's, else why not. The in-memory store can pause,
 * but only in its own process: no `resil run` would ever see it.
 */
export function sharedPausesOf(store: object): { ledger: PausableRunLedger } | { why: string } {
  if (inMemoryStoreNote(store) !== undefined) {
    return {
      why: "the config's store is the in-memory MemoryLockStore, which holds this process's runs only",
    };
  }
  if (!hasJobPauses(store)) {
    return { why: "the config's store keeps no run ledger with pauses (pauseJob, resumeJob, pauseOf)" };
  }
  return { ledger: store };
}

/** Pauses `job` fleet-wide `by` whom (within 5 s), and reads the pause back for its store-clock time. */
export function pauseJobIn(
  ledger: PausableRunLedger,
  job: ResolvedJob,
  by: string,
  reason: string | undefined,
) {
  const key = ledgerKeyOf(job);
  return readStore(ledger, async () => {
    await ledger.pauseJob(job.name, { key, by, ...(reason === undefined ? {} : { reason }) });
    return ledger.pauseOf(job.name, { key });
  });
}

/** Lifts `job`'s pause (within 5 s): the pause it lifted, or undefined when it was not paused. */
export function resumeJobIn(ledger: PausableRunLedger, job: ResolvedJob) {
  const key = ledgerKeyOf(job);
  return readStore(ledger, async () => {
    const pause = await ledger.pauseOf(job.name, { key });
    await ledger.resumeJob(job.name, { key });
    return pause;
  });
}

/** One job as `resil jobs list --json` prints it. */
export interface JobListEntry {
  name: string;
  schedule: string;
  /** The job's timezone, else the config's, else this machine's. */
  timezone: string;
  enabled: boolean;
  /** ISO 8601 in UTC (`2026-12-01T02:00:00.000Z`); null for a disabled job or a schedule with no future occurrence. */
  nextRun: string | null;
  /** null for `lock: false`. */
  lockKey: string | null;
  /** How many occurrences may run at once (the job's `concurrency`): present when above 1. */
  concurrency?: number;
  /**
   * The latest occurrence that ran to an end (success or failure) among the job's last few in the
   * store's run ledger; null when none or the store keeps no ledger.
   */
  lastRun: {
    scheduledAt: string;
    outcome: RunRecord['outcome'];
    startedAt: string | null;
    endedAt: string | null;
    instance: string | null;
    token: number | null;
    error?: string;
  } | null;
  /** Paused fleet-wide (`resil jobs pause`); false when the store keeps no pauses or cannot be read. */
  paused: boolean;
  /** Who paused it, when (ISO 8601, store clock) and why; null unless paused. */
  pause: PauseEntry | null;
  /**
   * Config drift: null while every live instance that runs the job has the same definition of it
   * (or the store keeps no instance registry); else one entry per definition, with its instances
   * and the fields that differ, with its values.
   */
  drift: DriftVariant[] | null;
}

/** What the store says of one job: its last run and its pause. */
interface LedgerView {
  lastRun: RunRecord | undefined;
  pause: JobPause | undefined;
}

/** How many of a job's latest records `jobs list` looks through for its last run. */
const lastRunSearch = 10;

function nextRunOf(job: ResolvedJob, now: Date, schedules: JobSchedules): Date | null {
  if (!job.enabled) return null;
  const next = schedules.of(job).nextAfter(now.getTime());
  return next === undefined ? null : new Date(next);
}

/**
 * Each job's latest run and pause; `undefined` when the store keeps no ledger, or with the reason
 * it could not be read within 5 s.
 */
async function ledgerViews(
  config: ResolvedConfig,
): Promise<{ views: Map<string, LedgerView> | undefined; error?: string }> {
  const store = config.store;
  if (!hasRunLedger(store)) return { views: undefined };
  const pauses = hasJobPauses(store) ? store : undefined;
  const read = await readStore(store, () =>
    Promise.all(
      config.jobs.map(async (job): Promise<readonly [string, LedgerView]> => {
        const key = ledgerKeyOf(job);
        const [history, pause] = await Promise.all([
          store.runHistory(job.name, { key, limit: lastRunSearch }),
          pauses?.pauseOf(job.name, { key }),
        ]);
        const lastRun = history.find(
          (record) => record.outcome === 'success' || record.outcome === 'failure',
        );
        return [job.name, { lastRun, pause }];
      }),
    ),
  );
  return read.ok ? { views: new Map(read.value) } : { views: undefined, error: read.reason };
}

/** The config's own definitions, fingerprinted once per jobs array (the dashboard reads every 2 s). */
const ownDefinitions = new WeakMap<readonly ResolvedJob[], FleetDefinitions>();

/**
 * The jobs that live instances run with different definitions; empty when the store keeps no
 * shared instance registry, or with the reason it could not be read within 5 s.
 */
async function readConfigDrift(
  config: ResolvedConfig,
): Promise<{ drift: ReadonlyMap<string, DriftVariant[]>; error?: string }> {
  const store = config.store;
  if (!hasInstanceRegistry(store) || inMemoryStoreNote(store) !== undefined) return { drift: new Map() };
  const read = await readStore(store, () => store.listInstances());
  if (!read.ok) return { drift: new Map(), error: read.reason };
  let own = ownDefinitions.get(config.jobs);
  if (own === undefined) {
    own = new FleetDefinitions(config.jobs);
    ownDefinitions.set(config.jobs, own);
  }
  return { drift: findConfigDrift(read.value, own) };
}

/** What `jobs list --json` prints, and whether (and why not) the store's run ledger was read. */
export interface JobListing {
  entries: JobListEntry[];
  /** True when the store keeps a run ledger and it answered: `lastRun`, `paused` are the store's. */
  withLedger: boolean;
  /** Why the ledger could not be read (no credentials in it); the entries then have no last run or pause. */
  ledgerError?: string;
  /** Why the instance registry could not be read; the entries then show no drift. */
  driftError?: string;
}

/**
 * Each job of the config as `resil jobs list --json` shows it (next run after `now`, last run and
 * pause from the store's run ledger). Never throws for an unreachable store: see `ledgerError`.
 */
export async function readJobListing(config: ResolvedConfig, now = new Date()): Promise<JobListing> {
  const [{ views, error }, drift] = await Promise.all([ledgerViews(config), readConfigDrift(config)]);
  const schedules = new JobSchedules();
  const entries = config.jobs.map((job) => ({
    ...toEntry(job, now, views?.get(job.name), schedules),
    drift: drift.drift.get(job.name) ?? null,
  }));
  return {
    entries,
    withLedger: views !== undefined,
    ...(error === undefined ? {} : { ledgerError: error }),
    ...(drift.error === undefined ? {} : { driftError: drift.error }),
  };
}

function toEntry(
  job: ResolvedJob,
  now: Date,
  view: LedgerView | undefined,
  schedules: JobSchedules,
): Omit<JobListEntry, 'drift'> {
  const nextRun = nextRunOf(job, now, schedules);
  const { lastRun, pause } = view ?? { lastRun: undefined, pause: undefined };
  return {
    name: job.name,
    schedule: job.schedule,
    timezone: job.timezone ?? localTimezone(),
    enabled: job.enabled,
    nextRun: nextRun === null ? null : nextRun.toISOString(),
    lockKey: job.lock === false ? null : job.lock.key,
    ...((job.concurrency ?? 1) > 1 ? { concurrency: job.concurrency! } : {}),
    lastRun:
      lastRun === undefined
        ? null
        : {
            scheduledAt: new Date(lastRun.scheduledAt).toISOString(),
            outcome: lastRun.outcome,
            startedAt: isoOrNull(lastRun.startedAt),
            endedAt: isoOrNull(lastRun.endedAt),
            instance: lastRun.instance ?? null,
            token: lastRun.token ?? null,
            ...(lastRun.error === undefined ? {} : { error: lastRun.error }),
          },
    paused: pause !== undefined,
    pause: pause === undefined ? null : pauseEntryOf(pause),
  };
}
