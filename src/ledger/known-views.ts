import type { LedgerEntry, LedgerView, ResolvedTrim } from './decide.ts';
import { addedBy, oldestWith, type ReadTarget, type StoredView, type WriteChanges } from './engine.ts';

/**
 * What a process knows of a job's ledger after its own write: the view it read, with what it wrote
 * applied. A store with a read and a conditional write ({@link compareAndWrite}) decides the job's
 * next operation on it and writes at once, checked against the version that view has, instead of
 * reading first: a finish after its own grant, a renewal, the next fire of a job whose last run
 * this process had. Nothing else writes a running occurrence's ledger, so such a write is nearly
 * always taken; when it is not (someone wrote since, the store lost it, a clock moved), the store
 * refuses it as any write on an outdated version, and the process reads and decides again.
 *
 * The decision's `now` is the store's time of the last reply plus the process's own monotonic time
 * since (less a slack for the clocks' drift), never ahead of the store's: the store refuses a
 * write decided at a time after its own, or more than its tolerance before it.
 */

/** The parts of a store's version, as it keeps them (strings). */
export interface VersionParts {
  /** The job's counter, which every write of its ledger increments ('' when it has none). */
  readonly counter: string;
  /** The owner of the key's lease ('' when it is free). */
  readonly owner: string;
  /** The last fencing token issued for the key ('' for none): it changes with every acquisition. */
  readonly keyToken: string;
  /** The records of the view's entries as the store keeps them, by occurrence. */
  readonly records: ReadonlyMap<number, string>;
}

/**
 * A write as the store took it: its time (ms, with the microseconds as a fraction where the store
 * tells them: a decision on the view known after it is then not put a ms early), each record put
 * as it keeps it (a grant's with its token), and the job's counter after it.
 */
export interface Wrote {
  readonly token?: number;
  readonly now: number;
  readonly records: ReadonlyMap<number, string>;
  readonly counter: string;
  /** The key's last token after the write. */
  readonly keyToken: string;
}

export interface KnownViewsOptions {
  /** The store's version of a view with these parts, for the occurrences asked about. */
  readonly versionOf: (parts: VersionParts, occurrences: readonly number[]) => string;
  /** How many jobs' views are kept; the oldest is forgotten past it (default 10,000). */
  readonly limit?: number;
  /**
   * How many queued and how many running entries the store's read returns at most: a view decided
   * on a read that returned that many (there may be more) or holding more after the write is not
   * kept (a decision on it would see other entries than one on a read). Default: no limit.
   */
  readonly entryLimit?: number;
  /** A monotonic clock in ms (default `performance.now`). */
  readonly clock?: () => number;
  /**
   * Presume that a job this process knows nothing of has an empty ledger: the first claim of each
   * scheduled fire (`recordFirst`) of such a job is decided on an empty view and written at once,
   * checked against that view's version, without a read first. The store refuses it when
   * anything of the job or its key is there (a lease, a token, records, a pause, written by any
   * release); the process then reads. Once per job and process.
   */
  readonly presumeNew?: boolean;
}

interface KnownView extends Coverage {
  readonly view: LedgerView;
  /**
   * The store's time of the write, to the microsecond where the store tells it (the view's `now` is
   * it in whole ms), and the process's monotonic time when the reply was handled: the store's time
   * then was at least that.
   */
  readonly storeTime: number;
  readonly seenAt: number;
  readonly parts: VersionParts;
  readonly history?: { readonly total: number; readonly oldest: readonly number[] };
}

/** What a known view holds beyond what every operation reads. */
export interface Coverage {
  /** The queue and the pause, as a claim reads them. */
  readonly claims: boolean;
  /** Every running entry, as a claim with a `concurrency` above 1 reads them. */
  readonly running: boolean;
}

/**
 * A view a process knows, as the decision of `target` is made on it, the time it is made at, and
 * what it covers (handed back to `remember` after a write decided on it).
 */
export interface KnownStoredView {
  readonly stored: StoredView & { readonly parts: VersionParts };
  readonly decidedAt: number;
  readonly covers: Coverage;
}

export class KnownViews {
  readonly #views = new Map<string, KnownView>();
  readonly #versionOf: KnownViewsOptions['versionOf'];
  readonly #limit: number;
  readonly #entryLimit: number;
  readonly #clock: () => number;
  readonly #presumeNew: boolean;
  /** The jobs a view was presumed new for (at most `limit`, the oldest forgotten). */
  readonly #presumed = new Set<string>();
  /** The latest the store's time is known to have reached, and the monotonic time it was seen at. */
  #storeTime: { readonly storeTime: number; readonly seenAt: number } | undefined;

  constructor(options: KnownViewsOptions) {
    this.#versionOf = options.versionOf;
    this.#limit = options.limit ?? 10_000;
    this.#entryLimit = options.entryLimit ?? Number.POSITIVE_INFINITY;
    this.#clock = options.clock ?? (() => performance.now());
    this.#presumeNew = options.presumeNew === true;
  }

