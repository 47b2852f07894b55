import { StaleTokenError } from '../strategies/lock/errors.ts';
import { MemoryLeaseStore, type MemoryLeaseStoreOptions } from '../strategies/lock/memory-lease-store.ts';
import {
  type ClaimRequest,
  type ClaimResult,
  checkInstanceInfo,
  type InstanceInfo,
  type InstanceRegistry,
  type JobPause,
  type LedgerSkipReason,
  type LedgerTrim,
  type OccurrenceLease,
  type RegisteredInstance,
  type RunLedger,
  type RunRecord,
  type RunResult,
} from './contract.ts';
import { ledgerDefaultRetentionMs, ledgerTrimOf } from './defaults.ts';

export type MemoryLockStoreOptions = MemoryLeaseStoreOptions;

/** An occurrence's record, with what the ledger needs beyond the public view. */
interface LedgerEntry {
  record: RunRecord;
  /** The lease of a `running` occurrence: its owner and expiry (store clock). */
  owner?: string;
  expiresAt?: number;
  /** Set by a `cancel-other` fire: the next renewal is refused. */
  cancelled?: boolean;
}

/** One job's occurrences on one lease key. */
interface JobLedger {
  readonly entries: Map<number, LedgerEntry>;
  /** Queued occurrences (buffered fires), oldest first. */
  readonly queue: number[];
  /** Deadline of each queued occurrence (store clock). */
  readonly queuedUntil: Map<number, number>;
}

const abandonedMessage =
  'abandoned: its holder stopped renewing the lease and no instance took it over before the deadline';
const cancelledMessage = 'cancelled: a newer occurrence replaced it (overlap: cancel-other)';

function isFinal(state: RunRecord['outcome']): boolean {
  return state === 'success' || state === 'failure' || state === 'skipped';
}

function ledgerId(key: string, job: string): string {
  return `${key}\u0000${job}`;
}

/**
 * A {@link LockStore} (and {@link RunLedger}) in this process's memory: excludes executions inside
 * one process only. Each operation runs synchronously, so it is atomic per key. It keeps one token
 * counter per key ever locked, so tokens stay monotonic across release and expiry; that is fine
 * unless your keys are unbounded. No timers: expiry is judged lazily by `timeProvider.now()`.
 *
 * The lock strategy's default store is its lease half, `MemoryLeaseStore`, one per time provider.
 *
 * @example
 * const store = new MemoryLockStore();
 * const pipeline = new ResiliencePipelineBuilder().addLock({ key: () => 'rebuild-cache', store }).build();
 */
export class MemoryLockStore extends MemoryLeaseStore implements RunLedger, InstanceRegistry {
  readonly #jobs = new Map<string, JobLedger>();
  readonly #pauses = new Map<string, JobPause>();
  /** Registered instances and when each expires (store clock). */
  readonly #instances = new Map<string, { info: RegisteredInstance; expiresAt: number }>();

