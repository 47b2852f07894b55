import { StoreUnavailableError } from '../strategies/lock/errors.ts';
import type { ClaimRequest, ClaimResult, LedgerTrim, OccurrenceLease, RunResult } from './contract.ts';
import {
  type Decision,
  decideClaim,
  decideFinish,
  decideRenew,
  type LedgerChanges,
  type LedgerEntry,
  type LedgerView,
  type ResolvedTrim,
  resolvedTrim,
  trimmed,
} from './decide.ts';

/**
 * What a store shared by processes gives the run ledger: two atomic calls, and no decision of its
 * own. The decisions (decide.ts) run in the process between them.
 *
 * - `read`: one job's {@link LedgerView} on one key, on the store's clock, with a `version` that
 *   changes whenever anything in it changes (a digest of what it read will do). With `trim`, the
 *   view has `history`: the job's record count and its oldest records, so a trim can be decided.
 * - `write`: the changes, only where the view's `version` is still the store's (else nothing is
 *   written, and the reply says so); a grant's token is issued in the same atomic step.
 */
export interface LedgerPrimitive {
  read(target: ReadTarget): Promise<StoredView>;
  write(target: ReadTarget, version: string, changes: WriteChanges): Promise<WriteReply>;
}

/** What a read covers: one job's ledger on one key, and the occurrences the caller asks about. */
export interface ReadTarget {
  /** The ledger operation it serves, for messages. */
  readonly operation: 'claimOccurrence' | 'renewOccurrence' | 'finishOccurrence';
  readonly key: string;
  readonly job: string;
  readonly occurrences: readonly number[];
  /** Set when the decision may trim: the view then has `history`. */
  readonly trim?: ResolvedTrim;
}

/** A view as a store read it. */
export interface StoredView {
  readonly view: LedgerView;
  readonly version: string;
  /**
   * With a `trim` target: the job's record count, and its oldest occurrences (their entries are in
   * `view.entries`), oldest first: every one past the retention, and one more than the record
   * limit's excess (a decision may add one record older than some of them).
   */
  readonly history?: { readonly total: number; readonly oldest: readonly number[] };
}

/**
 * The changes of a decision, as a store writes them: each put with the entry it replaces (so an
 * index of queued or succeeded occurrences is kept without reading again), and the occurrences a
 * trim drops, with theirs.
 */
export interface WriteChanges extends Omit<LedgerChanges, 'put' | 'trim'> {
  readonly put: ReadonlyArray<{ readonly entry: LedgerEntry; readonly before: LedgerEntry | undefined }>;
  readonly drop: readonly LedgerEntry[];
  /** The view's `current` when the key is released (the store clears it when it is the released occurrence). */
  readonly current: number | undefined;
}

/** Written (with the grant's token), or not: the version changed since the read. */
export type WriteReply = { readonly written: true; readonly token?: number } | { readonly written: false };

/** How many times a decision is made again on a view that changed before it could be written. */
const maxAttempts = 50;

/**
 * The run ledger's operations on a {@link LedgerPrimitive}: read, decide, write where nothing
 * changed, and read and decide again when something did.
 */
export class LedgerEngine {
  readonly #primitive: LedgerPrimitive;
  readonly #storeName: string;
  /** Per job and key: the last decision queued, settled. */
  readonly #inFlight = new Map<string, Promise<void>>();

  constructor(primitive: LedgerPrimitive, storeName: string) {
    this.#primitive = primitive;
    this.#storeName = storeName;
  }

  async claimOccurrence(request: ClaimRequest): Promise<ClaimResult> {
    const { job, key, owner, overlap } = request;
    const target: ReadTarget = {
      operation: 'claimOccurrence',
      key,
      job,
      occurrences: [request.scheduledAt],
      trim: resolvedTrim(request),
    };
    const { answer, token } = await this.#decide(target, (view) => decideClaim(view, request));
    if (answer.status !== 'granted') return answer;
    const lease = { job, key, scheduledAt: answer.scheduledAt, owner, token: token!, overlap };
    return { status: 'granted', takeover: answer.takeover, lease };
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
   * One decision at a time per job and key in this process: each write changes what the next one
   * reads, so decisions made side by side on one view would all but one have to be made again.
   */
  #decide<A>(
    target: ReadTarget,
    decide: (view: LedgerView) => Decision<A>,
  ): Promise<{ answer: A; token?: number }> {
    const id = `${target.key}\u0000${target.job}`;
    const previous = this.#inFlight.get(id);
    const run =
      previous === undefined
        ? this.#attempt(target, decide)
        : previous.then(() => this.#attempt(target, decide));
    const settled = run.then(ignore, ignore);
    this.#inFlight.set(id, settled);
    settled.then(() => {
      if (this.#inFlight.get(id) === settled) this.#inFlight.delete(id);
    });
    return run;
  }

  async #attempt<A>(
    target: ReadTarget,
    decide: (view: LedgerView) => Decision<A>,
  ): Promise<{ answer: A; token?: number }> {
    for (let attempt = 1; ; attempt++) {
      const stored = await this.#primitive.read(target);
      const { answer, changes } = decide(stored.view);
      const write = writeChangesOf(stored, changes);
      if (write === undefined) return { answer };
      const reply = await this.#primitive.write(target, stored.version, write);
      if (reply.written) return reply.token === undefined ? { answer } : { answer, token: reply.token };
      if (attempt === maxAttempts) {
        throw new StoreUnavailableError(
          `${this.#storeName}: the run ledger of "${target.job}" changed under each of ${maxAttempts} attempts to write it.`,
        );
      }
    }
  }
}

/** The changes as the store writes them, or `undefined` when there is nothing to write. */
function writeChangesOf(stored: StoredView, changes: LedgerChanges): WriteChanges | undefined {
  const { view } = stored;
  const put = changes.put.map((entry) => ({ entry, before: view.entries.get(entry.scheduledAt) }));
  let drop: LedgerEntry[] = [];
  if (changes.trim !== undefined && stored.history !== undefined) {
    const after = new Map(put.map(({ entry }) => [entry.scheduledAt, entry]));
    const added = put.filter(({ before }) => before === undefined).length;
    // The oldest read, with what the decision adds (which may be older still).
    const oldest = [
      ...stored.history.oldest.map((at) => after.get(at) ?? view.entries.get(at)!),
      ...put.filter(({ before }) => before === undefined).map(({ entry }) => entry),
    ];
    const dropped = new Set(trimmed(oldest, view.now, changes.trim, stored.history.total + added));
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
