import { isStaleTokenError, StaleTokenError } from '../strategies/lock/errors.ts';
import type { LockStore } from '../strategies/lock/store.ts';
import {
  type ConformanceFactory,
  type ConformanceTestFunctions,
  skipTest,
  sleep,
  testFunctionsOf,
  uniqueNamespace,
} from '../testing/conformance-namespace.ts';
import type {
  ClaimRequest,
  ClaimResult,
  OccurrenceLease,
  OverlapPolicy,
  PausableRunLedger,
  RunRecord,
} from './contract.ts';

const second = 1_000;
const minute = 60 * second;

/** A store field that came back missing, `undefined` or `null` means "none". */
function normalized(record: RunRecord): RunRecord {
  return Object.fromEntries(
    Object.entries(record).filter(([, value]) => value !== undefined && value !== null),
  ) as unknown as RunRecord;
}

/**
 * Registers a test suite (vitest, jest or node:test) that checks `factory`'s store against the {@link RunLedger} contract,
 * the occurrence lifecycle of the scheduler: a due occurrence is granted once with a fencing token
 * and watched by every other fire of it; a finished one is never run again; an early one waits; one
 * past its starting deadline is skipped as `missed`; each overlap policy (`skip`, `buffer-one`,
 * `buffer-all`, `cancel-other`, `allow-all`) decides what a fire does while another occurrence
 * runs, and queued occurrences run oldest first; an occurrence whose holder stopped renewing is
 * taken over with a higher token, and the old holder's writes are refused with `StaleTokenError`;
 * history comes newest first; retention drops old records; jobs and keys are independent, and a
 * plain `acquire` on the key excludes claims; a paused job's fires are skipped and recorded as
 * `paused` until it is resumed, manual runs excepted. Pass your test framework's `describe`, `it` and `expect` as `options.test` (or rely on its globals).
 *
 * Occurrences are placed relative to this machine's clock, so the store's clock must be within a few
 * seconds of it. Some tests wait for short leases (a few hundred ms) to expire.
 *
 * @example
 * describeRunLedgerConformance('PostgresLockStore', (prefix) => new PostgresLockStore(pool, { prefix }));
 */
