import type { OverlapPolicy } from '../../ledger/contract.ts';
import { hasInstanceRegistry, hasJobPauses, hasRunLedger } from '../../ledger/contract.ts';
import { ledgerKeyOf, type ResolvedConfig, type ResolvedJob } from '../../scheduler/job.ts';
import { JobSchedule } from '../../scheduler/occurrence.ts';
import { storeNameOf } from '../../strategies/lock/store.ts';
import { historyEntryOf, type JobHistoryEntry } from '../views/history.ts';
import { type InstanceEntry, instanceEntryOf } from '../views/instances.ts';
import { type JobListEntry, nextRuns, readJobListing } from '../views/jobs.ts';
import { type LeaseEntry, leaseEntryOf } from '../views/lease.ts';
import { inMemoryStoreNote, readStore } from '../views/store-read.ts';
import { describeSchedule } from './describe-schedule.ts';

/** One job: what `resil jobs list --json` prints, and what the dashboard adds. */
export interface DashboardJob extends Omit<JobListEntry, 'lastRun'> {
  /** The schedule in words (`At 02:00`); null for one cronstrue cannot read. */
  description: string | null;
  overlap: OverlapPolicy;
  lastRun: (NonNullable<JobListEntry['lastRun']> & { durationMs: number | null }) | null;
  /** The live lease on the job's lock key; null when free, for `lock: false`, or when the store cannot say. */
  lease: LeaseEntry | null;
}

/** What the dashboard knows of the config's store. */
export interface StoreView {
  /** The store's class name: `RedisLockStore`, `PostgresLockStore`, `MemoryLockStore`. */
  name: string;
  /** False for the in-memory store: it holds the dashboard process's own runs only. */
  shared: boolean;
  /** It keeps a run ledger (history, last runs). */
  runLedger: boolean;
  /** Its jobs can be paused fleet-wide. */
  pauses: boolean;
  /** It lists the fleet's instances. */
  instances: boolean;
  /** It reports leases (`inspect()`). */
  leases: boolean;
  /** Why the last read failed (no credentials in it); null when it answered. */
  error: string | null;
  /** What the page cannot show with this store, in a sentence each. */
  notes: string[];
}

/** `GET /api/overview`. */
export interface Overview {
  /**
   * The store's clock (this machine's when the store has none or did not answer), ISO 8601: the
   * page counts relative times from it. Next runs are computed on this machine's clock.
   */
  now: string;
  /** The config file. */
  config: string;
  /** True with `--allow-actions`. */
  actions: boolean;
  store: StoreView;
  jobs: DashboardJob[];
  /** The live instances, by name; null when the store cannot list them (see `store.notes`). */
  instances: InstanceEntry[] | null;
}

/** `GET /api/jobs/<name>`. */
export interface JobDetail {
  now: string;
  actions: boolean;
  store: StoreView;
  job: DashboardJob;
  /** The latest occurrences in the run ledger, newest first (`?limit=`, default 50). */
  history: JobHistoryEntry[];
  /** The next 10 instants, ISO 8601 UTC, as `resil jobs next --json`. */
  nextRuns: string[];
  /**
   * Those of `nextRuns` that stand for a fixed local time a spring-forward gap skipped, run at the
   * first instant after the gap (`dst: 'shift'`), as `resil jobs next` marks them.
   */
  shiftedRuns: string[];
}

/** How many occurrences `GET /api/jobs/<name>` returns without `?limit=`, and at most. */
export const historyLimits = { default: 50, max: 1_000 } as const;

/** How many next instants a job's page shows. */
const nextRunCount = 10;

/** What the store can do, before any read. */
function storeCapabilities(config: ResolvedConfig): StoreView {
  const { store } = config;
  const shared = inMemoryStoreNote(store) === undefined;
  const view: StoreView = {
    name: storeNameOf(store),
    shared,
    runLedger: hasRunLedger(store),
    pauses: shared && hasJobPauses(store),
    instances: shared && hasInstanceRegistry(store),
    leases: typeof store.inspect === 'function',
    error: null,
    notes: [],
  };
  if (!shared) {
    view.notes.push(
      "The config's store is the in-memory MemoryLockStore: it holds this dashboard's own runs only. History, pauses, leases and instances need a shared store (RedisLockStore, PostgresLockStore or MysqlLockStore) that every resil run uses.",
    );
    return view;
  }
  if (!view.runLedger) view.notes.push("The config's store keeps no run ledger: no history or last runs.");
  else if (!view.pauses) view.notes.push("The config's store keeps no pauses: jobs cannot be paused.");
  if (!view.instances) view.notes.push("The config's store keeps no instance registry: no instances.");
  if (!view.leases) view.notes.push("The config's store cannot report leases (it has no inspect()).");
  return view;
}