  async claimOccurrence(request: ClaimRequest): Promise<ClaimResult> {
    const now = this.time.now();
    const { job, key, scheduledAt, overlap } = request;
    const ledger = this.#ledger(key, job);
    const entry = ledger.entries.get(scheduledAt);
    const perOccurrence = overlap === 'allow-all';
    const keyLease = this.live(key, now);
    if (request.manual) {
      if (!perOccurrence && keyLease !== undefined) return { status: 'skipped', reason: 'overlap' };
      return this.#grant(request, ledger, scheduledAt, now, false);
    }
    if (now < scheduledAt) return { status: 'wait', retryAt: scheduledAt, runningElsewhere: false };
    if (entry !== undefined && isFinal(entry.record.outcome))
      return { status: 'skipped', reason: 'already-done' };
    // A paused job's running occurrence runs on; any other is skipped.
    if (entry?.record.outcome !== 'running' && this.#pauses.has(ledgerId(key, job))) {
      return this.#skip(ledger, request, 'paused', now);
    }
    // A running occurrence is judged by its own lease: still renewed, to be taken over, or given up.
    if (entry?.record.outcome === 'running' && entry.expiresAt! > now) {
      return { status: 'wait', retryAt: entry.expiresAt!, runningElsewhere: true };
    }
    const window = request.startingDeadlineMs;
    if (entry?.record.outcome === 'running' && (entry.cancelled || now > entry.expiresAt! + window)) {
      this.#giveUp(ledger, scheduledAt, entry, now);
      return { status: 'skipped', reason: 'already-done' };
    }
    const deadline = scheduledAt + window;

    // Another occurrence (or a plain lock) holds the lease this one needs.
    if (!perOccurrence && keyLease !== undefined) {
      // Abandoned, but the key is taken: it waits for the key (a takeover still needs the lease).
      if (entry?.record.outcome === 'running') {
        return { status: 'wait', retryAt: keyLease.expiresAt, runningElsewhere: true };
      }
      if (now > deadline) return this.#skip(ledger, request, 'missed', now);
      if (entry?.record.outcome !== 'queued' && !this.#enqueue(ledger, request, deadline, now)) {
        return this.#skip(ledger, request, 'overlap', now);
      }
      const current = keyLease.current;
      const holder = current?.job === job ? ledger.entries.get(current.scheduledAt) : undefined;
      if (overlap === 'cancel-other' && holder?.record.outcome === 'running') holder.cancelled = true;
      return { status: 'wait', retryAt: keyLease.expiresAt, runningElsewhere: false };
    }
    if ((entry === undefined || entry.record.outcome === 'queued') && now > deadline) {
      return this.#skip(ledger, request, 'missed', now);
    }

    // The lease is free: it goes to the oldest occurrence still allowed to start.
    const candidates = [{ at: scheduledAt, takeover: entry?.record.outcome === 'running' }];
    if (!perOccurrence) {
      const current = this.keys.get(key)?.current;
      if (current !== undefined && current.job === job && current.scheduledAt !== scheduledAt) {
        const abandoned = ledger.entries.get(current.scheduledAt);
        if (abandoned?.record.outcome === 'running') {
          if (!abandoned.cancelled && now <= abandoned.expiresAt! + window) {
            candidates.push({ at: current.scheduledAt, takeover: true });
          } else {
            this.#giveUp(ledger, current.scheduledAt, abandoned, now);
          }
        }
      }
      while (ledger.queue.length > 0) {
        const oldest = ledger.queue[0]!;
        const queued = ledger.entries.get(oldest);
        if (queued?.record.outcome === 'queued' && now <= ledger.queuedUntil.get(oldest)!) break;
        this.#dequeue(ledger, oldest);
        if (queued?.record.outcome === 'queued') this.#setSkipped(queued, 'missed', now);
      }
      if (ledger.queue.length > 0 && ledger.queue[0] !== scheduledAt) {
        candidates.push({ at: ledger.queue[0]!, takeover: false });
      }
    }
    candidates.sort((a, b) => a.at - b.at);
    const pick = candidates[0]!;
    const granted = this.#grant(request, ledger, pick.at, now, pick.takeover);
    if (pick.at !== scheduledAt && entry === undefined) {
      // Its own occurrence meets the one it was handed as it would meet any running occurrence.
      if (!this.#enqueue(ledger, request, deadline, now)) this.#skip(ledger, request, 'overlap', now);
    }
    return granted;
  }

  async renewOccurrence(lease: OccurrenceLease, ttlMs: number): Promise<boolean> {
    const now = this.time.now();
    const entry = this.#ledger(lease.key, lease.job).entries.get(lease.scheduledAt);
    if (entry?.record.outcome !== 'running' || entry.owner !== lease.owner || !(entry.expiresAt! > now)) {
      return false;
    }
    if (entry.cancelled) {
      this.#releaseOccurrence(lease, entry);
      return false;
    }
    if (lease.overlap !== 'allow-all') {
      const state = this.live(lease.key, now);
      if (state?.owner !== lease.owner) return false;
      state.expiresAt = now + ttlMs;
    }
    entry.expiresAt = now + ttlMs;
    return true;
  }

  async finishOccurrence(lease: OccurrenceLease, result: RunResult, options: LedgerTrim = {}): Promise<void> {
    const trim = ledgerTrimOf(options);
    const now = this.time.now();
    const ledger = this.#ledger(lease.key, lease.job);
    const entry = ledger.entries.get(lease.scheduledAt);
    if (entry !== undefined) this.#releaseOccurrence(lease, entry);
    const latest = entry?.record.token;
    if (latest !== undefined && latest > lease.token) {
      throw new StaleTokenError(lease.job, lease.token, latest);
    }
    const cancelled = entry?.cancelled === true && result.outcome === 'failure';
    this.#end(
      ledger,
      lease.job,
      lease.scheduledAt,
      now,
      cancelled ? { outcome: 'failure', error: cancelledMessage } : result,
    );
    this.#trim(ledger, now, { ...trim, retentionMs: options.retentionMs ?? ledgerDefaultRetentionMs });
  }

