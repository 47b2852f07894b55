import type {
  ClaimRequest,
  LedgerSkipReason,
  LedgerTrim,
  OccurrenceLease,
  OccurrenceState,
  RunRecord,
  RunResult,
} from './contract.ts';
import { ledgerDefaultRetentionMs, ledgerMessages, ledgerTrimOf } from './defaults.ts';

/**
 * The run ledger's decisions, written once as pure functions over plain data: what a claim gets,
 * what a renewal and a finish do, what is trimmed. A store reads a {@link LedgerView} atomically on
 * its own clock, calls a decision, and writes its {@link LedgerChanges} atomically (only where what
 * it read is unchanged, for a store shared by processes); it decides nothing itself.
 */

/** An occurrence as the ledger keeps it: its public record, and what the ledger needs beyond it. */
export interface LedgerEntry extends RunRecord {
  /** The lease of a `running` occurrence: its owner and expiry (store clock). */
  readonly owner?: string;
  readonly expiresAt?: number;
  /** Set by a `cancel-other` fire: the next renewal is refused. */
  readonly cancelled?: boolean;
  /** The deadline of a `queued` occurrence (store clock). */
  readonly queuedUntil?: number;
}

/** What a decision reads of one job's ledger on one lease key, in one atomic read. */
export interface LedgerView {
  /** The store's clock, epoch ms. */
  readonly now: number;
  /** The key's live lease (a plain lock's or an occurrence's), absent when the key is free. */
  readonly lease?: { readonly owner: string; readonly expiresAt: number };
  /**
   * The occurrence of this job that the key's lease went to last, absent when it went to another
   * job or to a plain lock since (whether that lease is still live or not).
   */
  readonly current?: number;
  /** True while the job is paused fleet-wide. */
  readonly paused: boolean;
  /**
   * The job's entries by occurrence: at least the one asked about, `current`'s, every `queued`
   * one, and, for a claim with a `concurrency` above 1, every `running` one (a decision looks at no
   * other).
   */
  readonly entries: ReadonlyMap<number, LedgerEntry>;
}

/**
 * True when an occurrence runs under a lease of its own rather than the key's: with `allow-all`,
 * a `concurrency` above 1 (a claim's, or the lease it granted), or a forced manual run's lease.
 */
export function holdsOwnLease(
  options: Pick<ClaimRequest, 'overlap' | 'concurrency'> & Pick<OccurrenceLease, 'ownLease'>,
): boolean {
  return options.overlap === 'allow-all' || (options.concurrency ?? 1) > 1 || options.ownLease === true;
}

/**
 * True when a claim runs up to its `concurrency` (> 1) occurrences at once; `allow-all` has no
 * bound. Its view then holds every running occurrence of the job.
 */
export function boundedClaim(request: Pick<ClaimRequest, 'overlap' | 'concurrency'>): boolean {
  return (request.concurrency ?? 1) > 1 && request.overlap !== 'allow-all';
}

/** The lease a claim granted for occurrence `scheduledAt`, with `token`. */
export function leaseOf(request: ClaimRequest, scheduledAt: number, token: number): OccurrenceLease {
  const { job, key, owner, overlap, concurrency = 1 } = request;
  const lease: OccurrenceLease = { job, key, scheduledAt, owner, token, overlap };
  // A forced manual run is granted its own occurrence, under a lease of its own.
  if (request.manual === true && request.force === true) return { ...lease, ownLease: true };
  return concurrency > 1 ? { ...lease, concurrency } : lease;
}

/** The trim a decision asks for: see {@link LedgerTrim}. */
export interface ResolvedTrim {
  readonly retentionMs: number;
  readonly recordLimit: number;
  readonly keepWithinMs: number;
}

