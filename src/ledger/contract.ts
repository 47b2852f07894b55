import { InvalidOptionError } from '../pipeline/errors.ts';

/**
 * Temporal's overlap policies: what a fire does while an earlier occurrence of the job runs.
 *
 * - `skip`: the fire is recorded as skipped (`overlap`), fleet-wide.
 * - `buffer-one`: it waits for the running one, at most one waiting; a further fire is skipped.
 * - `buffer-all`: every fire waits, and they run one after another, oldest first.
 * - `cancel-other`: the running occurrence is cancelled (its holder learns it at its next renewal
 *   and its signal aborts), then the new one runs.
 * - `allow-all`: occurrences run concurrently, each under its own lease and token.
 */
export type OverlapPolicy = 'skip' | 'buffer-one' | 'buffer-all' | 'cancel-other' | 'allow-all';

export const overlapPolicies: readonly OverlapPolicy[] = [
  'skip',
  'buffer-one',
  'buffer-all',
  'cancel-other',
  'allow-all',
];

/**
 * Where an occurrence stands in the run ledger: `queued` (buffered behind another occurrence),
 * `running` (claimed under a lease), then one of the final states `success`, `failure`, `skipped`.
 */
export type OccurrenceState = 'queued' | 'running' | 'success' | 'failure' | 'skipped';

/** How a run ended, as a holder reports it. */
export type RunOutcome = 'success' | 'failure';

/**
 * Why the ledger skipped an occurrence: `overlap` (an earlier one was running and the overlap
 * policy said skip), `missed` (it could not start before its starting deadline), `paused` (the job
 * was paused fleet-wide with `pauseJob`).
 */
export type LedgerSkipReason = 'overlap' | 'missed' | 'paused';

/**
 * How a run started: `schedule` (a fire of its schedule), `catch-up` (an occurrence found missing
 * when an instance started), `manual` (`resil jobs run`, the dashboard's Trigger, `trigger()`),
 * `backfill` (`resil jobs backfill`).
 */
export type RunTrigger = 'schedule' | 'catch-up' | 'manual' | 'backfill';

/** One occurrence of a job as the run ledger keeps it: its latest state. */
export interface RunRecord {
  /** The job's name. */
  readonly job: string;
  /** The occurrence: the instant the schedule named, epoch ms (identical on every instance). */
  readonly scheduledAt: number;
  readonly outcome: OccurrenceState;
  /** For `skipped`: why. */
  readonly reason?: LedgerSkipReason;
  /** The fencing token of the latest claim (absent for an occurrence that never ran). */
  readonly token?: number;
  /** The instance of the latest claim, or the one whose fire was skipped or queued. */
  readonly instance?: string;
  /** When the latest claim was granted, store clock, epoch ms (whole: a finer clock is truncated). */
  readonly startedAt?: number;
  /** When it reached its final state, store clock, epoch ms (whole: a finer clock is truncated). */
  readonly endedAt?: number;
  /** A short error message for a failure. Never contains secrets. */
  readonly error?: string;
  /** How many times another instance took the occurrence over after its holder stopped renewing. */
  readonly takeovers?: number;
  /** How it started; absent in a record written before runs recorded it, read as `schedule`. */
  readonly trigger?: RunTrigger;
  /** Who started a manual or backfill run (`user@host`, or the dashboard's actor). */
  readonly actor?: string;
  /** Why, as its starter said (`--reason`). */
  readonly triggerReason?: string;
}

/** A record's fields as a store keeps them: numbers maybe as strings, absent ones maybe `null`. */
export interface StoredRunRecord {
  readonly job: string;
  readonly scheduledAt: number | string;
  readonly outcome: OccurrenceState;
  readonly reason?: LedgerSkipReason | null;
  readonly token?: number | string | null;
  readonly instance?: string | null;
  readonly startedAt?: number | string | null;
  readonly endedAt?: number | string | null;
  readonly error?: string | null;
  readonly takeovers?: number | string | null;
  readonly trigger?: RunTrigger | null;
  readonly actor?: string | null;
  readonly triggerReason?: string | null;
}