export function describeRunLedgerConformance(
  name: string,
  factory: ConformanceFactory<PausableRunLedger & LockStore>,
  options: { test?: ConformanceTestFunctions } = {},
): void {
  const { describe, it, expect } = testFunctionsOf(options.test, 'describeRunLedgerConformance');
  async function setUp() {
    const namespace = uniqueNamespace();
    const ledger = await factory(namespace);
    let owners = 0;
    const job = `${namespace}job`;
    const key = `${namespace}key`;
    /** A claim of `scheduledAt` by a new owner, with the given overrides. */
    const claim = (scheduledAt: number, overrides: Partial<ClaimRequest> = {}): Promise<ClaimResult> =>
      ledger.claimOccurrence({
        job,
        key,
        scheduledAt,
        owner: `conformance-owner-${++owners}`,
        instance: overrides.instance ?? 'conformance:1',
        ttlMs: 10 * second,
        overlap: 'skip',
        startingDeadlineMs: minute,
        ...overrides,
      });
    const granted = async (
      scheduledAt: number,
      overrides: Partial<ClaimRequest> = {},
    ): Promise<OccurrenceLease> => {
      const result = await claim(scheduledAt, overrides);
      if (result.status !== 'granted') {
        throw new Error(`expected a grant of ${scheduledAt}, got ${JSON.stringify(result)}`);
      }
      return result.lease;
    };
    const history = async (options: { key?: string; limit?: number; job?: string } = {}) =>
      (await ledger.runHistory(options.job ?? job, { key: options.key ?? key, limit: options.limit })).map(
        normalized,
      );
    const record = async (scheduledAt: number): Promise<RunRecord | undefined> =>
      (await history({ limit: 100 })).find((entry) => entry.scheduledAt === scheduledAt);
    return { ledger, job, key, namespace, claim, granted, history, record };
  }

  /** Whole seconds in the past, as cron instants are. */
  const past = (ms: number) => Math.floor((Date.now() - ms) / second) * second;

  const fenceError = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (error: unknown) => error,
    );

  describe(`RunLedger conformance: ${name}`, () => {
    it('grants a due occurrence once, with a token, and records it as running', async () => {
      const { claim, granted, record, key, job } = await setUp();
      const at = past(2 * second);
      const lease = await granted(at);
      expect(lease).toMatchObject({ job, key, scheduledAt: at, overlap: 'skip' });
      expect(lease.token).toBeGreaterThan(0);
      const watcher = await claim(at);
      expect(watcher.status).toBe('wait');
      if (watcher.status !== 'wait') return;
      expect(watcher.runningElsewhere).toBe(true);
      // The watcher is told to look again when the lease would expire.
      expect(Math.abs(watcher.retryAt - (Date.now() + 10 * second))).toBeLessThan(5 * second);
      const running = await record(at);
      expect(running).toMatchObject({ job, scheduledAt: at, outcome: 'running', token: lease.token });
      expect(running?.instance).toBe('conformance:1');
      expect(Math.abs(running!.startedAt! - Date.now())).toBeLessThan(5 * second);
    });

    it('lets an occurrence that is not due yet wait for its instant, recording nothing', async () => {
      const { claim, history } = await setUp();
      const at = Math.floor(Date.now() / second) * second + 30 * second;
      expect(await claim(at)).toEqual({ status: 'wait', retryAt: at, runningElsewhere: false });
      expect(await history()).toEqual([]);
    });

    it('never runs a finished occurrence again, and frees the lease on finish', async () => {
      const { ledger, claim, granted, record, key } = await setUp();
      const at = past(10 * second);
      const lease = await granted(at);
      await ledger.finishOccurrence(lease, { outcome: 'success' });
      expect(await claim(at)).toEqual({ status: 'skipped', reason: 'already-done' });
      expect(await ledger.lastCompleted(lease.job, { key })).toBe(at);
      const done = await record(at);
      expect(done).toMatchObject({ outcome: 'success', token: lease.token });
      expect(done!.endedAt!).toBeGreaterThanOrEqual(done!.startedAt!);
      // Whole milliseconds, as Date.now() gives them, whatever precision the store's clock has.
      expect(Number.isInteger(done!.startedAt), `startedAt ${done!.startedAt}`).toBe(true);
      expect(Number.isInteger(done!.endedAt), `endedAt ${done!.endedAt}`).toBe(true);
      const next = await granted(at + second);
      expect(next.token).toBeGreaterThan(lease.token);
      if (ledger.inspect) expect((await ledger.inspect(key))?.owner).toBe(next.owner);
    });

    it('keeps a failure final too, with its error, and not as completed', async () => {
      const { ledger, claim, granted, record, key, job } = await setUp();
      const at = past(10 * second);
      const lease = await granted(at);
      await ledger.finishOccurrence(lease, { outcome: 'failure', error: 'database unreachable' });
      expect(await claim(at)).toEqual({ status: 'skipped', reason: 'already-done' });
      expect(await ledger.lastCompleted(job, { key })).toBeUndefined();
      expect(await record(at)).toMatchObject({ outcome: 'failure', error: 'database unreachable' });
    });

    it('skips, and records, an occurrence past its starting deadline', async () => {
      const { claim, record } = await setUp();
      const at = past(2 * minute);
      expect(await claim(at, { startingDeadlineMs: minute })).toEqual({
        status: 'skipped',
        reason: 'missed',
      });
      expect(await record(at)).toMatchObject({
        outcome: 'skipped',
        reason: 'missed',
        instance: 'conformance:1',
      });
      expect(await claim(at, { startingDeadlineMs: 5 * minute })).toEqual({
        status: 'skipped',
        reason: 'already-done',
      });
    });

    it('skip: a fire while another occurrence runs is recorded as skipped (overlap), fleet-wide', async () => {
      const { claim, granted, record } = await setUp();
      const first = past(5 * second);
      await granted(first);
      expect(await claim(first + second, { instance: 'other:2' })).toEqual({
        status: 'skipped',
        reason: 'overlap',
      });
      expect(await record(first + second)).toMatchObject({
        outcome: 'skipped',
        reason: 'overlap',
        instance: 'other:2',
      });
      expect(await claim(first + second)).toEqual({ status: 'skipped', reason: 'already-done' });
    });

    it('buffer-all: fires wait behind the running occurrence and run one at a time, oldest first', async () => {
      const { ledger, claim, granted, record } = await setUp();
      const overlap: OverlapPolicy = 'buffer-all';
      const first = past(5 * second);
      const lease = await granted(first, { overlap });
      for (const at of [first + 2 * second, first + second]) {
        const result = await claim(at, { overlap });
        expect(result).toMatchObject({ status: 'wait', runningElsewhere: false });
        expect(await record(at)).toMatchObject({ outcome: 'queued' });
      }
      await ledger.finishOccurrence(lease, { outcome: 'success' });
      // The newest fire asks first, and is handed the oldest queued occurrence.
      const handed = await claim(first + 2 * second, { overlap });
      expect(handed).toMatchObject({
        status: 'granted',
        takeover: false,
        lease: { scheduledAt: first + second },
      });
      expect(await claim(first + 2 * second, { overlap })).toMatchObject({
        status: 'wait',
        runningElsewhere: false,
      });
      if (handed.status !== 'granted') return;
      await ledger.finishOccurrence(handed.lease, { outcome: 'success' });
      const last = await granted(first + 2 * second, { overlap });
      expect(last.token).toBeGreaterThan(handed.lease.token);
      expect(await claim(first + second, { overlap })).toEqual({ status: 'skipped', reason: 'already-done' });
    });

    it('buffer-one: one fire waits behind the running occurrence, a further one is skipped', async () => {
      const { claim, granted, record } = await setUp();
      const overlap: OverlapPolicy = 'buffer-one';
      const first = past(5 * second);
      await granted(first, { overlap });
      expect(await claim(first + second, { overlap })).toMatchObject({ status: 'wait' });
      expect(await claim(first + 2 * second, { overlap })).toEqual({ status: 'skipped', reason: 'overlap' });
      // Asking again does not lose the queued place.
      expect(await claim(first + second, { overlap })).toMatchObject({ status: 'wait' });
      expect(await record(first + second)).toMatchObject({ outcome: 'queued' });
      expect(await record(first + 2 * second)).toMatchObject({ outcome: 'skipped', reason: 'overlap' });
    });

    it('a queued occurrence that cannot start before its deadline is skipped as missed', async () => {
      const { ledger, claim, granted, record } = await setUp();
      const overlap: OverlapPolicy = 'buffer-all';
      const first = past(5 * second);
      const lease = await granted(first, { overlap, startingDeadlineMs: minute });
      const queued = first + second;
      expect(await claim(queued, { overlap, startingDeadlineMs: 6 * second })).toMatchObject({
        status: 'wait',
      });
      await sleep(2_100);
      await ledger.finishOccurrence(lease, { outcome: 'success' });
      expect(await claim(queued, { overlap, startingDeadlineMs: 6 * second })).toEqual({
        status: 'skipped',
        reason: 'missed',
      });
      expect(await record(queued)).toMatchObject({ outcome: 'skipped', reason: 'missed' });
    });

    it('cancel-other: the running occurrence loses its lease at its next renewal, then the new one runs', async () => {
      const { ledger, claim, granted, record } = await setUp();
      const overlap: OverlapPolicy = 'cancel-other';
      const first = past(5 * second);
      const running = await granted(first, { overlap });
      expect(await claim(first + second, { overlap })).toMatchObject({
        status: 'wait',
        runningElsewhere: false,
      });
      expect(await ledger.renewOccurrence(running, 10 * second)).toBe(false);
      const next = await granted(first + second, { overlap });
      expect(next.token).toBeGreaterThan(running.token);
      // The cancelled holder still reports its end: recorded as a failure saying why.
      await ledger.finishOccurrence(running, { outcome: 'failure', error: 'lease lost' });
      expect(await record(first)).toMatchObject({ outcome: 'failure' });
      expect((await record(first))!.error).toMatch(/cancel/);
      expect(await ledger.renewOccurrence(next, 10 * second)).toBe(true);
    });

    it("wakes the key's onRelease listeners when a finish (or a cancelled holder's renewal) frees the lease", async (context) => {
      const first = await setUp();
      if (!first.ledger.onRelease) return skipTest(context, 'the store has no onRelease()');
      /** Subscribes to the key of `setup`; `called(n)` waits up to 5 s for the n-th call after the first. */
      const listen = async ({ ledger, key }: Awaited<ReturnType<typeof setUp>>) => {
        let calls = 0;
        const unsubscribe = ledger.onRelease!(key, () => {
          calls++;
        });
        const called = async (count: number, what: string) => {
          for (const startedAt = Date.now(); calls < count + 1; await sleep(5)) {
            if (Date.now() - startedAt > 5 * second) {
              throw new Error(`onRelease("${key}"): no call on ${what} within 5 s`);
            }
          }
        };
        await called(0, 'subscribing'); // the first call says the subscription is in place
        return { called, unsubscribe };
      };
      const at = past(5 * second);
      const finished = await listen(first);
      try {
        const running = await first.granted(at, { overlap: 'buffer-one' });
        expect(await first.claim(at + second, { overlap: 'buffer-one' })).toMatchObject({ status: 'wait' });
        await first.ledger.finishOccurrence(running, { outcome: 'success' });
        await finished.called(1, 'finishOccurrence');
      } finally {
        finished.unsubscribe();
      }
      const other = await setUp();
      const renewed = await listen(other);
      try {
        const cancelled = await other.granted(at, { overlap: 'cancel-other' });
        expect(await other.claim(at + second, { overlap: 'cancel-other' })).toMatchObject({ status: 'wait' });
        expect(await other.ledger.renewOccurrence(cancelled, 10 * second)).toBe(false);
        await renewed.called(1, "a cancelled holder's renewal");
      } finally {
        renewed.unsubscribe();
      }
    });

    it('allow-all: occurrences run concurrently, each under its own lease and token', async () => {
      const { ledger, claim, granted, record } = await setUp();
      const overlap: OverlapPolicy = 'allow-all';
      const first = past(5 * second);
      const a = await granted(first, { overlap });
      const b = await granted(first + second, { overlap });
      expect(b.token).not.toBe(a.token);
      expect(await claim(first, { overlap })).toMatchObject({ status: 'wait', runningElsewhere: true });
      expect(await ledger.renewOccurrence(a, 10 * second)).toBe(true);
      await ledger.finishOccurrence(b, { outcome: 'success' });
      await ledger.finishOccurrence(a, { outcome: 'success' });
      expect(await record(first)).toMatchObject({ outcome: 'success', token: a.token });
      expect(await record(first + second)).toMatchObject({ outcome: 'success', token: b.token });
    });

    it('concurrency 2: two occurrences run at once, a third is refused (skip), and a finish frees a slot', async () => {
      const { ledger, claim, granted, record, key } = await setUp();
      const bounded = { concurrency: 2 };
      const first = past(5 * second);
      const a = await granted(first, bounded);
      const b = await granted(first + second, bounded);
      expect(b.token).toBeGreaterThan(a.token);
      expect(a).toMatchObject({ concurrency: 2 });
      // Each under its own lease: the key's lease is not taken.
      if (ledger.inspect) expect(await ledger.inspect(key)).toBeUndefined();
      expect(await claim(first + 2 * second, { ...bounded, instance: 'other:2' })).toEqual({
        status: 'skipped',
        reason: 'overlap',
      });
      expect(await record(first + 2 * second)).toMatchObject({ outcome: 'skipped', reason: 'overlap' });
      expect(await claim(first, bounded)).toMatchObject({ status: 'wait', runningElsewhere: true });
      expect(await ledger.renewOccurrence(a, 10 * second)).toBe(true);
      await ledger.finishOccurrence(a, { outcome: 'success' });
      const c = await granted(first + 3 * second, bounded);
      expect(c.token).toBeGreaterThan(b.token);
      await ledger.finishOccurrence(b, { outcome: 'success' });
      await ledger.finishOccurrence(c, { outcome: 'failure', error: 'boom' });
      expect(await record(first + second)).toMatchObject({ outcome: 'success', token: b.token });
      expect(await record(first + 3 * second)).toMatchObject({ outcome: 'failure', token: c.token });
    });

    it('concurrency 2 with buffer-one, buffer-all and cancel-other: the third waits for a slot', async () => {
      for (const overlap of ['buffer-one', 'buffer-all', 'cancel-other'] as const) {
        const { ledger, claim, granted, record } = await setUp();
        const bounded = { concurrency: 2, overlap };
        const first = past(5 * second);
        const a = await granted(first, bounded);
        const b = await granted(first + second, bounded);
        const third = first + 2 * second;
        expect(await claim(third, bounded)).toMatchObject({ status: 'wait', runningElsewhere: false });
        expect(await record(third)).toMatchObject({ outcome: 'queued' });
        expect(await claim(third, bounded)).toMatchObject({ status: 'wait', runningElsewhere: false });
        if (overlap === 'cancel-other') {
          // The oldest running one is cancelled: its holder learns it at its next renewal.
          expect(await ledger.renewOccurrence(a, 10 * second)).toBe(false);
          expect(await ledger.renewOccurrence(b, 10 * second)).toBe(true);
        } else {
          await ledger.finishOccurrence(a, { outcome: 'success' });
        }
        const c = await granted(third, bounded);
        expect(c.token).toBeGreaterThan(b.token);
        await ledger.finishOccurrence(b, { outcome: 'success' });
        await ledger.finishOccurrence(c, { outcome: 'success' });
        if (overlap === 'cancel-other') {
          await ledger.finishOccurrence(a, { outcome: 'failure', error: 'lease lost' });
          expect((await record(first))!.error).toMatch(/cancel/);
        }
        expect(await record(third)).toMatchObject({ outcome: 'success', token: c.token });
      }
    });

    it('concurrency 2: an abandoned occurrence is taken over in its slot; a manual run needs a free slot', async () => {
      const { ledger, claim, granted } = await setUp();
      const bounded = { concurrency: 2 };
      const first = past(5 * second);
      const dead = await granted(first, { ...bounded, ttlMs: 300 });
      const live = await granted(first + second, bounded);
      await sleep(500);
      // Its slot is taken over before a newer occurrence gets it.
      const handed = await claim(first + 2 * second, { ...bounded, instance: 'other:2' });
      expect(handed).toMatchObject({ status: 'granted', takeover: true, lease: { scheduledAt: first } });
      if (handed.status !== 'granted') return;
      expect(handed.lease.token).toBeGreaterThan(live.token);
      const stale = await fenceError(ledger.finishOccurrence(dead, { outcome: 'success' }));
      expect(isStaleTokenError(stale), String(stale)).toBe(true);
      // Two run: a manual run is refused; a finish lets it run.
      const manual = { ...bounded, manual: true, scheduledAt: Date.now() };
      expect(await claim(manual.scheduledAt, manual)).toEqual({ status: 'skipped', reason: 'overlap' });
      await ledger.finishOccurrence(live, { outcome: 'success' });
      expect(await claim(manual.scheduledAt, manual)).toMatchObject({ status: 'granted' });
      await ledger.finishOccurrence(handed.lease, { outcome: 'success' });
    });

    it('takes over an occurrence whose holder stopped renewing, with a higher token, and fences the old holder out', async () => {
      const { ledger, claim, granted, record } = await setUp();
      const at = past(2 * second);
      const dead = await granted(at, { ttlMs: 300 });
      expect(await claim(at, { instance: 'other:2' })).toMatchObject({
        status: 'wait',
        runningElsewhere: true,
      });
      await sleep(450);
      const result = await claim(at, { instance: 'other:2' });
      expect(result).toMatchObject({ status: 'granted', takeover: true, lease: { scheduledAt: at } });
      if (result.status !== 'granted') return;
      expect(result.lease.token).toBeGreaterThan(dead.token);
      expect(await ledger.renewOccurrence(dead, 10 * second)).toBe(false);
      const error = await fenceError(ledger.finishOccurrence(dead, { outcome: 'success' }));
      expect(isStaleTokenError(error), String(error)).toBe(true);
      expect(error).toBeInstanceOf(StaleTokenError);
      expect((error as StaleTokenError).token).toBe(dead.token);
      expect(await record(at)).toMatchObject({
        outcome: 'running',
        token: result.lease.token,
        instance: 'other:2',
      });
      await ledger.finishOccurrence(result.lease, { outcome: 'success' });
      expect(await record(at)).toMatchObject({ outcome: 'success', token: result.lease.token, takeovers: 1 });
    });

    it('hands an abandoned occurrence to the next fire of a later one, before that one', async () => {
      const { claim, granted, record } = await setUp();
      const at = past(5 * second);
      await granted(at, { ttlMs: 300 });
      await sleep(450);
      const result = await claim(at + second);
      expect(result).toMatchObject({ status: 'granted', takeover: true, lease: { scheduledAt: at } });
      // With skip, the later occurrence met a running one.
      expect(await record(at + second)).toMatchObject({ outcome: 'skipped', reason: 'overlap' });
    });

    it('gives up an abandoned occurrence once its lease has been expired longer than the deadline', async () => {
      const { claim, granted, record } = await setUp();
      const at = past(2 * second);
      await granted(at, { ttlMs: 200 });
      await sleep(1_500);
      expect(await claim(at, { startingDeadlineMs: 500 })).toEqual({
        status: 'skipped',
        reason: 'already-done',
      });
      const abandoned = await record(at);
      expect(abandoned).toMatchObject({ outcome: 'failure' });
      expect(abandoned!.error).toMatch(/abandoned/);
    });

    it('a running occurrence whose key was taken meanwhile is neither skipped nor queued, and is taken over once the key is free', async () => {
      const { ledger, claim, granted, record, key } = await setUp();
      const at = past(2 * second);
      const dead = await granted(at, { ttlMs: 200 });
      await sleep(300);
      // Its lease expired; a plain lock takes the key before anyone claims the occurrence again.
      expect(await ledger.acquire(key, 'plain-owner', 400)).toBeGreaterThan(0);
      for (const overlap of ['skip', 'buffer-all'] as const) {
        expect(await claim(at, { overlap })).toMatchObject({ status: 'wait', runningElsewhere: true });
      }
      expect(await record(at)).toMatchObject({ outcome: 'running', token: dead.token });
      await ledger.release(key, 'plain-owner');
      const result = await claim(at);
      expect(result).toMatchObject({ status: 'granted', takeover: true, lease: { scheduledAt: at } });
    });

    it('cancel-other: a fire of the cancelled occurrence neither requeues it nor cancels its successor', async () => {
      const { ledger, claim, granted, record } = await setUp();
      const overlap: OverlapPolicy = 'cancel-other';
      const first = past(5 * second);
      const cancelled = await granted(first, { overlap });
      expect(await claim(first + second, { overlap })).toMatchObject({ status: 'wait' });
      expect(await ledger.renewOccurrence(cancelled, 10 * second)).toBe(false);
      const successor = await granted(first + second, { overlap });
      // Another instance's fire of the cancelled occurrence comes late.
      expect((await claim(first, { overlap })).status).not.toBe('granted');
      expect(await ledger.renewOccurrence(successor, 10 * second)).toBe(true);
      expect((await record(first))?.outcome).not.toBe('queued');
    });

    it('a renewal keeps the lease: no takeover while the holder renews', async () => {
      const { ledger, claim, granted } = await setUp();
      const at = past(2 * second);
      const lease = await granted(at, { ttlMs: 400 });
      await sleep(250);
      expect(await ledger.renewOccurrence(lease, 400)).toBe(true);
      await sleep(250);
      expect(await claim(at)).toMatchObject({ status: 'wait', runningElsewhere: true });
    });

    it('manual runs: granted while no occurrence holds the lease, skipped (overlap) while one does', async () => {
      const { ledger, claim, granted, record } = await setUp();
      const at = past(2 * second);
      const manual = await granted(at, { manual: true });
      await ledger.finishOccurrence(manual, { outcome: 'success' });
      expect(await record(at)).toMatchObject({ outcome: 'success', token: manual.token });
      const running = await granted(at + second);
      expect(await claim(at + 1_500, { manual: true })).toEqual({ status: 'skipped', reason: 'overlap' });
      expect(running.token).toBeGreaterThan(manual.token);
    });

    it('records how a run started: trigger, actor and reason of manual and backfill runs', async () => {
      const { ledger, claim, granted, record } = await setUp();
      const at = past(2 * second);
      const scheduled = await granted(at - 3 * second, { trigger: 'schedule' });
      await ledger.finishOccurrence(scheduled, { outcome: 'success' });
      const manual = await granted(at, {
        manual: true,
        trigger: 'manual',
        actor: 'ops@host-1',
        triggerReason: 'rerun ✓',
      });
      await ledger.finishOccurrence(manual, { outcome: 'failure', error: 'boom' });
      expect(await record(at)).toMatchObject({
        outcome: 'failure',
        trigger: 'manual',
        actor: 'ops@host-1',
        triggerReason: 'rerun ✓',
      });
      // A fire's record carries no trigger: it reads as schedule.
      expect((await record(at - 3 * second))?.trigger).toBeUndefined();
      // A backfill runs an occurrence skipped as missed, and leaves a done one alone.
      const missed = past(4 * minute);
      expect(await claim(missed, { startingDeadlineMs: second })).toEqual({
        status: 'skipped',
        reason: 'missed',
      });
      const backfill = { trigger: 'backfill', actor: 'ops@host-1', startingDeadlineMs: 5 * minute } as const;
      const rerun = await granted(missed, backfill);
      await ledger.finishOccurrence(rerun, { outcome: 'success' });
      expect(await record(missed)).toMatchObject({
        outcome: 'success',
        trigger: 'backfill',
        actor: 'ops@host-1',
      });
      expect((await record(missed))?.reason).toBeUndefined();
      expect(await claim(missed, backfill)).toEqual({ status: 'skipped', reason: 'already-done' });
    });

    it('a forced manual run is granted beside a running occurrence, under a lease of its own', async () => {
      const { ledger, claim, granted, record } = await setUp();
      const at = past(2 * second);
      const running = await granted(at);
      const forced = await granted(at + second, { manual: true, force: true, trigger: 'manual' });
      expect(forced.ownLease).toBe(true);
      expect(forced.token).toBeGreaterThan(running.token);
      // Each renews and finishes its own: the key's lease stays the running occurrence's.
      expect(await ledger.renewOccurrence(forced, 10 * second)).toBe(true);
      expect(await ledger.renewOccurrence(running, 10 * second)).toBe(true);
      await ledger.finishOccurrence(forced, { outcome: 'success' });
      expect(await record(at + second)).toMatchObject({ outcome: 'success', trigger: 'manual' });
      expect(await claim(at + 2 * second, { manual: true })).toEqual({
        status: 'skipped',
        reason: 'overlap',
      });
      await ledger.finishOccurrence(running, { outcome: 'success' });
      expect((await claim(at + 3 * second, { manual: true })).status).toBe('granted');
    });

    it('a plain acquire of the key and a claim exclude each other', async () => {
      const { ledger, claim, granted, key } = await setUp();
      const at = past(2 * second);
      expect(await ledger.acquire(key, 'plain-owner', 10 * second)).toBeGreaterThan(0);
      expect(await claim(at)).toEqual({ status: 'skipped', reason: 'overlap' });
      await ledger.release(key, 'plain-owner');
      await granted(at + second);
      expect(await ledger.acquire(key, 'plain-owner', 10 * second)).toBeUndefined();
    });

    it('two jobs sharing a key exclude each other; records stay apart', async () => {
      const { ledger, granted, namespace, key, history } = await setUp();
      const at = past(2 * second);
      await granted(at);
      const other = await ledger.claimOccurrence({
        job: `${namespace}other`,
        key,
        scheduledAt: at,
        owner: 'other-owner',
        instance: 'conformance:1',
        ttlMs: 10 * second,
        overlap: 'skip',
        startingDeadlineMs: minute,
      });
      expect(other).toEqual({ status: 'skipped', reason: 'overlap' });
      expect(await history({ job: `${namespace}other` })).toHaveLength(1);
      expect(await history()).toHaveLength(1);
    });

    it('refuses a finish with a token lower than the occurrence claim, with StaleTokenError', async () => {
      const { ledger, granted } = await setUp();
      const at = past(2 * second);
      const lease = await granted(at);
      const error = await fenceError(
        ledger.finishOccurrence({ ...lease, token: lease.token - 1 }, { outcome: 'success' }),
      );
      expect(isStaleTokenError(error), String(error)).toBe(true);
      expect((error as StaleTokenError).highestToken).toBe(lease.token);
    });

    it('returns history newest first, at most limit, and keeps jobs apart', async () => {
      const { ledger, granted, history, namespace, key } = await setUp();
      const first = past(minute);
      for (let index = 0; index < 4; index++) {
        const lease = await granted(first + index * second, { startingDeadlineMs: 5 * minute });
        await ledger.finishOccurrence(lease, {
          outcome: index % 2 ? 'failure' : 'success',
          error: index % 2 ? 'boom' : undefined,
        });
      }
      const all = await history();
      expect(all.map((entry) => entry.scheduledAt)).toEqual(
        [3, 2, 1, 0].map((index) => first + index * second),
      );
      expect(await history({ limit: 2 })).toHaveLength(2);
      expect(await ledger.lastCompleted(`${namespace}job`, { key })).toBe(first + 2 * second);
      expect(await history({ job: `${namespace}unknown` })).toEqual([]);
      expect(await ledger.lastCompleted(`${namespace}unknown`, { key })).toBeUndefined();
    });

    it('pause: every claim of the job is skipped and recorded as paused; resume: granted again', async () => {
      const { ledger, claim, granted, record, job, key } = await setUp();
      const at = past(3 * second);
      await ledger.pauseJob(job, { key, by: 'conformance:ops', reason: 'migration' });
      expect(await claim(at)).toEqual({ status: 'skipped', reason: 'paused' });
      expect(await record(at)).toMatchObject({
        job,
        scheduledAt: at,
        outcome: 'skipped',
        reason: 'paused',
        instance: 'conformance:1',
      });
      // Recorded, so a later fire of the same occurrence finds it done.
      expect(await claim(at, { instance: 'conformance:2' })).toEqual({
        status: 'skipped',
        reason: 'already-done',
      });
      expect(await claim(at + second, { overlap: 'buffer-all' })).toEqual({
        status: 'skipped',
        reason: 'paused',
      });
      await ledger.resumeJob(job, { key });
      expect(await ledger.pauseOf(job, { key })).toBeUndefined();
      const lease = await granted(at + 2 * second);
      await ledger.finishOccurrence(lease, { outcome: 'success' });
      expect(await record(at + 2 * second)).toMatchObject({ outcome: 'success', token: lease.token });
    });

    it('pauseOf reports who paused the job, when (store clock) and why; a new pause replaces it', async () => {
      const { ledger, job, key } = await setUp();
      expect(await ledger.pauseOf(job, { key })).toBeUndefined();
      await ledger.pauseJob(job, { key, by: 'conformance:ops', reason: 'migration' });
      const pause = await ledger.pauseOf(job, { key });
      expect(pause).toMatchObject({ by: 'conformance:ops', reason: 'migration' });
      expect(Math.abs(pause!.pausedAt - Date.now())).toBeLessThan(5 * second);
      await ledger.pauseJob(job, { key, by: 'conformance:other' });
      const again = await ledger.pauseOf(job, { key });
      expect(again?.by).toBe('conformance:other');
      expect(again?.reason).toBeUndefined();
      await ledger.resumeJob(job, { key });
      await ledger.resumeJob(job, { key }); // resuming a job that is not paused is fine
      expect(await ledger.pauseOf(job, { key })).toBeUndefined();
    });

    it('a pause keeps jobs apart: another job on the same key, or the job on another key, runs', async () => {
      const { ledger, claim, granted, job, key, namespace } = await setUp();
      const at = past(2 * second);
      await ledger.pauseJob(job, { key, by: 'conformance:ops' });
      const other = `${namespace}other`;
      const otherLease = await granted(at, { job: other });
      await ledger.finishOccurrence(otherLease, { outcome: 'success' });
      expect(await ledger.pauseOf(other, { key })).toBeUndefined();
      expect(await ledger.pauseOf(job, { key: `${namespace}other-key` })).toBeUndefined();
      await granted(at, { key: `${namespace}other-key` });
      expect(await claim(at)).toEqual({ status: 'skipped', reason: 'paused' });
    });

    it('a paused job still grants manual claims, and lets a running occurrence finish', async () => {
      const { ledger, claim, granted, record, job, key } = await setUp();
      const at = past(2 * second);
      const running = await granted(at);
      await ledger.pauseJob(job, { key, by: 'conformance:ops' });
      // Its other fires watch it run, as without a pause; it finishes as usual.
      expect(await claim(at)).toMatchObject({ status: 'wait', runningElsewhere: true });
      await ledger.finishOccurrence(running, { outcome: 'success' });
      expect(await record(at)).toMatchObject({ outcome: 'success' });
      const manual = await granted(at + second, { manual: true });
      expect(manual.token).toBeGreaterThan(running.token);
      await ledger.finishOccurrence(manual, { outcome: 'success' });
      expect(await record(at + second)).toMatchObject({ outcome: 'success', token: manual.token });
    });

    it('drops records older than the retention when an occurrence finishes', async () => {
      const { ledger, granted, history } = await setUp();
      const old = past(2 * 60 * minute);
      const oldLease = await granted(old, { startingDeadlineMs: 3 * 60 * minute });
      await ledger.finishOccurrence(oldLease, { outcome: 'success' });
      const recent = await granted(past(2 * second));
      await ledger.finishOccurrence(recent, { outcome: 'success' }, { retentionMs: 60 * minute });
      expect((await history()).map((entry) => entry.scheduledAt)).toEqual([recent.scheduledAt]);
    });

    it('trims the oldest records past recordLimit, but never a running one among them', async () => {
      const { ledger, granted, history } = await setUp();
      const trim = { recordLimit: 3, keepWithinMs: minute };
      const claim = { startingDeadlineMs: 60 * minute, overlap: 'allow-all' as const };
      // Computed once: `past()` rounds to a second, and a second may turn between two calls.
      const running = past(50 * minute);
      await granted(running, claim); // runs on
      const old = [40, 30, 20, 10].map((ago) => past(ago * minute));
      for (const at of old) {
        await ledger.finishOccurrence(await granted(at, claim), { outcome: 'success' }, trim);
      }
      // Five records, limit 3: the two oldest go, but the running one stays.
      expect((await history({ limit: 100 })).map((entry) => entry.scheduledAt)).toEqual([
        old[3],
        old[2],
        old[1],
        running,
      ]);
    });

    it('keeps recordLimit records past keepWithinMs, and every record younger than it (those still dedupe their fires)', async () => {
      const { ledger, granted, claim, history } = await setUp();
      const trim = { recordLimit: 3, keepWithinMs: 5 * minute };
      // Six occurrences past the window, then four inside it, each finished in turn.
      const old = Array.from({ length: 6 }, (_, index) => past(20 * minute - index * minute));
      const young = Array.from({ length: 4 }, (_, index) => past(4 * minute - index * minute));
      for (const at of [...old, ...young]) {
        const lease = await granted(at, { startingDeadlineMs: 30 * minute });
        await ledger.finishOccurrence(lease, { outcome: 'success' }, trim);
      }
      const kept = (await history({ limit: 100 })).map((entry) => entry.scheduledAt);
      // Every young one, and of the old ones only as many as the limit leaves room for: none.
      expect(kept).toEqual([...young].reverse());
      // A fire of a kept occurrence is still told it is done; its record is what stops a second run.
      expect(await claim(young[0]!, { ...trim })).toEqual({ status: 'skipped', reason: 'already-done' });
      // A claim that records a skip trims the same way, and keeps what is inside the window.
      expect(await claim(past(21 * minute), { ...trim, startingDeadlineMs: minute })).toEqual({
        status: 'skipped',
        reason: 'missed',
      });
      expect((await history({ limit: 100 })).map((entry) => entry.scheduledAt)).toEqual([...young].reverse());
    });
  });
}