/** The store's clock, else this machine's. */
async function storeNow(config: ResolvedConfig, view: StoreView): Promise<number> {
  const { store } = config;
  if (typeof store.now !== 'function') return Date.now();
  const read = await readStore(store, () => store.now!());
  if (read.ok) return read.value;
  view.error ??= read.reason;
  return Date.now();
}

/** Each job's lease by name (none on the in-memory store, whose leases are this process's). */
async function readLeases(
  config: ResolvedConfig,
  jobs: readonly ResolvedJob[],
  view: StoreView,
): Promise<Map<string, LeaseEntry>> {
  const { store } = config;
  const leases = new Map<string, LeaseEntry>();
  if (!view.shared || typeof store.inspect !== 'function') return leases;
  const locked = jobs.filter((job) => job.lock !== false);
  const read = await readStore(store, () =>
    Promise.all(locked.map((job) => store.inspect!(ledgerKeyOf(job)))),
  );
  if (!read.ok) {
    view.error ??= read.reason;
    return leases;
  }
  locked.forEach((job, index) => {
    const lease = read.value[index];
    if (lease !== undefined) leases.set(job.name, leaseEntryOf(lease));
  });
  return leases;
}

async function readInstances(config: ResolvedConfig, view: StoreView): Promise<InstanceEntry[] | null> {
  const { store } = config;
  if (!view.instances || !hasInstanceRegistry(store)) return null;
  const read = await readStore(store, () => store.listInstances());
  if (read.ok) return read.value.map(instanceEntryOf);
  view.error ??= read.reason;
  return null;
}

function durationOf(startedAt: string | null, endedAt: string | null): number | null {
  return startedAt === null || endedAt === null ? null : Date.parse(endedAt) - Date.parse(startedAt);
}

/** Each schedule in words, worked out once: every open page asks every 2 s. */
const descriptions = new Map<string, string | null>();

function descriptionOf(schedule: string): string | null {
  let description = descriptions.get(schedule);
  if (description === undefined) {
    description = describeSchedule(schedule) ?? null;
    descriptions.set(schedule, description);
  }
  return description;
}

async function readJobs(
  config: ResolvedConfig,
  jobs: readonly ResolvedJob[],
  now: Date,
  view: StoreView,
): Promise<DashboardJob[]> {
  const [listing, leases] = await Promise.all([
    readJobListing({ ...config, jobs }, now),
    readLeases(config, jobs, view),
  ]);
  if (listing.ledgerError !== undefined) view.error ??= listing.ledgerError;
  return listing.entries.map((entry, index) => ({
    ...entry,
    description: descriptionOf(entry.schedule),
    overlap: jobs[index]!.overlap,
    lastRun:
      entry.lastRun === null
        ? null
        : { ...entry.lastRun, durationMs: durationOf(entry.lastRun.startedAt, entry.lastRun.endedAt) },
    lease: leases.get(entry.name) ?? null,
  }));
}

/**
 * `GET /api/overview`: every job, its last run, pause and lease, and the live instances. The store
 * is read at once, each read bounded by 5 s: a store that does not answer costs 5 s, not 5 s a read.
 */
export async function readOverview(config: ResolvedConfig, actions: boolean): Promise<Overview> {
  const store = storeCapabilities(config);
  const [now, jobs, instances] = await Promise.all([
    storeNow(config, store),
    readJobs(config, config.jobs, new Date(), store),
    readInstances(config, store),
  ]);
  return { now: new Date(now).toISOString(), config: config.filepath, actions, store, jobs, instances };
}

/** `GET /api/jobs/<name>`: the job, its latest `limit` occurrences and its next 10 instants. */
export async function readJobDetail(
  config: ResolvedConfig,
  job: ResolvedJob,
  options: { actions: boolean; limit: number },
): Promise<JobDetail> {
  const store = storeCapabilities(config);
  const ledger = config.store;
  const [now, [entry], history] = await Promise.all([
    storeNow(config, store),
    readJobs(config, [job], new Date(), store),
    hasRunLedger(ledger)
      ? readStore(ledger, () => ledger.runHistory(job.name, { key: ledgerKeyOf(job), limit: options.limit }))
      : Promise.resolve({ ok: true as const, value: [] }),
  ]);
  if (!history.ok) store.error ??= history.reason;
  const instants = nextRuns(job, now, nextRunCount);
  const schedule = new JobSchedule(job);
  return {
    now: new Date(now).toISOString(),
    actions: options.actions,
    store,
    job: entry!,
    history: history.ok ? history.value.map(historyEntryOf) : [],
    nextRuns: instants.map((instant) => new Date(instant).toISOString()),
    shiftedRuns: instants
      .filter((instant) => schedule.isShifted(instant))
      .map((instant) => new Date(instant).toISOString()),
  };
}