/** The public {@link RunRecord} of a stored one: only its fields, numbers as numbers, none empty. */
export function runRecordOf(stored: StoredRunRecord): RunRecord {
  const record: { -readonly [K in keyof RunRecord]: RunRecord[K] } = {
    job: stored.job,
    scheduledAt: Number(stored.scheduledAt),
    outcome: stored.outcome,
  };
  if (stored.reason != null) record.reason = stored.reason;
  if (stored.token != null) record.token = Number(stored.token);
  if (stored.instance != null) record.instance = stored.instance;
  if (stored.startedAt != null) record.startedAt = Number(stored.startedAt);
  if (stored.endedAt != null) record.endedAt = Number(stored.endedAt);
  if (stored.error != null) record.error = stored.error;
  if (stored.takeovers != null && Number(stored.takeovers) > 0) record.takeovers = Number(stored.takeovers);
  if (stored.trigger != null) record.trigger = stored.trigger;
  if (stored.actor != null) record.actor = stored.actor;
  if (stored.triggerReason != null) record.triggerReason = stored.triggerReason;
  return record;
}

/** One fire asking the ledger what to do with its occurrence. */
export interface ClaimRequest {
  readonly job: string;
  /** The lease key (the job's lock key). Jobs that share it exclude each other. */
  readonly key: string;
  /** The occurrence; for a manual run, the store's `now()` as the caller knows it. */
  readonly scheduledAt: number;
  /** A unique owner id for this fire's lease. */
  readonly owner: string;
  /** This instance's name, kept in the record. */
  readonly instance: string;
  readonly ttlMs: number;
  readonly overlap: OverlapPolicy;
  /**
   * At most this many occurrences of the job run at once, fleet-wide: a whole number >= 1. Defaults
   * to 1. Above 1, each runs under a lease of its own, as with `allow-all` (the key's lease is not
   * taken: the job does not exclude other jobs or plain locks on its key), and `overlap` decides
   * what a fire does while that many run (`cancel-other` cancels the oldest). Not for `allow-all`.
   */
  readonly concurrency?: number;
  /**
   * The occurrence may start until `scheduledAt + startingDeadlineMs`, by the store's clock, and an
   * abandoned one (its lease expired while it was `running`) may be taken over until its lease has
   * been expired for this long. Later, it is skipped as `missed` (or, abandoned, failed).
   */
  readonly startingDeadlineMs: number;
  /**
   * A manual run (`resil jobs run`): never early, and granted whatever the pause (the caller
   * decides that); otherwise its overlap policy applies as to a fire: skipped (not recorded) under
   * `skip` while another occurrence holds the lease, queued under `buffer-one`/`buffer-all`, the
   * holder cancelled under `cancel-other`.
   */
  readonly manual?: boolean;
  /**
   * With `manual`: granted at once, whatever holds the key's lease, under a lease of its own (as
   * `allow-all` occurrences are) and a new fencing token (`resil jobs run --force`).
   */
  readonly force?: boolean;
  /** How the run started, recorded with its occurrence. Defaults to `schedule`. */
  readonly trigger?: RunTrigger;
  /** Who started a manual or backfill run, recorded with its occurrence. */
  readonly actor?: string;
  /** Why, as its starter said, recorded with its occurrence. */
  readonly triggerReason?: string;
  /** Records older than this (by `scheduledAt`, store clock) are dropped. Defaults to 7 days. */
  readonly retentionMs?: number;
  /** How many of its latest records the job keeps (more while they are within `keepWithinMs`; see {@link LedgerTrim}). */
  readonly recordLimit?: number;
  /** Records of occurrences younger than this are kept whatever `recordLimit` says (see {@link LedgerTrim}). */
  readonly keepWithinMs?: number;
}

