import { StoreUnavailableError } from '../strategies/lock/errors.ts';
import type { ClaimRequest, ClaimResult, LedgerTrim, OccurrenceLease, RunResult } from './contract.ts';
import {
  boundedClaim,
  type Decision,
  decideClaim,
  decideFinish,
  decideRenew,
  finalRecordDecides,
  type LedgerChanges,
  type LedgerEntry,
  type LedgerView,
  leaseOf,
  type ResolvedTrim,
  recordDecides,
  resolvedTrim,
  trimmed,
} from './decide.ts';
import type { KnownStoredView, KnownViews, VersionParts } from './known-views.ts';

/**
 * What a store shared by processes gives the run ledger: one atomic step per job and key, and no
 * decision of its own. `apply` reads the job's {@link StoredView} on the store's clock, hands it to
 * `decide` (the decisions of decide.ts run in the process), and writes what `decide` returns,
 * issuing a grant's fencing token, all as one atomic step: under a lock (a PostgreSQL transaction
 * holding the key's row), or as a read and a write made only where the read's `version` still
 * holds, read and decided again when it does not ({@link compareAndWrite}, for Redis).
 */
export interface LedgerPrimitive {
  apply(target: ReadTarget, decide: (stored: StoredView) => WriteChanges | undefined): Promise<Applied>;
}

/** What an `apply` wrote: the grant's token, when it granted. */
export interface Applied {
  readonly token?: number;
}

/** What a read covers: one job's ledger on one key, and the occurrences the caller asks about. */
export interface ReadTarget {
  /** The ledger operation it serves, for messages. */
  readonly operation: 'claimOccurrence' | 'renewOccurrence' | 'finishOccurrence';
  readonly key: string;
  readonly job: string;
  readonly occurrences: readonly number[];
  /** Set for a claim with a `concurrency` above 1: the view then holds every `running` entry. */
  readonly running?: boolean;
  /**
   * Set for a claim whose answer its occurrence's record may decide alone (`recordDecides`): a
   * store may then read only the records asked about, when each is there, and its clock (a view
   * with `recordOnly` set). When they do not decide, the claim reads again without it.
   */
  readonly recordFirst?: boolean;
  /** Set when the decision may trim: the view then has `history`. */
  readonly trim?: ResolvedTrim;
}

/** A view as a store read it. */
export interface StoredView {
  readonly view: LedgerView;
  /** For {@link compareAndWrite}: changes whenever anything read changes (a digest will do). */
  readonly version?: string;
  /**
   * Set when the store read only the records asked about and its clock (`ReadTarget.recordFirst`):
   * nothing is decided on such a view unless they decide alone, and nothing is written on it.
   */
  readonly recordOnly?: boolean;
  /**
   * With a `trim` target: the job's record count, and its oldest occurrences (their entries are in
   * `view.entries`), oldest first: every one past the retention, and one more than the record
   * limit's excess (a decision may add one record older than some of them).
   */
  readonly history?: { readonly total: number; readonly oldest: readonly number[] };
  /** What the version is a digest of, for a store that keeps {@link KnownViews}. */
  readonly parts?: VersionParts;
}

/**
 * The changes of a decision, as a store writes them: each put with the entry it replaces (so an
 * index of queued or running occurrences is kept without reading again), and the occurrences a
 * trim drops, with theirs.
 */
export interface WriteChanges extends Omit<LedgerChanges, 'put' | 'trim'> {
  readonly put: ReadonlyArray<{ readonly entry: LedgerEntry; readonly before: LedgerEntry | undefined }>;
  readonly drop: readonly LedgerEntry[];
  /** The view's `current` when the key is released (the store clears it when it is the released occurrence). */
  readonly current: number | undefined;
}

/**
 * Written (with the grant's token), or not: the version changed since the read. A store that keeps
 * {@link KnownViews} also tells its time and the records as it wrote them; refusing a claim made on
 * a known view, it may return what it found instead, as a read would (`stored`, records alone).
 */
export type WriteReply =
  | {
      readonly written: true;
      readonly token?: number;
      /** The store's time of the write, in ms (a fraction for its microseconds, if it tells them). */
      readonly now?: number;
      readonly records?: ReadonlyMap<number, string>;
      /** The job's counter after the write (`VersionParts.counter`), for the view known after it. */
      readonly counter?: string;
      /** The key's last token after the write (`VersionParts.keyToken`), for the view known after it. */
      readonly keyToken?: string;
    }
  | { readonly written: false; readonly stored?: StoredView };

/** A decision made on a view the process knew: the store time it was made at, and that view's parts. */
export interface DecidedOnKnown {
  readonly decidedAt: number;
  readonly parts: VersionParts;
}

/** How many times a decision is made again on a view that changed before it could be written. */
const maxAttempts = 50;

/**
 * `apply` for a store with a read and a conditional write (Redis): reads, decides, and writes only
 * where the version read still holds; else reads and decides again. With `known`, a decision is
 * first made on the view the process knows after its last write of the job, if any, and written
 * at once (`onKnown`); refused, it is read and decided again (on what the refusal returned, if
 * anything).
 */