  async runHistory(job: string, options: { key?: string; limit?: number } = {}): Promise<RunRecord[]> {
    const entries = this.#jobs.get(ledgerId(options.key ?? job, job))?.entries;
    if (entries === undefined) return [];
    return [...entries.values()]
      .map((entry) => ({ ...entry.record }))
      .sort((a, b) => b.scheduledAt - a.scheduledAt)
      .slice(0, options.limit ?? 20);
  }

  async lastCompleted(job: string, options: { key?: string } = {}): Promise<number | undefined> {
    const entries = this.#jobs.get(ledgerId(options.key ?? job, job))?.entries;
    let latest: number | undefined;
    for (const [at, entry] of entries ?? []) {
      if (entry.record.outcome === 'success' && (latest === undefined || at > latest)) latest = at;
    }
    return latest;
  }

  async pauseJob(job: string, options: { key: string; by: string; reason?: string }): Promise<void> {
    const { key, by, reason } = options;
    const pause: JobPause = { pausedAt: this.time.now(), by, ...(reason === undefined ? {} : { reason }) };
    this.#pauses.set(ledgerId(key, job), pause);
  }

  async resumeJob(job: string, options: { key: string }): Promise<void> {
    this.#pauses.delete(ledgerId(options.key, job));
  }

  async pauseOf(job: string, options: { key: string }): Promise<JobPause | undefined> {
    const pause = this.#pauses.get(ledgerId(options.key, job));
    return pause === undefined ? undefined : { ...pause };
  }