/**
 * What a finish (and a claim that records a skip) drops of the job's records: those older than
 * `retentionMs` (by `scheduledAt`, store clock; never a `running` one), then the oldest past
 * `recordLimit`, but never one younger than `keepWithinMs` nor a `running` one: a fire may still
 * claim such an occurrence, and only its record keeps it from running twice. The runner passes the
 * job's longest window (its starting deadline or catch-up window) as `keepWithinMs`.
 */
export interface LedgerTrim {
  /** Defaults to 7 days. */
  readonly retentionMs?: number;
  /** Defaults to {@link ledgerRecordLimit} (100). */
  readonly recordLimit?: number;
  /** Defaults to {@link ledgerDefaultKeepWithinMs} (1 min, the default starting deadline). */
  readonly keepWithinMs?: number;
}

/**
 * The ledger's answer to a claim:
 * - `granted`: run occurrence `scheduledAt` now under `lease`. It is the requested occurrence, or
 *   an older one that must run first (an abandoned or queued one): run it, then claim again.
 * - `wait`: ask again at `retryAt` (store clock) at the latest: the occurrence is not due yet, runs
 *   elsewhere (`runningElsewhere`, watch it for a takeover), or is queued behind another one.
 * - `skipped`: recorded as skipped with `reason` (`overlap`, `missed`, `paused`), or
 *   `already-done` (it reached a final state before; nothing is written).
 */
export type ClaimResult =
  | { readonly status: 'granted'; readonly lease: OccurrenceLease; readonly takeover: boolean }
  | { readonly status: 'wait'; readonly retryAt: number; readonly runningElsewhere: boolean }
  | { readonly status: 'skipped'; readonly reason: LedgerSkipReason | 'already-done' };

/** A job paused fleet-wide (`pauseJob`): who paused it, when and why. */
export interface JobPause {
  /** When it was paused, store clock, epoch ms. */
  readonly pausedAt: number;
  /** Who paused it (`resil jobs pause` puts the config's instance name, or `host:pid`). */
  readonly by: string;
  readonly reason?: string;
}

/** A granted claim: what renewing and finishing it need. */
export interface OccurrenceLease {
  readonly job: string;
  readonly key: string;
  readonly scheduledAt: number;
  readonly owner: string;
  readonly token: number;
  /** For `allow-all`, the lease is the occurrence's own, not the key's. */
  readonly overlap: OverlapPolicy;
  /** The claim's `concurrency`, when above 1: the lease is then the occurrence's own, not the key's. */
  readonly concurrency?: number;
  /** True when the lease is the occurrence's own, not the key's, whatever `overlap` says (a forced manual run). */
  readonly ownLease?: boolean;
}

/** What a holder reports when its run ends. */
export interface RunResult {
  readonly outcome: RunOutcome;
  /** A short, redacted error message for a failure. */
  readonly error?: string;
}

/**
 * The run ledger: each occurrence `(job, scheduledAt)` of a job, claimed, queued, then finished, in
 * the store, so a fleet runs each one once and takes over one whose holder died. The store decides
 * atomically, on its own clock, which occurrence a key's lease goes to next: the oldest one waiting
 * (abandoned or queued) within its deadline. Stores that ship (memory, Redis, PostgreSQL) implement
 * it, and `describeRunLedgerConformance` in `resil/testing` checks a custom one.
 *
 * Writes are fenced: finishing with a token lower than the occurrence's latest claim is refused
 * with `StaleTokenError`, so a paused ex-holder cannot overwrite what its successor recorded.
 */