export function compareAndWrite(
  storeName: string,
  read: (target: ReadTarget) => Promise<StoredView>,
  write: (
    target: ReadTarget,
    version: string,
    changes: WriteChanges,
    onKnown: DecidedOnKnown | undefined,
    /** The view the decision was made on (`version` is its version). */
    stored: StoredView,
  ) => Promise<WriteReply>,
  known?: KnownViews,
): LedgerPrimitive['apply'] {
  /** Applied, or the view the store returned with its refusal (`null` without one). */
  const written = async (
    target: ReadTarget,
    stored: StoredView,
    changes: WriteChanges,
    guess?: KnownStoredView,
  ): Promise<Applied | StoredView | null> => {
    let reply: WriteReply;
    try {
      const onKnown = guess && { decidedAt: guess.decidedAt, parts: guess.stored.parts };
      reply = await write(target, stored.version!, changes, onKnown, stored);
    } catch (error) {
      // It may have been written or not: what the process knew is no longer sure.
      known?.forget(target);
      throw error;
    }
    if (!reply.written) return reply.stored ?? null;
    if (known !== undefined) {
      const { now, records, counter, keyToken } = reply;
      if (now === undefined || records === undefined || counter === undefined || keyToken === undefined) {
        known.forget(target);
      } else {
        const wrote = { ...reply, now, records, counter, keyToken };
        known.remember(target, stored, changes, wrote, guess?.covers);
      }
    }
    return reply.token === undefined ? {} : { token: reply.token };
  };
  return async (target, decide) => {
    const guess = known?.stored(target);
    /** What the store returned refusing a write on the known view: the loop's first read. */
    let found: StoredView | undefined;
    if (guess !== undefined) {
      const changes = decide(guess.stored);
      // A decision that writes nothing is not checked by the store: it is made on a read. A write
      // refused says the view is out of date.
      if (changes !== undefined) {
        const applied = await written(target, guess.stored, changes, guess);
        if (applied !== null && !isStoredView(applied)) return applied;
        known!.forget(target);
        found = applied ?? undefined;
      }
    }
    for (let attempt = 1; ; attempt++) {
      const stored = found ?? (await read(target));
      found = undefined;
      const changes = decide(stored);
      if (changes === undefined) return {};
      const applied = await written(target, stored, changes);
      if (applied !== null && !isStoredView(applied)) return applied;
      if (attempt === maxAttempts) {
        throw new StoreUnavailableError(
          `${storeName}: the run ledger of "${target.job}" changed under each of ${maxAttempts} attempts to write it.`,
        );
      }
    }
  };
}

function isStoredView(value: Applied | StoredView): value is StoredView {
  return 'view' in value;
}

/**
 * The run ledger's operations on a {@link LedgerPrimitive}: each one decision (decide.ts) in one
 * atomic step of the store.
 */
export class LedgerEngine {
  readonly #primitive: LedgerPrimitive;
  /** Per key: the last decision queued, settled. */
  readonly #inFlight = new Map<string, Promise<void>>();

  readonly #claimsReadHistory: boolean;

  /**
   * With `claimsReadHistory`, a claim's view has the history a trim needs (a primitive keeping
   * {@link KnownViews} wants it: the finish then trims on the view it knows); without it, a claim
   * that trims reads again with it.
   */
  constructor(primitive: LedgerPrimitive, options: { readonly claimsReadHistory?: boolean } = {}) {
    this.#primitive = primitive;
    this.#claimsReadHistory = options.claimsReadHistory === true;
  }

