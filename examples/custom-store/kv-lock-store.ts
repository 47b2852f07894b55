import {
  compareAndWrite,
  type JobPause,
  type LeaseInfo,
  LedgerEngine,
  type LedgerEntry,
  type LockStore,
  type OccurrenceLease,
  publicRecord,
  type ReadTarget,
  type RunLedger,
  type RunRecord,
  StaleTokenError,
  type StoredView,
  type WriteChanges,
  type WriteReply,
} from 'resil';

/** A lock key's document: its lease, its fencing token, and the occurrence the lease went to. */
interface KeyDocument {
  owner?: string;
  expiresAt: number;
  token: number;
  current?: { job: string; at: number };
}

/** A job's document on one key: its occurrences' entries, and its pause. */
interface JobDocument {
  entries: Map<number, LedgerEntry>;
  pause?: JobPause;
}

interface Versioned<T> {
  version: number;
  document: T;
}

/**
 * A lock store and run ledger (with pauses) on a key-value service that can compare and set: a `Map` of
 * versioned documents stands in for the service. The decisions are resil's own (`LedgerEngine`);
 * the store reads a job's documents with their versions, and writes a decision's changes only
 * where both versions are unchanged, in one step. On a real service that step is its transaction
 * or multi-key compare-and-set, and the clock is the service's.
 */
