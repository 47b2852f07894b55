/**
 * What a process knows of a job's ledger after its own write (src/ledger/known-views.ts), on plain
 * data: the view it knows, the version it expects, the time a decision on it is made at, which
 * operations may be decided on it, and how much of it is kept.
 */
import { describe, expect, it } from 'vitest';
import { decideClaim, decideFinish, type LedgerView, resolvedTrim } from '../../src/ledger/decide.ts';
import type { ReadTarget, StoredView, WriteChanges } from '../../src/ledger/engine.ts';
import { historyCovers, KnownViews, type VersionParts } from '../../src/ledger/known-views.ts';

const at = 1_700_000_000_000;
const trim = resolvedTrim({});
/** A scheduled fire's claim (its record may answer it alone, see `ReadTarget.recordFirst`). */
const claimTarget = (scheduledAt: number): ReadTarget => ({
  operation: 'claimOccurrence',
  key: 'report',
  job: 'report',
  occurrences: [scheduledAt],
  recordFirst: true,
  trim,
});
const finishTarget = (scheduledAt: number): ReadTarget => ({
  operation: 'finishOccurrence',
  key: 'report',
  job: 'report',
  occurrences: [scheduledAt],
  trim,
});
const request = (scheduledAt: number) => ({
  job: 'report',
  key: 'report',
  scheduledAt,
  owner: 'owner-a',
  instance: 'web-1',
  ttlMs: 10_000,
  overlap: 'skip' as const,
  startingDeadlineMs: 60_000,
});

/** A fake monotonic clock and a version that lists its parts (readable in a failed assertion). */
function setUp() {
  let clock = 0;
  const versionOf = (parts: VersionParts, occurrences: readonly number[]) =>
    [parts.counter, parts.owner, parts.keyToken, ...occurrences.map((o) => parts.records.get(o) ?? '')].join(
      '|',
    );
  const known = new KnownViews({ versionOf, clock: () => clock, limit: 3 });
  return { known, advance: (ms: number) => (clock += ms) };
}

/** A read of a job without records: the key free, counter 4. */
function emptyRead(now: number): StoredView {
  const view: LedgerView = { now, paused: false, entries: new Map() };
  const parts: VersionParts = { counter: '4', owner: '', keyToken: '', records: new Map() };
  return { view, version: 'read', parts, history: { total: 0, oldest: [] } };
}

/** The changes of a decision as the engine hands them to a store (each put with what it replaces). */
function writeChanges(stored: StoredView, changes: ReturnType<typeof decideClaim>['changes']): WriteChanges {
  return {
    put: changes.put.map((entry) => ({ entry, before: stored.view.entries.get(entry.scheduledAt) })),
    drop: [],
    current: stored.view.current,
    ...(changes.grant ? { grant: changes.grant } : {}),
    ...(changes.releaseKey ? { releaseKey: changes.releaseKey } : {}),
  };
}