  async registerInstance(info: InstanceInfo, options: { ttlMs: number }): Promise<void> {
    const now = this.time.now();
    const fields = checkInstanceInfo(info, options?.ttlMs);
    this.#instances.set(fields.instance, {
      info: { ...fields, lastSeenAt: now },
      expiresAt: now + options.ttlMs,
    });
  }

  async removeInstance(instance: string): Promise<void> {
    this.#instances.delete(instance);
  }

  async listInstances(): Promise<RegisteredInstance[]> {
    const now = this.time.now();
    const live: RegisteredInstance[] = [];
    for (const [name, { info, expiresAt }] of this.#instances) {
      if (expiresAt > now) live.push({ ...info });
      else this.#instances.delete(name);
    }
    return live.sort((a, b) => (a.instance < b.instance ? -1 : a.instance > b.instance ? 1 : 0));
  }

  #ledger(key: string, job: string): JobLedger {
    const id = ledgerId(key, job);
    let ledger = this.#jobs.get(id);
    if (ledger === undefined) {
      ledger = { entries: new Map(), queue: [], queuedUntil: new Map() };
      this.#jobs.set(id, ledger);
    }
    return ledger;
  }

  #grant(
    request: ClaimRequest,
    ledger: JobLedger,
    scheduledAt: number,
    now: number,
    takeover: boolean,
  ): ClaimResult {
    const { key, owner, ttlMs, overlap } = request;
    let state = this.keys.get(key);
    if (state === undefined) {
      state = { token: 0, owner: undefined, expiresAt: 0 };
      this.keys.set(key, state);
    }
    const token = ++state.token;
    const expiresAt = now + ttlMs;
    if (overlap !== 'allow-all') {
      state.owner = owner;
      state.expiresAt = expiresAt;
      state.current = { job: request.job, scheduledAt };
    }
    this.#dequeue(ledger, scheduledAt);
    const previous = ledger.entries.get(scheduledAt)?.record;
    const takeovers = (previous?.takeovers ?? 0) + (takeover ? 1 : 0);
    ledger.entries.set(scheduledAt, {
      record: {
        job: request.job,
        scheduledAt,
        outcome: 'running',
        token,
        instance: request.instance,
        startedAt: now,
        ...(takeovers > 0 ? { takeovers } : {}),
      },
      owner,
      expiresAt,
    });
    return {
      status: 'granted',
      takeover,
      lease: { job: request.job, key, scheduledAt, owner, token, overlap },
    };
  }

  /** Queues the request's occurrence unless the policy says skip; false when it is to be skipped. */
  #enqueue(ledger: JobLedger, request: ClaimRequest, deadline: number, now: number): boolean {
    const { overlap, scheduledAt } = request;
    if (overlap === 'skip') return false;
    if (overlap === 'buffer-one') {
      const waiting = ledger.queue.some(
        (at) =>
          at !== scheduledAt &&
          now <= ledger.queuedUntil.get(at)! &&
          ledger.entries.get(at)?.record.outcome === 'queued',
      );
      if (waiting) return false;
    }
    if (!ledger.queuedUntil.has(scheduledAt)) {
      const index = ledger.queue.findIndex((at) => at > scheduledAt);
      ledger.queue.splice(index === -1 ? ledger.queue.length : index, 0, scheduledAt);
    }
    ledger.queuedUntil.set(scheduledAt, deadline);
    ledger.entries.set(scheduledAt, {
      record: { job: request.job, scheduledAt, outcome: 'queued', instance: request.instance },
    });
    return true;
  }

  #dequeue(ledger: JobLedger, scheduledAt: number): void {
    if (!ledger.queuedUntil.delete(scheduledAt)) return;
    ledger.queue.splice(ledger.queue.indexOf(scheduledAt), 1);
  }

  #skip(ledger: JobLedger, request: ClaimRequest, reason: LedgerSkipReason, now: number): ClaimResult {
    this.#dequeue(ledger, request.scheduledAt);
    const entry: LedgerEntry = {
      record: {
        job: request.job,
        scheduledAt: request.scheduledAt,
        outcome: 'queued',
        instance: request.instance,
      },
    };
    this.#setSkipped(entry, reason, now);
    ledger.entries.set(request.scheduledAt, entry);
    this.#trim(ledger, now, {
      ...ledgerTrimOf(request),
      retentionMs: request.retentionMs ?? ledgerDefaultRetentionMs,
    });
    return { status: 'skipped', reason };
  }

  #setSkipped(entry: LedgerEntry, reason: LedgerSkipReason, now: number): void {
    entry.record = { ...entry.record, outcome: 'skipped', reason, endedAt: now };
  }

  /** An occurrence nobody may take over any more (cancelled, or abandoned past its window) fails. */
  #giveUp(ledger: JobLedger, scheduledAt: number, entry: LedgerEntry, now: number): void {
    const error = entry.cancelled ? cancelledMessage : abandonedMessage;
    this.#end(ledger, entry.record.job, scheduledAt, now, { outcome: 'failure', error });
  }

  #end(ledger: JobLedger, job: string, scheduledAt: number, now: number, result: RunResult): void {
    const {
      error: _error,
      reason: _reason,
      ...previous
    } = ledger.entries.get(scheduledAt)?.record ?? {
      job,
      scheduledAt,
    };
    const record: RunRecord = { ...previous, outcome: result.outcome, endedAt: now };
    if (result.error !== undefined) (record as { error?: string }).error = result.error;
    ledger.entries.set(scheduledAt, { record });
  }

  #releaseOccurrence(lease: OccurrenceLease, entry: LedgerEntry): void {
    if (entry.owner !== lease.owner) return;
    entry.expiresAt = this.time.now();
    if (lease.overlap === 'allow-all') return;
    const state = this.keys.get(lease.key);
    if (state?.owner === lease.owner) {
      state.owner = undefined;
      if (state.current?.scheduledAt === lease.scheduledAt && state.current.job === lease.job) {
        state.current = undefined;
      }
      this.notifyReleased(lease.key);
    }
  }

  /** Drops what {@link LedgerTrim} says: past the retention, then the oldest past the record limit. */
  #trim(
    ledger: JobLedger,
    now: number,
    trim: { retentionMs: number; recordLimit: number; keepWithinMs: number },
  ): void {
    const drop = (at: number) => {
      ledger.entries.delete(at);
      this.#dequeue(ledger, at);
    };
    for (const [at, entry] of ledger.entries) {
      if (at < now - trim.retentionMs && entry.record.outcome !== 'running') drop(at);
    }
    let excess = ledger.entries.size - trim.recordLimit;
    if (excess <= 0) return;
    const oldest = [...ledger.entries.keys()].sort((a, b) => a - b);
    for (const at of oldest) {
      if (excess === 0 || at >= now - trim.keepWithinMs) break;
      // The oldest `excess` records go, as the other stores trim: a running one among them stays.
      excess--;
      if (ledger.entries.get(at)!.record.outcome !== 'running') drop(at);
    }
  }
}