export interface RunLedger {
  /** Decides what a fire of `request.scheduledAt` does now (see {@link ClaimResult}). */
  claimOccurrence(request: ClaimRequest): Promise<ClaimResult>;
  /**
   * Pushes the lease's expiry to now + `ttlMs` while it is the holder's. False when it is not
   * (expired and taken, or the occurrence was cancelled by `cancel-other`: the lease is then freed).
   */
  renewOccurrence(lease: OccurrenceLease, ttlMs: number): Promise<boolean>;
  /**
   * Records the run's end and releases the lease. Throws `StaleTokenError` (writing nothing but the
   * release) when a later claim of the occurrence holds a higher token.
   */
  finishOccurrence(lease: OccurrenceLease, result: RunResult, options?: LedgerTrim): Promise<void>;
  /** The job's occurrences, newest `scheduledAt` first (at most `limit`, default 20). */
  runHistory(job: string, options?: { key?: string; limit?: number }): Promise<RunRecord[]>;
  /** The latest occurrence that succeeded, within retention, or `undefined`. */
  lastCompleted(job: string, options?: { key?: string }): Promise<number | undefined>;
  /**
   * Pauses the job fleet-wide until {@link resumeJob}: every claim of one of its occurrences (but a
   * manual one) is then skipped and recorded as `paused`, in the same atomic step as the rest of the
   * claim. A running occurrence runs on. Pausing a paused job replaces who, when and why.
   *
   * The three pause methods are optional so that a ledger written before them still is one (its
   * jobs then cannot be paused); the stores that ship implement them, and
   * `describeRunLedgerConformance` checks them. See {@link hasJobPauses}.
   *
   * @example
   * await store.pauseJob('nightly-report', { key: 'nightly-report', by: 'ops@host-1', reason: 'migration' });
   */
  pauseJob?(job: string, options: { key: string; by: string; reason?: string }): Promise<void>;
  /** Lifts the job's pause; a job that is not paused stays as it is. */
  resumeJob?(job: string, options: { key: string }): Promise<void>;
  /** The job's pause (store clock), or `undefined` when it is not paused. */
  pauseOf?(job: string, options: { key: string }): Promise<JobPause | undefined>;
  /**
   * Called by the scheduler a few ms before an instant its jobs claim at (its answer unread): a
   * store whose claims all go through one connection sends it a request, so that the connection,
   * the server and the process are awake when the claims go out. Optional: a store of pooled
   * connections, whose claims may take another connection, leaves it out.
   */
  warmUp?(): Promise<unknown>;
}

/** A {@link RunLedger} whose jobs can be paused: one with all three pause methods. */
export type PausableRunLedger = RunLedger & Required<Pick<RunLedger, 'pauseJob' | 'resumeJob' | 'pauseOf'>>;

/** True when `store` implements {@link RunLedger}. */
export function hasRunLedger<S extends object>(store: S): store is S & RunLedger {
  const candidate = store as Partial<RunLedger>;
  return (
    typeof candidate.claimOccurrence === 'function' &&
    typeof candidate.renewOccurrence === 'function' &&
    typeof candidate.finishOccurrence === 'function' &&
    typeof candidate.runHistory === 'function' &&
    typeof candidate.lastCompleted === 'function'
  );
}

/** True when `store` implements {@link RunLedger} with its pause methods. */
export function hasJobPauses<S extends object>(store: S): store is S & PausableRunLedger {
  const candidate = store as Partial<RunLedger>;
  return (
    hasRunLedger(store) &&
    typeof candidate.pauseJob === 'function' &&
    typeof candidate.resumeJob === 'function' &&
    typeof candidate.pauseOf === 'function'
  );
}

/** What a running instance (`resil run`) says about itself in {@link InstanceRegistry.registerInstance}. */
export interface InstanceInfo {
  /** Its name in the ledger and logs (the config's `instance`, `hostname:pid` by default). */
  readonly instance: string;
  readonly host: string;
  readonly pid: number;
  /** The resil version it runs. */
  readonly version: string;
  /** When it started, epoch ms, on the store's clock as the instance estimates it (its clock + `clockOffsetMs`). */
  readonly startedAt: number;
  /** How many jobs it schedules. */
  readonly jobs: number;
  /**
   * The store's clock minus this instance's clock, in ms, as it learnt it: positive when its clock
   * is behind the store's (an instance 2 s ahead reports about -2000). 0 when not known yet.
   */
  readonly clockOffsetMs: number;
  /**
   * What the instance says of its jobs' definitions, for spotting config drift across the fleet
   * (`resil jobs list --json` `drift`): an opaque string the scheduler writes and reads; a store
   * keeps it as it is. Absent when the instance publishes none.
   */
  readonly definitions?: string | undefined;
}