  /**
   * The store's time in a reply that came just now (ms, a fraction for microseconds): a view
   * presumed new is decided at the latest time the store is known to have reached. A reply's time
   * behind what is known is ignored (a reply handled late), unless `sample` says it is a reading of
   * the store's clock for its own sake: the clock may have stepped back, or another server (a
   * failover, another node of a cluster) answered.
   */
  sawStoreTime(storeTime: number, sample = false): void {
    const seenAt = this.#clock();
    const last = this.#storeTime;
    if (sample || last === undefined || storeTime >= last.storeTime + (seenAt - last.seenAt)) {
      this.#storeTime = { storeTime, seenAt };
    }
  }

  get size(): number {
    return this.#views.size;
  }

  /** The view `target`'s decision can be made on without reading, or `undefined`. */
  stored(target: ReadTarget): KnownStoredView | undefined {
    const id = idOf(target);
    const known = this.#views.get(id);
    if (known === undefined) return this.#presumedNew(target, id);
    if (target.operation === 'claimOccurrence' && !known.claims) return undefined;
    if (target.running === true && !known.running) return undefined;
    const { view } = known;
    const now = decisionTime(target, known.storeTime, this.#clock() - known.seenAt, view.now);
    if (target.trim !== undefined && !historyCovers(known.history, now, target.trim)) return undefined;
    const stored = {
      view: { ...view, now },
      version: this.#versionOf(known.parts, target.occurrences),
      parts: known.parts,
      ...(known.history === undefined ? {} : { history: known.history }),
    };
    return { stored, decidedAt: now, covers: { claims: known.claims, running: known.running } };
  }

  /**
   * An empty view for the scheduled fire's claim of a job this process knows nothing of yet, once
   * per job (see `presumeNew`): no lease on the key, no token issued for it, no records, no pause.
   */
  #presumedNew(target: ReadTarget, id: string): KnownStoredView | undefined {
    const seen = this.#storeTime;
    if (!this.#presumeNew || seen === undefined || this.#presumed.has(id)) return undefined;
    if (target.operation !== 'claimOccurrence' || target.recordFirst !== true) return undefined;
    this.#presumed.add(id);
    if (this.#presumed.size > this.#limit) this.#presumed.delete(this.#presumed.values().next().value!);
    const now = decisionTime(target, seen.storeTime, this.#clock() - seen.seenAt, 0);
    const parts: VersionParts = { counter: '', owner: '', keyToken: '', records: new Map() };
    const stored = {
      view: { now, paused: false, entries: new Map() },
      version: this.#versionOf(parts, target.occurrences),
      parts,
      history: { total: 0, oldest: [] },
    };
    return { stored, decidedAt: now, covers: { claims: true, running: true } };
  }

  /**
   * What is known after `changes`, decided on `stored` for `target`, were written as `wrote` says.
   * `covers`: what `stored` holds beyond what `target` read, when it is a view this process knew
   * (from `stored()`); a view read holds what its target asked for.
   */
  remember(
    target: ReadTarget,
    stored: StoredView,
    changes: WriteChanges,
    wrote: Wrote,
    covers?: Coverage,
  ): void {
    const { parts } = stored;
    if (parts === undefined || stored.recordOnly === true) return;
    const id = idOf(target);
    const claims = target.operation === 'claimOccurrence' || covers?.claims === true;
    const running = target.running === true || covers?.running === true;
    const { view } = stored;
    if (atEntryLimit(view, this.#entryLimit)) {
      // A read that returned as many as it may: there may be more than it holds.
      this.forget(target);
      return;
    }
    this.sawStoreTime(wrote.now);
    const now = Math.floor(wrote.now);
    const entries = new Map(view.entries);
    const records = new Map(parts.records);
    const { grant, renewKey, releaseKey } = changes;
    for (const { entry } of changes.put) {
      const at = entry.scheduledAt;
      const record = wrote.records.get(at);
      if (record === undefined) {
        this.forget(target);
        return;
      }
      entries.set(
        at,
        grant?.scheduledAt === at && wrote.token !== undefined ? { ...entry, token: wrote.token } : entry,
      );
      records.set(at, record);
    }
    for (const entry of changes.drop) {
      entries.delete(entry.scheduledAt);
      records.delete(entry.scheduledAt);
    }
    let { lease, current } = view;
    let { owner } = parts;
    if (grant?.holdsKey === true) {
      lease = { owner: grant.owner, expiresAt: now + grant.ttlMs };
      owner = grant.owner;
      current = grant.scheduledAt;
    }
    if (renewKey !== undefined) lease = { owner: renewKey.owner, expiresAt: now + renewKey.ttlMs };
    if (releaseKey !== undefined) {
      lease = undefined;
      owner = '';
      if (changes.current === releaseKey.scheduledAt) current = undefined;
    }
    const history = stored.history && historyAfter(stored.history, changes);
    // Only what a decision looks at is kept: the current, queued and running entries whole (with
    // their records as stored, for the version), and of those a trim may drop what a trim looks at.
    const oldest = new Set(history?.oldest);
    let queued = 0;
    let runs = 0;
    for (const [at, entry] of entries) {
      if (entry.outcome === 'queued') queued++;
      if (entry.outcome === 'running') runs++;
      if (at === current || entry.outcome === 'queued' || entry.outcome === 'running') continue;
      records.delete(at);
      if (oldest.has(at)) entries.set(at, { job: entry.job, scheduledAt: at, outcome: entry.outcome });
      else entries.delete(at);
    }
    if (queued > this.#entryLimit || runs > this.#entryLimit) {
      this.forget(target);
      return;
    }
    const known: KnownView = {
      view: {
        now,
        ...(lease === undefined ? {} : { lease }),
        ...(current === undefined ? {} : { current }),
        paused: view.paused,
        entries,
      },
      storeTime: wrote.now,
      seenAt: this.#clock(),
      parts: { counter: wrote.counter, owner, keyToken: wrote.keyToken, records },
      claims,
      running,
      ...(history === undefined ? {} : { history }),
    };
    this.#views.delete(id);
    this.#views.set(id, known);
    if (this.#views.size > this.#limit) this.#views.delete(this.#views.keys().next().value!);
  }

  forget(target: ReadTarget): void {
    this.#views.delete(idOf(target));
  }
}

/**
 * How far behind its own monotonic time the process puts the store's time, `elapsed` ms after the
 * store's reply: 50 µs and 100 ppm of the time since (NTP slews the monotonic clock as it slews the
 * wall clock; two hosts' clocks disciplined by NTP run at rates a few ppm apart), at most 1 ms.
 * Too little, and the store refuses the write (decided after its own time): the process reads and
 * decides again. Too much, and a decision may find a claim not due yet, or be refused as more than
 * the store's tolerance (1 s) before its time.
 */
function clockSlackMs(elapsed: number): number {
  return Math.min(0.05 + elapsed / 10_000, 1);
}

/**
 * The store time a decision on a view is made at: `storeTime`, seen `elapsed` ms ago, plus
 * `elapsed` less the drift slack, and no earlier than the view's own time. A fire's claim, sent
 * once its instant came by the process's estimate of the store's clock, which this time trails by
 * the reply's way back, is decided at the instant, which the store checks it has reached (else it
 * refuses the write, and the process reads). Not a manual run's or a backfill's: their instant is
 * this process's estimate of now.
 */
function decisionTime(target: ReadTarget, storeTime: number, elapsed: number, viewNow: number): number {
  const now = Math.max(viewNow, Math.floor(storeTime + elapsed - clockSlackMs(elapsed)));
  const instant = target.recordFirst === true ? target.occurrences[0] : undefined;
  return instant !== undefined && instant > now && instant - now <= instantSlackMs ? instant : now;
}

/**
 * How far behind a fire's instant a known view's time may be for its claim to be decided at the
 * instant: the view's time trails the store's by the way back of the last reply, which a busy
 * process may take tens of ms to handle. Deciding at the instant is always safe (the store checks
 * it has reached it); a claim whose instant the store has not reached is refused, and reads.
 */
const instantSlackMs = 100;

/**
 * How many of a job's oldest records a known view keeps: the trims of about this many finishes
 * (one each once the job holds its record limit), with little held per job. Past it, the view no
 * longer holds every record (a trim then reads).
 */
const knownHistoryLimit = 10;

/** True when `view` holds `limit` queued or `limit` running entries, or more. */
function atEntryLimit(view: LedgerView, limit: number): boolean {
  let queued = 0;
  let running = 0;
  for (const entry of view.entries.values()) {
    if (entry.outcome === 'queued' && ++queued >= limit) return true;
    if (entry.outcome === 'running' && ++running >= limit) return true;
  }
  return false;
}

function idOf(target: Pick<ReadTarget, 'key' | 'job'>): string {
  return `${target.key}\u0000${target.job}`;
}

/**
 * True when `history` holds every record a trim at `now` may drop, as a read with a trim does
 * (see `StoredView.history`), with room for one record a decision adds: all the job's records, or
 * the oldest, up to one the retention keeps, and more than the record limit's excess.
 */
export function historyCovers(
  history: KnownView['history'],
  now: number,
  trim: ResolvedTrim,
): history is NonNullable<KnownView['history']> {
  if (history === undefined) return false;
  const { total, oldest } = history;
  if (oldest.length >= total) return true;
  const newest = oldest[oldest.length - 1];
  if (newest === undefined || newest < now - trim.retentionMs) return false;
  return oldest.length >= total + 2 - trim.recordLimit;
}

/** The history after a write: its new records counted (and among the oldest where they are), its drops gone. */
function historyAfter(
  history: NonNullable<KnownView['history']>,
  changes: WriteChanges,
): NonNullable<KnownView['history']> {
  const added = addedBy(changes.put);
  const dropped = new Set(changes.drop.map((entry: LedgerEntry) => entry.scheduledAt));
  const oldest = oldestWith(history, added)
    .filter((at) => !dropped.has(at))
    .sort((a, b) => a - b)
    // A few: enough for the next trims, after which a read brings more.
    .slice(0, knownHistoryLimit);
  return { total: history.total + added.length - dropped.size, oldest };
}