export class KvLockStore implements LockStore, RunLedger {
  readonly #keys = new Map<string, Versioned<KeyDocument>>();
  readonly #jobs = new Map<string, Versioned<JobDocument>>();
  readonly #ledger = new LedgerEngine({
    apply: compareAndWrite(
      'KvLockStore',
      async (target) => this.#read(target),
      async (target, version, changes) => this.#write(target, version, changes),
    ),
  });

  async now(): Promise<number> {
    return Date.now();
  }

  async acquire(key: string, owner: string, ttlMs: number): Promise<number | undefined> {
    const now = Date.now();
    const entry = this.#key(key);
    const lease = entry.document;
    if (lease.owner !== undefined && lease.expiresAt > now) return undefined;
    entry.document = { owner, expiresAt: now + ttlMs, token: lease.token + 1 };
    entry.version++;
    return entry.document.token;
  }

  async renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const entry = this.#key(key);
    if (entry.document.owner !== owner || entry.document.expiresAt <= now) return false;
    entry.document.expiresAt = now + ttlMs;
    entry.version++;
    return true;
  }

  async release(key: string, owner: string): Promise<void> {
    const entry = this.#key(key);
    if (entry.document.owner !== owner || entry.document.expiresAt <= Date.now()) return;
    entry.document.owner = undefined;
    entry.version++;
  }

  async inspect(key: string): Promise<LeaseInfo | undefined> {
    const { owner, expiresAt, token } = this.#key(key).document;
    if (owner === undefined || expiresAt <= Date.now()) return undefined;
    return { owner, token, expiresAt: new Date(expiresAt) };
  }

  claimOccurrence: RunLedger['claimOccurrence'] = (request) => this.#ledger.claimOccurrence(request);

  renewOccurrence: RunLedger['renewOccurrence'] = (lease, ttlMs) =>
    this.#ledger.renewOccurrence(lease, ttlMs);

  async finishOccurrence(
    lease: OccurrenceLease,
    result: Parameters<RunLedger['finishOccurrence']>[1],
    options: Parameters<RunLedger['finishOccurrence']>[2] = {},
  ): Promise<void> {
    const latest = await this.#ledger.finishOccurrence(lease, result, options);
    if (latest !== undefined) throw new StaleTokenError(lease.job, lease.token, latest);
  }

  async runHistory(job: string, options: { key?: string; limit?: number } = {}): Promise<RunRecord[]> {
    const entries = [...this.#job(options.key ?? job, job).document.entries.values()];
    return entries
      .sort((a, b) => b.scheduledAt - a.scheduledAt)
      .slice(0, options.limit ?? 20)
      .map(publicRecord);
  }

  async lastCompleted(job: string, options: { key?: string } = {}): Promise<number | undefined> {
    const done = [...this.#job(options.key ?? job, job).document.entries.values()].filter(
      (entry) => entry.outcome === 'success',
    );
    return done.length === 0 ? undefined : Math.max(...done.map((entry) => entry.scheduledAt));
  }

  async pauseJob(job: string, options: { key: string; by: string; reason?: string }): Promise<void> {
    const entry = this.#job(options.key, job);
    const { by, reason } = options;
    entry.document.pause = { pausedAt: Date.now(), by, ...(reason === undefined ? {} : { reason }) };
    entry.version++;
  }

  async resumeJob(job: string, options: { key: string }): Promise<void> {
    const entry = this.#job(options.key, job);
    entry.document.pause = undefined;
    entry.version++;
  }

  async pauseOf(job: string, options: { key: string }): Promise<JobPause | undefined> {
    const pause = this.#job(options.key, job).document.pause;
    return pause === undefined ? undefined : { ...pause };
  }

  /** One atomic read of the key's and the job's documents, with their versions. */
  #read(target: ReadTarget): StoredView {
    const now = Date.now();
    const key = this.#key(target.key);
    const job = this.#job(target.key, target.job);
    const { owner, expiresAt, current } = key.document;
    const entries = new Map(job.document.entries);
    const stored: StoredView = {
      view: {
        now,
        ...(owner !== undefined && expiresAt > now ? { lease: { owner, expiresAt } } : {}),
        ...(current?.job === target.job ? { current: current.at } : {}),
        paused: job.document.pause !== undefined,
        entries,
      },
      version: `${key.version}:${job.version}`,
    };
    if (target.trim === undefined) return stored;
    const oldest = [...entries.keys()].sort((a, b) => a - b);
    return { ...stored, history: { total: oldest.length, oldest } };
  }

  /** Writes the changes in one step, only where neither document changed since the read. */
  #write(target: ReadTarget, version: string, changes: WriteChanges): WriteReply {
    const key = this.#key(target.key);
    const job = this.#job(target.key, target.job);
    if (`${key.version}:${job.version}` !== version) return { written: false };
    const now = Date.now();
    const lease = key.document;
    const { grant, renewKey, releaseKey } = changes;
    let token: number | undefined;
    if (grant !== undefined) {
      token = ++lease.token;
      if (grant.holdsKey) {
        lease.owner = grant.owner;
        lease.expiresAt = now + grant.ttlMs;
        lease.current = { job: target.job, at: grant.scheduledAt };
      }
    }
    for (const { entry } of changes.put) {
      const granted = entry.scheduledAt === grant?.scheduledAt;
      job.document.entries.set(entry.scheduledAt, granted ? { ...entry, token } : entry);
    }
    if (renewKey !== undefined) lease.expiresAt = now + renewKey.ttlMs;
    if (releaseKey !== undefined) {
      lease.owner = undefined;
      if (changes.current === releaseKey.scheduledAt) lease.current = undefined;
    }
    for (const entry of changes.drop) job.document.entries.delete(entry.scheduledAt);
    key.version++;
    job.version++;
    return token === undefined ? { written: true } : { written: true, token };
  }

  #key(key: string): Versioned<KeyDocument> {
    let entry = this.#keys.get(key);
    if (entry === undefined) {
      entry = { version: 0, document: { expiresAt: 0, token: 0 } };
      this.#keys.set(key, entry);
    }
    return entry;
  }

  #job(key: string, job: string): Versioned<JobDocument> {
    const id = `${key}\u0000${job}`;
    let entry = this.#jobs.get(id);
    if (entry === undefined) {
      entry = { version: 0, document: { entries: new Map() } };
      this.#jobs.set(id, entry);
    }
    return entry;
  }
}