/**
 * What a decision writes, in one atomic write:
 * - `put`: entries written whole. A store keeps an index of the `queued` ones (the queue, oldest
 *   first), one of the `running` ones (or reads them by state) and one of the `success` ones, from
 *   what it puts.
 * - `grant`: a new fencing token for the key, written into the entry put for `scheduledAt`; and,
 *   with `holdsKey`, the key's lease taken by `owner` for `ttlMs`, `scheduledAt` becoming `current`.
 * - `renewKey`: the key's lease pushed to now + `ttlMs` (it is `owner`'s: the view said so).
 * - `releaseKey`: the key's lease freed (it is `owner`'s), which wakes the key's waiters, and
 *   `current` cleared when it is `scheduledAt`.
 * - `trim`: records dropped as {@link trimmed} says, after the rest is written.
 */
export interface LedgerChanges {
  readonly put: readonly LedgerEntry[];
  readonly grant?: {
    readonly scheduledAt: number;
    readonly owner: string;
    readonly ttlMs: number;
    readonly holdsKey: boolean;
  };
  readonly renewKey?: { readonly owner: string; readonly ttlMs: number };
  readonly releaseKey?: { readonly owner: string; readonly scheduledAt: number };
  readonly trim?: ResolvedTrim;
}

/** A claim's answer before the store has issued the token of a grant. */
export type ClaimDecision =
  | { readonly status: 'granted'; readonly scheduledAt: number; readonly takeover: boolean }
  | { readonly status: 'wait'; readonly retryAt: number; readonly runningElsewhere: boolean }
  | { readonly status: 'skipped'; readonly reason: LedgerSkipReason | 'already-done' };

/** A decision: its answer, and what the store writes for it. */
export interface Decision<A> {
  readonly answer: A;
  readonly changes: LedgerChanges;
}

/** A finish's answer: recorded, or refused because a later claim holds `latestToken`. */
export type FinishDecision =
  | { readonly stale: false }
  | { readonly stale: true; readonly latestToken: number };

export function isFinal(state: OccurrenceState): boolean {
  return state === 'success' || state === 'failure' || state === 'skipped';
}

/**
 * Whether a backfill leaves the occurrence alone: it has a record, and the record says it ran, runs,
 * waits, or was skipped by its overlap policy when its schedule fired it. An occurrence skipped as
 * `missed` or `paused`, one a backfill tried and its overlap policy skipped, or one without a
 * record, is run.
 */
export function isDone(record: Pick<RunRecord, 'outcome' | 'reason' | 'trigger'>): boolean {
  return record.outcome !== 'skipped' || (record.reason === 'overlap' && record.trigger !== 'backfill');
}

/**
 * True when a claim's answer is `already-done` once the record of its occurrence is final, whatever
 * else the view holds: every claim but a manual run and a backfill.
 */
export function finalRecordDecides(request: Pick<ClaimRequest, 'manual' | 'trigger'>): boolean {
  return request.manual !== true && request.trigger !== 'backfill';
}

/**
 * True when the claim's answer follows from the record of its occurrence and the store's clock
 * alone, whatever else the view holds: for a claim that {@link finalRecordDecides}, an occurrence
 * not due yet (`wait`), a final record (`already-done`), or one running under a lease still renewed
 * (`wait`, running elsewhere). Such a claim decides on a view of that record alone
 * (`ReadTarget.recordFirst`); any other reads the whole view.
 */
export function recordDecides(
  request: Pick<ClaimRequest, 'manual' | 'trigger' | 'scheduledAt'>,
  entry: LedgerEntry | undefined,
  now: number,
): boolean {
  return answerOfRecord(request, entry, now) !== undefined;
}

/** The answer of a claim that its record decides alone (see {@link recordDecides}), else `undefined`. */
function answerOfRecord(
  request: Pick<ClaimRequest, 'manual' | 'trigger' | 'scheduledAt'>,
  entry: LedgerEntry | undefined,
  now: number,
): ClaimDecision | undefined {
  if (!finalRecordDecides(request)) return undefined;
  if (now < request.scheduledAt)
    return { status: 'wait', retryAt: request.scheduledAt, runningElsewhere: false };
  if (entry === undefined) return undefined;
  if (isFinal(entry.outcome)) return { status: 'skipped', reason: 'already-done' };
  if (entry.outcome === 'running' && entry.expiresAt! > now)
    return { status: 'wait', retryAt: entry.expiresAt!, runningElsewhere: true };
  return undefined;
}