describe('KnownViews', () => {
  it("knows the view its grant left: the key's lease, the current occurrence, the record with its token, the counter moved on", () => {
    const read = emptyRead(at + 5);
    const { changes } = decideClaim(read.view, request(at));
    /** Views that know the grant of `at`, written at the store time `now` with `record`. */
    const granted = (now: number, record: string) => {
      const views = setUp();
      views.known.remember(claimTarget(at), read, writeChanges(read, changes), {
        token: 77,
        now,
        records: new Map([[at, record]]),
        counter: '5',
        keyToken: '77',
      });
      return views;
    };
    const { known, advance } = granted(at + 6, '{"token":"77",...}');
    advance(250);
    const guess = known.stored(finishTarget(at))!;
    // The store's time of the write, plus the process's own time since, less a slack for drift.
    expect(guess.decidedAt).toBe(at + 6 + 250 - 1);
    expect(guess.stored.view).toMatchObject({
      now: at + 255,
      lease: { owner: 'owner-a', expiresAt: at + 6 + 10_000 },
      current: at,
    });
    expect(guess.stored.view.entries.get(at)).toMatchObject({
      outcome: 'running',
      token: 77,
      owner: 'owner-a',
    });
    expect(guess.stored.version).toBe(`5|owner-a|77|{"token":"77",...}`);
    expect(guess.stored.history).toEqual({ total: 1, oldest: [at] });
    // No time has passed: the decision is made at the write's time, never before it.
    expect(granted(at + 6, '{}').known.stored(finishTarget(at))!.decidedAt).toBe(at + 6);
    // A store time with its microseconds: 0.9 ms into the write's ms and 0.2 ms later, the
    // decision is made in the next ms (a claim due then is due), not a ms or two before it.
    const { known: precise, advance: later } = granted(at + 6.9, '{}');
    later(0.2);
    const next = precise.stored(finishTarget(at))!;
    expect(next.decidedAt).toBe(at + 7);
    expect(next.stored.view.now).toBe(at + 7);
    expect(next.stored.view.lease).toEqual({ owner: 'owner-a', expiresAt: at + 6 + 10_000 });
  });

  it('decides the finish and then the next claim on what it knows, and keeps only what a decision looks at', () => {
    const { known, advance } = setUp();
    const read = emptyRead(at + 5);
    const claim = decideClaim(read.view, request(at));
    known.remember(claimTarget(at), read, writeChanges(read, claim.changes), {
      token: 77,
      now: at + 6,
      records: new Map([[at, 'granted']]),
      counter: '5',
      keyToken: '77',
    });
    const lease = {
      job: 'report',
      key: 'report',
      scheduledAt: at,
      owner: 'owner-a',
      token: 77,
      overlap: 'skip' as const,
    };
    const onFinish = known.stored(finishTarget(at))!;
    const finish = decideFinish(onFinish.stored.view, lease, { outcome: 'success' }, trim);
    expect(finish.answer).toEqual({ stale: false });
    known.remember(
      finishTarget(at),
      onFinish.stored,
      writeChanges(onFinish.stored, finish.changes),
      { now: at + 40, records: new Map([[at, 'finished']]), counter: '6', keyToken: '77' },
      onFinish.covers,
    );
    advance(1_000);
    const next = known.stored(claimTarget(at + 1_000))!;
    expect(next.stored.view.lease).toBeUndefined();
    expect(next.stored.view.current).toBeUndefined();
    // The finished record stays while a trim may drop it (it is among the oldest), else it goes.
    expect([...next.stored.view.entries.keys()]).toEqual([at]);
    expect(next.stored.version).toBe('6||77|');
    expect(decideClaim(next.stored.view, request(at + 1_000)).answer).toMatchObject({ status: 'granted' });
    // 1,000 ms after a write at +40, the store's time is taken to be +1,039 (0.15 ms less, for
    // the clocks' drift): a fire's claim of an instant up to 100 ms later is decided at that
    // instant, which the store checks it has reached; one further off is left to a read, and so
    // is a manual run's (its instant is this process's estimate of now), and a finish.
    expect(next.decidedAt).toBe(at + 1_039);
    expect(known.stored(claimTarget(at + 1_045))!.decidedAt).toBe(at + 1_045);
    expect(known.stored(claimTarget(at + 1_045))!.stored.view.now).toBe(at + 1_045);
    expect(known.stored(claimTarget(at + 1_200))!.decidedAt).toBe(at + 1_039);
    expect(known.stored({ ...claimTarget(at + 1_045), recordFirst: false })!.decidedAt).toBe(at + 1_039);
    expect(known.stored(finishTarget(at + 1_045))!.decidedAt).toBe(at + 1_039);
    // The slack grows with the time since the reply, up to a ms: 100 s later, +101,039.
    advance(100_000);
    expect(known.stored(finishTarget(at))!.decidedAt).toBe(at + 101_039);
  });

  it('is not used for an operation its read did not cover, nor after it is forgotten; it keeps the latest jobs', () => {
    const { known } = setUp();
    // A finish's read has neither the queue nor the pause: a claim cannot be decided on it.
    const read = emptyRead(at);
    known.remember(
      finishTarget(at),
      read,
      { put: [], drop: [], current: undefined },
      { now: at, records: new Map(), counter: '5', keyToken: '77' },
    );
    expect(known.stored(claimTarget(at))).toBeUndefined();
    // Nor after a write decided on that view: it still holds no queue nor pause.
    const onFinish = known.stored(finishTarget(at))!;
    known.remember(
      finishTarget(at),
      onFinish.stored,
      { put: [], drop: [], current: undefined },
      { now: at, records: new Map(), counter: '6', keyToken: '77' },
      onFinish.covers,
    );
    expect(known.stored(claimTarget(at))).toBeUndefined();
    expect(known.stored(finishTarget(at))).toBeDefined();
    // Nor a claim with a concurrency above 1 on a view without every running occurrence.
    known.remember(
      claimTarget(at),
      read,
      { put: [], drop: [], current: undefined },
      { now: at, records: new Map(), counter: '5', keyToken: '77' },
    );
    expect(known.stored({ ...claimTarget(at), running: true })).toBeUndefined();
    expect(known.stored(claimTarget(at))).toBeDefined();
    known.forget(claimTarget(at));
    expect(known.stored(claimTarget(at))).toBeUndefined();
    // A view of the records alone is never remembered.
    known.remember(
      claimTarget(at),
      { view: read.view, recordOnly: true },
      { put: [], drop: [], current: undefined },
      { now: at, records: new Map(), counter: '5', keyToken: '77' },
    );
    expect(known.size).toBe(0);
    for (const job of ['a', 'b', 'c', 'd']) {
      known.remember(
        { ...claimTarget(at), job },
        read,
        { put: [], drop: [], current: undefined },
        { now: at, records: new Map(), counter: '5', keyToken: '77' },
      );
    }
    expect(known.size).toBe(3);
    expect(known.stored({ ...claimTarget(at), job: 'a' })).toBeUndefined();
    expect(known.stored({ ...claimTarget(at), job: 'd' })).toBeDefined();
  });

  it("keeps no view with more queued or running occurrences than the store's read returns", () => {
    const versionOf = () => 'v';
    const known = new KnownViews({ versionOf, entryLimit: 2 });
    const queued = (scheduledAt: number) => ({ job: 'report', scheduledAt, outcome: 'queued' as const });
    const withQueue = (count: number): StoredView => {
      const ats = Array.from({ length: count }, (_, index) => at + index * 1_000);
      return {
        view: { now: at, paused: false, entries: new Map(ats.map((each) => [each, queued(each)])) },
        version: 'read',
        parts: { counter: '4', owner: '', keyToken: '', records: new Map() },
      };
    };
    const unchanged = { put: [], drop: [], current: undefined };
    // Every record put, as the store wrote it.
    const wrote = {
      now: at,
      records: new Map([at, at + 5_000, at + 6_000].map((each) => [each, '{}'])),
      counter: '5',
      keyToken: '77',
    };
    const { trim: _, ...target } = claimTarget(at);
    const adding = (...ats: number[]) => ({
      put: ats.map((each) => ({ entry: queued(each), before: undefined })),
      drop: [],
      current: undefined,
    });
    known.remember(target, withQueue(1), unchanged, wrote);
    expect(known.stored(target)).toBeDefined();
    // Read at the limit: the store may hold more than were read, even once one leaves the queue.
    const full = withQueue(2);
    const before = full.view.entries.get(at)!;
    const dequeue = {
      put: [{ entry: { ...before, outcome: 'running' as const }, before }],
      drop: [],
      current: undefined,
    };
    known.remember(target, full, dequeue, wrote);
    expect(known.stored(target)).toBeUndefined();
    // Up to the limit after the write, from a read under it: all there is.
    known.remember(target, withQueue(1), adding(at + 5_000), wrote);
    expect(known.stored(target)).toBeDefined();
    // Past it: a read would return fewer than the view holds.
    known.remember(target, withQueue(1), adding(at + 5_000, at + 6_000), wrote);
    expect(known.stored(target)).toBeUndefined();
  });

  it('holds little per job: ten of the oldest records at most, with only what a trim looks at', () => {
    const { known } = setUp();
    const done = (scheduledAt: number) => ({
      job: 'report',
      scheduledAt,
      outcome: 'success' as const,
      instance: 'web-1',
      startedAt: scheduledAt,
      endedAt: scheduledAt + 5,
      token: 9,
    });
    const ats = Array.from({ length: 15 }, (_, index) => at + index * 1_000);
    const read: StoredView = {
      view: { now: at + 20_000, paused: false, entries: new Map(ats.map((each) => [each, done(each)])) },
      version: 'read',
      parts: {
        counter: '15',
        owner: '',
        keyToken: '',
        records: new Map(ats.map((each) => [each, JSON.stringify(done(each))])),
      },
      history: { total: 15, oldest: ats },
    };
    known.remember(
      claimTarget(at + 20_000),
      read,
      { put: [], drop: [], current: undefined },
      {
        now: at + 20_000,
        records: new Map(),
        counter: '16',
        keyToken: '77',
      },
    );
    // Fifteen records, all read: the view keeps the ten oldest, as a trim sees them.
    const guess = known.stored({ ...claimTarget(at + 21_000), trim: { ...trim, recordLimit: 20 } })!;
    expect(guess.stored.history).toEqual({ total: 15, oldest: ats.slice(0, 10) });
    expect([...guess.stored.view.entries.values()]).toEqual(
      ats.slice(0, 10).map((each) => ({ job: 'report', scheduledAt: each, outcome: 'success' })),
    );
    expect(guess.stored.parts.records.size).toBe(0);
  });

  it('trims on what it knows only while it holds every record the trim may drop', () => {
    const day = 86_400_000;
    const limits = { retentionMs: 7 * day, recordLimit: 100, keepWithinMs: 60_000 };
    // All the records.
    expect(historyCovers({ total: 3, oldest: [1, 2, 3] }, at, limits)).toBe(true);
    expect(historyCovers(undefined, at, limits)).toBe(false);
    // The oldest few of many: enough past the limit's excess (with room for one more record), and
    // the newest of them inside the retention (so none after it is past it).
    expect(historyCovers({ total: 101, oldest: [at - 3, at - 2, at - 1] }, at, limits)).toBe(true);
    expect(historyCovers({ total: 101, oldest: [at - 3, at - 2] }, at, limits)).toBe(false);
    expect(historyCovers({ total: 50, oldest: [at - 8 * day] }, at, limits)).toBe(false);
    expect(historyCovers({ total: 50, oldest: [] }, at, limits)).toBe(false);
  });
  it('presumes a job it knows nothing of new, for the first claim of a scheduled fire only, at the latest store time seen', () => {
    let clock = 0;
    const versionOf = (parts: VersionParts, occurrences: readonly number[]) =>
      [
        parts.counter,
        parts.owner,
        parts.keyToken,
        ...occurrences.map((o) => parts.records.get(o) ?? ''),
      ].join('|');
    const known = new KnownViews({ versionOf, clock: () => clock, presumeNew: true, limit: 2 });
    // No store time seen yet: nothing to decide at.
    expect(known.stored(claimTarget(at))).toBeUndefined();
    known.sawStoreTime(at - 5_000.5);
    // An earlier time seen later (a reply handled late) does not move it back.
    clock += 1_000;
    known.sawStoreTime(at - 4_500);
    clock += 1_000;
    // Not for a finish, a renewal, a manual run or a backfill (no record-first claim).
    expect(known.stored(finishTarget(at))).toBeUndefined();
    expect(known.stored({ ...claimTarget(at), recordFirst: false })).toBeUndefined();
    const guess = known.stored(claimTarget(at))!;
    // The store's time seen plus the 2 s since, less the drift slack: the instant is 3 s later.
    expect(guess.decidedAt).toBe(at - 3_001);
    expect(guess.stored.view).toEqual({ now: at - 3_001, paused: false, entries: new Map() });
    expect(guess.stored.version).toBe('|||');
    expect(guess.stored.history).toEqual({ total: 0, oldest: [] });
    expect(guess.covers).toEqual({ claims: true, running: true });
    // The empty view grants the claim (the store checks that the view is still what it presumed).
    expect(decideClaim(guess.stored.view, { ...request(at), scheduledAt: at - 3_001 }).answer.status).toBe(
      'granted',
    );
    // Once per job: refused, the claim reads; the next claims of the job read too.
    expect(known.stored(claimTarget(at))).toBeUndefined();
    // A fire's claim sent within 100 ms of its instant by the time seen is decided at the instant.
    known.sawStoreTime(at - 40);
    expect(known.stored({ ...claimTarget(at), job: 'other' })!.decidedAt).toBe(at);
    // A reading of the store's clock for its own sake replaces a later time (the clock stepped back).
    known.sawStoreTime(at - 10_000, true);
    expect(known.stored({ ...claimTarget(at), job: 'fourth' })!.decidedAt).toBe(at - 10_001);
    // At most `limit` jobs are remembered as presumed: the oldest is presumed again.
    expect(known.stored({ ...claimTarget(at), job: 'third' })).toBeDefined();
    expect(known.stored({ ...claimTarget(at), job: 'fourth' })).toBeUndefined();
    expect(known.stored(claimTarget(at))).toBeDefined();
  });

  it('presumes nothing unless asked to', () => {
    const { known } = setUp();
    known.sawStoreTime(at);
    expect(known.stored(claimTarget(at))).toBeUndefined();
  });
});