  async claimOccurrence(request: ClaimRequest): Promise<ClaimResult> {
    const { job, key } = request;
    // Without the history a trim needs: only a claim that records a skip trims, and it reads again.
    const trim = resolvedTrim(request);
    const target: ReadTarget = {
      operation: 'claimOccurrence',
      key,
      job,
      occurrences: [request.scheduledAt],
      ...(boundedClaim(request) ? { running: true } : {}),
      ...(finalRecordDecides(request) ? { recordFirst: true } : {}),
      ...(this.#claimsReadHistory ? { trim } : {}),
    };
    const { answer, token } = await this.#decide(target, (view) => decideClaim(view, request), {
      trimWith: trim,
      recordDecides: (view) => recordDecides(request, view.entries.get(request.scheduledAt), view.now),
    });
    if (answer.status !== 'granted') return answer;
    return {
      status: 'granted',
      takeover: answer.takeover,
      lease: leaseOf(request, answer.scheduledAt, token!),
    };
  }

  async renewOccurrence(lease: OccurrenceLease, ttlMs: number): Promise<boolean> {
    const target: ReadTarget = {
      operation: 'renewOccurrence',
      key: lease.key,
      job: lease.job,
      occurrences: [lease.scheduledAt],
    };
    return (await this.#decide(target, (view) => decideRenew(view, lease, ttlMs))).answer;
  }

  /** Resolves with the latest token when `lease.token` is stale (only the release was written). */
  async finishOccurrence(
    lease: OccurrenceLease,
    result: RunResult,
    options: LedgerTrim,
  ): Promise<number | undefined> {
    const trim = resolvedTrim(options);
    const target: ReadTarget = {
      operation: 'finishOccurrence',
      key: lease.key,
      job: lease.job,
      occurrences: [lease.scheduledAt],
      trim,
    };
    const { answer } = await this.#decide(target, (view) => decideFinish(view, lease, result, trim));
    return answer.stale ? answer.latestToken : undefined;
  }

  /**
   * One decision at a time per key in this process: each write changes what the next one reads
   * (the key's lease, the job's records), so decisions made side by side on one view would all but
   * one have to be made again; and a store's batch then holds at most one decision per key.
   */
  #decide<A>(
    target: ReadTarget,
    decide: (view: LedgerView) => Decision<A>,
    options: ApplyOptions = {},
  ): Promise<{ answer: A; token?: number }> {
    const id = target.key;
    const previous = this.#inFlight.get(id);
    const apply = () => this.#apply(target, decide, options);
    const run = previous === undefined ? apply() : previous.then(apply);
    const settled = run.then(ignore, ignore);
    this.#inFlight.set(id, settled);
    settled.then(() => {
      if (this.#inFlight.get(id) === settled) this.#inFlight.delete(id);
    });
    return run;
  }

  /**
   * One decision in one atomic step. A target read without the history (`trimWith` says the trim
   * then) is read and decided again with it when the decision trims: the first read is the usual
   * case's, and costs a store that keeps records apart from their index less. A view of the
   * records alone (`recordOnly`) that they do not decide (`recordDecides`) is read again whole.
   */
  async #apply<A>(
    target: ReadTarget,
    decide: (view: LedgerView) => Decision<A>,
    options: ApplyOptions,
  ): Promise<{ answer: A; token?: number }> {
    const { trimWith } = options;
    let answer: A | undefined;
    let trims = false;
    let whole = false;
    const applied = await this.#primitive.apply(target, (stored) => {
      if (stored.recordOnly === true && options.recordDecides?.(stored.view) !== true) {
        whole = true;
        return undefined;
      }
      const decision = decide(stored.view);
      answer = decision.answer;
      trims = decision.changes.trim !== undefined && stored.history === undefined;
      if (trims && trimWith !== undefined) return undefined;
      // A view of the records alone is written on by no decision that it decides.
      return stored.recordOnly === true ? undefined : writeChangesOf(stored, decision.changes);
    });
    if (whole) return this.#apply({ ...target, recordFirst: false }, decide, options);
    if (trims && trimWith !== undefined) {
      const { recordDecides } = options;
      return this.#apply({ ...target, trim: trimWith }, decide, recordDecides ? { recordDecides } : {});
    }
    return applied.token === undefined ? { answer: answer! } : { answer: answer!, token: applied.token };
  }
}

/** How a decision is read again: with the history a trim needs, or whole after the records alone. */
interface ApplyOptions {
  readonly trimWith?: ResolvedTrim;
  readonly recordDecides?: (view: LedgerView) => boolean;
}

/** The occurrences a write records for the first time. */
export function addedBy(put: WriteChanges['put']): number[] {
  return put.filter(({ before }) => before === undefined).map(({ entry }) => entry.scheduledAt);
}

/**
 * The oldest occurrences of `history` once `added` are recorded: those read, then each added one
 * that is among them (older than the newest read, or the read holds every record; a store may read
 * only the oldest few of many).
 */
export function oldestWith(history: NonNullable<StoredView['history']>, added: readonly number[]): number[] {
  const read = history.oldest;
  const complete = read.length >= history.total;
  const newest = read.length === 0 ? Number.NEGATIVE_INFINITY : read[read.length - 1]!;
  return [...read, ...added.filter((at) => complete || at < newest)];
}

/** The changes as the store writes them, or `undefined` when there is nothing to write. */
function writeChangesOf(stored: StoredView, changes: LedgerChanges): WriteChanges | undefined {
  const { view } = stored;
  const put = changes.put.map((entry) => ({ entry, before: view.entries.get(entry.scheduledAt) }));
  let drop: LedgerEntry[] = [];
  if (changes.trim !== undefined && stored.history !== undefined) {
    const after = new Map(put.map(({ entry }) => [entry.scheduledAt, entry]));
    const added = addedBy(put);
    const oldest = oldestWith(stored.history, added).map((at) => after.get(at) ?? view.entries.get(at)!);
    const dropped = new Set(trimmed(oldest, view.now, changes.trim, stored.history.total + added.length));
    drop = oldest.filter((entry) => dropped.has(entry.scheduledAt));
  }
  if (
    put.length === 0 &&
    drop.length === 0 &&
    changes.grant === undefined &&
    changes.renewKey === undefined &&
    changes.releaseKey === undefined
  ) {
    return undefined;
  }
  const write: { -readonly [K in keyof WriteChanges]: WriteChanges[K] } = {
    put,
    drop,
    current: view.current,
  };
  if (changes.grant !== undefined) write.grant = changes.grant;
  if (changes.renewKey !== undefined) write.renewKey = changes.renewKey;
  if (changes.releaseKey !== undefined) write.releaseKey = changes.releaseKey;
  return write;
}

function ignore(): void {}