/** The public record of an entry: without the lease and queue fields. */
export function publicRecord(entry: LedgerEntry): RunRecord {
  const {
    owner: _owner,
    expiresAt: _expiresAt,
    cancelled: _cancelled,
    queuedUntil: _until,
    ...record
  } = entry;
  return record;
}

/** The entries a decision is building: the view's, with what it has put over them. */
class Draft {
  readonly #view: LedgerView;
  readonly #put = new Map<number, LedgerEntry>();
  grant?: LedgerChanges['grant'];
  renewKey?: LedgerChanges['renewKey'];
  releaseKey?: LedgerChanges['releaseKey'];
  trim?: ResolvedTrim;

  constructor(view: LedgerView) {
    this.#view = view;
  }

  get(at: number): LedgerEntry | undefined {
    return this.#put.get(at) ?? this.#view.entries.get(at);
  }

  put(entry: LedgerEntry): void {
    this.#put.set(entry.scheduledAt, entry);
  }

  /** The queued occurrences, oldest first. */
  queue(): number[] {
    return this.#inState('queued');
  }

  /** The running occurrences (of those the view holds), oldest first. */
  running(): number[] {
    return this.#inState('running');
  }

  #inState(state: OccurrenceState): number[] {
    const ats = new Set([...this.#view.entries.keys(), ...this.#put.keys()]);
    return [...ats].filter((at) => this.get(at)!.outcome === state).sort((a, b) => a - b);
  }

  done<A>(answer: A): Decision<A> {
    const changes: { -readonly [K in keyof LedgerChanges]: LedgerChanges[K] } = {
      put: [...this.#put.values()],
    };
    if (this.grant !== undefined) changes.grant = this.grant;
    if (this.renewKey !== undefined) changes.renewKey = this.renewKey;
    if (this.releaseKey !== undefined) changes.releaseKey = this.releaseKey;
    if (this.trim !== undefined) changes.trim = this.trim;
    return { answer, changes };
  }
}

/** The trim a request (or a finish's options) asks for, checked. */
export function resolvedTrim(options: LedgerTrim): ResolvedTrim {
  return { ...ledgerTrimOf(options), retentionMs: options.retentionMs ?? ledgerDefaultRetentionMs };
}

/**
 * What a fire of `request.scheduledAt` does now (see `ClaimResult`): the lease goes to the oldest
 * occurrence of the job still allowed to start (an abandoned one, the head of the queue, or the
 * requested one); an occurrence that cannot run waits, is queued or is skipped as its overlap
 * policy says; one past its deadline is skipped as `missed`.
 */
export function decideClaim(view: LedgerView, request: ClaimRequest): Decision<ClaimDecision> {
  const draft = new Draft(view);
  const { now } = view;
  const { scheduledAt: at, overlap } = request;
  const entry = view.entries.get(at);
  const perOccurrence = holdsOwnLease(request);
  const limit = overlap === 'allow-all' ? Number.POSITIVE_INFINITY : (request.concurrency ?? 1);
  const keyLease = view.lease;
  const bounded = boundedClaim(request);
  // What the record decides alone, first: a store may have read it alone (`recordDecides`).
  const alone = answerOfRecord(request, entry, now);
  if (alone !== undefined) return draft.done(alone);
  if (request.manual === true) {
    // Forced: beside whatever runs, under a lease of its own. Under `skip`, a manual run that
    // cannot start now leaves no record: nothing was due.
    if (request.force === true) return draft.done(grant(draft, view, request, at, false, false));
    const held = bounded ? liveRunning(draft, view).length >= limit : keyLease !== undefined && limit === 1;
    if (overlap === 'skip' && held && (entry === undefined || isFinal(entry.outcome)))
      return draft.done({ status: 'skipped', reason: 'overlap' });
  } else if (now < at) return draft.done({ status: 'wait', retryAt: at, runningElsewhere: false });
  // A manual run is a new run, even of an instant some other run had (two within a millisecond);
  // a backfill runs an occurrence that was not done.
  if (
    entry !== undefined &&
    isFinal(entry.outcome) &&
    (finalRecordDecides(request) || (request.trigger === 'backfill' && isDone(entry)))
  ) {
    return draft.done({ status: 'skipped', reason: 'already-done' });
  }
  const running = entry?.outcome === 'running';
  // A paused job's running occurrence runs on; any other is skipped (but a manual one: its
  // caller decided).
  if (!running && view.paused && request.manual !== true)
    return draft.done(skip(draft, view, request, 'paused'));
  // A running occurrence is judged by its own lease: still renewed, to be taken over, or given up.
  if (running && entry!.expiresAt! > now) {
    return draft.done({ status: 'wait', retryAt: entry!.expiresAt!, runningElsewhere: true });
  }
  const window = request.startingDeadlineMs;
  if (running && (entry!.cancelled === true || now > entry!.expiresAt! + window)) {
    giveUp(draft, view, entry!);
    return draft.done({ status: 'skipped', reason: 'already-done' });
  }
  const deadline = at + window;
  // Past its deadline: too late to start. A manual run has none until it waits in the queue.
  const late = now > deadline && (request.manual !== true || entry?.outcome === 'queued');
  if (bounded) return draft.done(claimBounded(draft, view, request, limit, deadline, late));

  // Another occurrence (or a plain lock) holds the lease this one needs.
  if (!perOccurrence && keyLease !== undefined) {
    // Abandoned, but the key is taken: it waits for the key (a takeover still needs the lease).
    if (running) return draft.done({ status: 'wait', retryAt: keyLease.expiresAt, runningElsewhere: true });
    if (late) return draft.done(skip(draft, view, request, 'missed'));
    if (entry?.outcome !== 'queued' && !enqueue(draft, view, request, deadline)) {
      return draft.done(skip(draft, view, request, 'overlap'));
    }
    const holder = view.current === undefined ? undefined : draft.get(view.current);
    if (overlap === 'cancel-other' && holder?.outcome === 'running')
      draft.put({ ...holder, cancelled: true });
    return draft.done({ status: 'wait', retryAt: keyLease.expiresAt, runningElsewhere: false });
  }
  if ((entry === undefined || entry.outcome === 'queued') && late) {
    return draft.done(skip(draft, view, request, 'missed'));
  }

  // The lease is free: it goes to the oldest occurrence still allowed to start.
  let pick = at;
  let takeover = running;
  if (!perOccurrence) {
    const current = view.current;
    if (current !== undefined && current !== at) {
      const abandoned = draft.get(current);
      if (abandoned?.outcome === 'running') {
        if (abandoned.cancelled !== true && now <= abandoned.expiresAt! + window) {
          if (current < pick) [pick, takeover] = [current, true];
        } else {
          giveUp(draft, view, abandoned);
        }
      }
    }
    // Queued occurrences past their deadline are skipped as missed; the oldest left may go first.
    for (const queuedAt of draft.queue()) {
      const queued = draft.get(queuedAt)!;
      if (now <= queued.queuedUntil!) {
        if (queuedAt !== at && queuedAt < pick) [pick, takeover] = [queuedAt, false];
        break;
      }
      const { queuedUntil: _until, ...rest } = queued;
      draft.put({ ...rest, outcome: 'skipped', reason: 'missed', endedAt: now });
    }
  }
  const granted = grant(draft, view, request, pick, takeover);
  // Its own occurrence meets the one it was handed as it would meet any running occurrence.
  if (pick !== at && entry === undefined && !enqueue(draft, view, request, deadline)) {
    skip(draft, view, request, 'overlap');
  }
  return draft.done(granted);
}

/**
 * Whether the holder of `lease` keeps it for `ttlMs` more: not when its occurrence is no longer
 * running under its lease, nor, under the key's lease, when that lease is not its own. A cancelled
 * occurrence (`cancel-other`) is refused and its lease freed.
 */
export function decideRenew(view: LedgerView, lease: OccurrenceLease, ttlMs: number): Decision<boolean> {
  const draft = new Draft(view);
  const { now } = view;
  const entry = view.entries.get(lease.scheduledAt);
  if (entry?.outcome !== 'running' || entry.owner !== lease.owner || !(entry.expiresAt! > now)) {
    return draft.done(false);
  }
  if (entry.cancelled === true) {
    releaseOccurrence(draft, view, lease, entry);
    return draft.done(false);
  }
  if (!holdsOwnLease(lease)) {
    if (view.lease?.owner !== lease.owner) return draft.done(false);
    draft.renewKey = { owner: lease.owner, ttlMs };
  }
  draft.put({ ...entry, expiresAt: now + ttlMs });
  return draft.done(true);
}

/**
 * A run's end: the lease is released, then the outcome recorded, unless a later claim of the
 * occurrence holds a higher token (`stale`: only the release is written). A cancelled occurrence
 * that failed is recorded as cancelled.
 */
export function decideFinish(
  view: LedgerView,
  lease: OccurrenceLease,
  result: RunResult,
  trim: ResolvedTrim,
): Decision<FinishDecision> {
  const draft = new Draft(view);
  const entry = view.entries.get(lease.scheduledAt);
  if (entry !== undefined) releaseOccurrence(draft, view, lease, entry);
  const latest = entry?.token;
  if (latest !== undefined && latest > lease.token) return draft.done({ stale: true, latestToken: latest });
  const cancelled = entry?.cancelled === true && result.outcome === 'failure';
  end(
    draft,
    view,
    lease.job,
    lease.scheduledAt,
    cancelled ? { outcome: 'failure', error: ledgerMessages.cancelled } : result,
  );
  draft.trim = trim;
  return draft.done({ stale: false });
}

/**
 * The occurrences a trim drops of a job's records (`scheduledAt` and state of each): those older
 * than the retention, never a running one; then the oldest past the record limit, but none younger
 * than `keepWithinMs` nor a running one (a running one among the oldest counts, and stays).
 * `records` may be the oldest of `total` records only, as long as it holds every one the trim
 * could drop: those past the retention, and the oldest `total - recordLimit`.
 */
export function trimmed(
  records: Iterable<{ readonly scheduledAt: number; readonly outcome: OccurrenceState }>,
  now: number,
  trim: ResolvedTrim,
  total?: number,
): number[] {
  const drop: number[] = [];
  const kept: Array<{ scheduledAt: number; outcome: OccurrenceState }> = [];
  for (const record of records) {
    if (record.scheduledAt < now - trim.retentionMs && record.outcome !== 'running')
      drop.push(record.scheduledAt);
    else kept.push(record);
  }
  let excess = (total === undefined ? kept.length : total - drop.length) - trim.recordLimit;
  if (excess <= 0) return drop;
  kept.sort((a, b) => a.scheduledAt - b.scheduledAt);
  for (const record of kept) {
    if (excess === 0 || record.scheduledAt >= now - trim.keepWithinMs) break;
    excess--;
    if (record.outcome !== 'running') drop.push(record.scheduledAt);
  }
  return drop;
}

function grant(
  draft: Draft,
  view: LedgerView,
  request: ClaimRequest,
  at: number,
  takeover: boolean,
  holdsKey = !holdsOwnLease(request),
): ClaimDecision {
  const { owner, ttlMs } = request;
  draft.grant = { scheduledAt: at, owner, ttlMs, holdsKey };
  const found = draft.get(at);
  // A final record is run afresh (a manual run at its instant, a backfill of a missed one).
  const previous = found !== undefined && isFinal(found.outcome) ? undefined : found;
  const takeovers = (previous?.takeovers ?? 0) + (takeover ? 1 : 0);
  draft.put({
    job: request.job,
    scheduledAt: at,
    outcome: 'running',
    instance: request.instance,
    startedAt: view.now,
    ...(takeovers > 0 ? { takeovers } : {}),
    // How it started: as its record says, else (a new one, or a skipped one a backfill runs) as
    // the request does when it is its own.
    ...(previous !== undefined ? triggerOf(previous) : at === request.scheduledAt ? triggerOf(request) : {}),
    owner,
    expiresAt: view.now + ttlMs,
  });
  return { status: 'granted', scheduledAt: at, takeover };
}

/** The running occurrences whose lease is live, oldest first (a cancelled one runs until its holder learns it). */
function liveRunning(draft: Draft, view: LedgerView): LedgerEntry[] {
  return draft
    .running()
    .map((at) => draft.get(at)!)
    .filter((entry) => entry.expiresAt! > view.now);
}

/**
 * A claim of a job that runs up to `limit` (> 1) occurrences at once, each under its own lease:
 * the running ones whose lease is live fill the slots; one abandoned within its window is taken
 * over first (past it, it is given up; a cancelled one is not taken over). Below the limit the oldest occurrence waiting (abandoned,
 * queued or the requested one) is granted; at the limit the overlap policy decides, as it does for
 * one running occurrence: the fire is skipped, or queued until a slot is free, and `cancel-other`
 * cancels the oldest running one. The caller has judged the requested occurrence itself: not due,
 * done, paused, running elsewhere or past its window are answered before.
 */
function claimBounded(
  draft: Draft,
  view: LedgerView,
  request: ClaimRequest,
  limit: number,
  deadline: number,
  late: boolean,
): ClaimDecision {
  const { now } = view;
  const { scheduledAt: at, overlap, startingDeadlineMs: window } = request;
  const entry = draft.get(at);
  const live: LedgerEntry[] = [];
  const abandoned: number[] = [];
  for (const runningAt of draft.running()) {
    const running = draft.get(runningAt)!;
    if (running.expiresAt! > now) live.push(running);
    else if (now > running.expiresAt! + window) giveUp(draft, view, running);
    // A cancelled one frees its slot, and its holder has the window to report how it ended.
    else if (running.cancelled !== true) abandoned.push(runningAt);
  }
  const requestedRuns = entry?.outcome === 'running';
  if (!requestedRuns && late) return skip(draft, view, request, 'missed');
  // Another fire at the limit: the policy says whether it waits for a slot, and what it frees.
  const atLimit = (running: readonly LedgerEntry[]): ClaimDecision | undefined => {
    if (entry?.outcome !== 'queued') {
      if (!enqueue(draft, view, request, deadline)) return skip(draft, view, request, 'overlap');
      const oldest = running.find((other) => other.cancelled !== true);
      if (overlap === 'cancel-other' && oldest !== undefined) draft.put({ ...oldest, cancelled: true });
    }
    return undefined;
  };
  const firstExpiry = () => Math.min(...live.map((other) => other.expiresAt!));
  if (live.length >= limit) {
    // Abandoned, but every slot is taken: it waits for one (a takeover still needs a slot).
    if (requestedRuns) return { status: 'wait', retryAt: firstExpiry(), runningElsewhere: true };
    return atLimit(live) ?? { status: 'wait', retryAt: firstExpiry(), runningElsewhere: false };
  }
  // A free slot: it goes to the oldest occurrence waiting for one.
  let pick = at;
  let takeover = requestedRuns;
  if (abandoned.length > 0 && abandoned[0]! < pick) [pick, takeover] = [abandoned[0]!, true];
  for (const queuedAt of draft.queue()) {
    const queued = draft.get(queuedAt)!;
    if (now <= queued.queuedUntil!) {
      if (queuedAt < pick) [pick, takeover] = [queuedAt, false];
      break;
    }
    const { queuedUntil: _until, ...rest } = queued;
    draft.put({ ...rest, outcome: 'skipped', reason: 'missed', endedAt: now });
  }
  const granted = grant(draft, view, request, pick, takeover);
  if (pick !== at && entry === undefined) {
    // Its own occurrence waits for the next slot: queued whatever the policy while one is left.
    if (live.length + 1 < limit) enqueue(draft, view, { ...request, overlap: 'buffer-all' }, deadline);
    else atLimit([...live, draft.get(pick)!]);
  }
  return granted;
}

/** Queues the requested occurrence unless its policy says skip; false when it is to be skipped. */
function enqueue(draft: Draft, view: LedgerView, request: ClaimRequest, deadline: number): boolean {
  const { overlap, scheduledAt } = request;
  if (overlap === 'skip') return false;
  if (overlap === 'buffer-one') {
    const waiting = draft.queue().some((at) => at !== scheduledAt && view.now <= draft.get(at)!.queuedUntil!);
    if (waiting) return false;
  }
  draft.put({
    job: request.job,
    scheduledAt,
    outcome: 'queued',
    instance: request.instance,
    ...triggerOf(request),
    queuedUntil: deadline,
  });
  return true;
}

/** The fields that say how a run started, of a request or an entry (none for a scheduled fire's). */
function triggerOf(
  from: Pick<ClaimRequest, 'trigger' | 'actor' | 'triggerReason'>,
): Pick<LedgerEntry, 'trigger' | 'actor' | 'triggerReason'> {
  const fields: { -readonly [K in 'trigger' | 'actor' | 'triggerReason']?: LedgerEntry[K] } = {};
  if (from.trigger !== undefined && from.trigger !== 'schedule') fields.trigger = from.trigger;
  if (from.actor !== undefined) fields.actor = from.actor;
  if (from.triggerReason !== undefined) fields.triggerReason = from.triggerReason;
  return fields;
}

function skip(
  draft: Draft,
  view: LedgerView,
  request: ClaimRequest,
  reason: LedgerSkipReason,
): ClaimDecision {
  draft.put({
    job: request.job,
    scheduledAt: request.scheduledAt,
    outcome: 'skipped',
    instance: request.instance,
    reason,
    ...triggerOf(request),
    endedAt: view.now,
  });
  draft.trim = resolvedTrim(request);
  return { status: 'skipped', reason };
}

/** An occurrence nobody may take over any more (cancelled, or abandoned past its window) fails. */
function giveUp(draft: Draft, view: LedgerView, entry: LedgerEntry): void {
  const error = entry.cancelled === true ? ledgerMessages.cancelled : ledgerMessages.abandoned;
  end(draft, view, entry.job, entry.scheduledAt, { outcome: 'failure', error });
}

/** Its final state, without the lease, an earlier error or skip reason. */
function end(draft: Draft, view: LedgerView, job: string, at: number, result: RunResult): void {
  const previous = draft.get(at);
  const {
    error: _error,
    reason: _reason,
    ...rest
  } = previous === undefined ? { job, scheduledAt: at } : publicRecord(previous);
  draft.put({
    ...rest,
    outcome: result.outcome,
    endedAt: view.now,
    ...(result.error === undefined ? {} : { error: result.error }),
  });
}

/** Frees the occurrence's lease when it is the holder's, and the key's lease with it. */
function releaseOccurrence(draft: Draft, view: LedgerView, lease: OccurrenceLease, entry: LedgerEntry): void {
  if (entry.owner !== lease.owner) return;
  draft.put({ ...entry, expiresAt: view.now });
  if (holdsOwnLease(lease)) return;
  if (view.lease?.owner === lease.owner) {
    draft.releaseKey = { owner: lease.owner, scheduledAt: lease.scheduledAt };
  }
}