/** A live instance as the store lists it: what it registered, and its last heartbeat. */
export interface RegisteredInstance extends InstanceInfo {
  /** Its last registration (heartbeat), store clock, epoch ms. */
  readonly lastSeenAt: number;
}

/**
 * The fleet's instances, kept in the store: each `resil run` registers as soon as it has started,
 * registers again as a heartbeat, and is listed until `ttlMs` (store clock) after its last
 * heartbeat, or until it removes itself. `resil instances` lists them.
 *
 * Optional, like the pause methods: a store without them still is one (`resil instances` then says
 * it cannot list the fleet). The stores that ship implement them, and
 * `describeInstanceRegistryConformance` in `resil/testing` checks them. See {@link hasInstanceRegistry}.
 *
 * @example
 * await store.registerInstance({ instance: 'worker-1', host: 'host-1', pid: 4242, version: '1.0.0',
 *   startedAt: Date.now(), jobs: 3, clockOffsetMs: 0 }, { ttlMs: 15_000 });
 * const live = await store.listInstances();
 */
export interface InstanceRegistry {
  /** Registers `info` (replacing what the instance registered before), seen now by the store's clock. */
  registerInstance(info: InstanceInfo, options: { ttlMs: number }): Promise<void>;
  /** Removes the instance; one that is not registered stays as it is. */
  removeInstance(instance: string): Promise<void>;
  /** The live instances (heartbeat within their ttl, by the store's clock), by instance name. */
  listInstances(): Promise<RegisteredInstance[]>;
}

/** True when `store` implements {@link InstanceRegistry}. */
export function hasInstanceRegistry<S extends object>(store: S): store is S & InstanceRegistry {
  const candidate = store as Partial<InstanceRegistry>;
  return (
    typeof candidate.registerInstance === 'function' &&
    typeof candidate.removeInstance === 'function' &&
    typeof candidate.listInstances === 'function'
  );
}

/**
 * Throws `InvalidOptionError` unless `info` is a complete {@link InstanceInfo} and `ttlMs` a
 * positive number of ms; returns the info's fields alone (what a store keeps).
 */
export function checkInstanceInfo(info: InstanceInfo, ttlMs: number): InstanceInfo {
  if (info === null || typeof info !== 'object')
    throw new InvalidOptionError('info', info, 'an InstanceInfo');
  const { instance, host, pid, version, startedAt, jobs, clockOffsetMs, definitions } = info;
  if (definitions !== undefined && typeof definitions !== 'string')
    throw new InvalidOptionError('info.definitions', definitions, 'a string, or undefined');
  for (const [name, value] of [
    ['info.instance', instance],
    ['info.host', host],
    ['info.version', version],
  ] as const) {
    if (typeof value !== 'string' || (name === 'info.instance' && value.length === 0)) {
      throw new InvalidOptionError(name, value, name === 'info.instance' ? 'a non-empty string' : 'a string');
    }
  }
  for (const [name, value] of [
    ['info.pid', pid],
    ['info.jobs', jobs],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new InvalidOptionError(name, value, 'an integer >= 0');
  }
  for (const [name, value] of [
    ['info.startedAt', startedAt],
    ['info.clockOffsetMs', clockOffsetMs],
  ] as const) {
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw new InvalidOptionError(name, value, 'a number');
  }
  if (!(ttlMs > 0) || !Number.isFinite(ttlMs))
    throw new InvalidOptionError('ttlMs', ttlMs, 'a number of ms > 0');
  return {
    instance,
    host,
    pid,
    version,
    startedAt,
    jobs,
    clockOffsetMs,
    ...(definitions === undefined ? {} : { definitions }),
  };
}
