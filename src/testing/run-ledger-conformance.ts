import { describe, expect, it } from 'vitest';
import { isStaleTokenError, StaleTokenError } from '../strategies/lock/errors.ts';
import type { RunLedger, RunOutcome, RunRecord } from '../strategies/lock/run-ledger.ts';
import { type ConformanceFactory, uniqueNamespace } from './conformance-namespace.ts';

const minute = 60_000;
const hour = 60 * minute;

/** `error` may come back missing, `undefined` or `null` from a store: all mean "none". */
function normalized(record: RunRecord): RunRecord {
  const { error, ...rest } = record;
  return error === undefined || error === null ? rest : { ...rest, error };
}

/**
 * Registers a vitest suite that checks `factory`'s store against the {@link RunLedger} contract:
 * a success completes its occurrence and a failure does not; a write with a token lower than the
 * job's highest is refused with `StaleTokenError` and writes nothing; history comes newest first
 * and is trimmed; occurrences older than the retention window are not kept; `lastCompleted` is the
 * latest completed occurrence; jobs are independent. Needs `vitest` (imported by this module).
 *
 * Occurrences are placed relative to this machine's clock, within minutes of now, so the store's
 * clock must be within a minute of it.
 *
 * @example
 * describeRunLedgerConformance('PostgresLockStore', (prefix) => new PostgresLockStore(pool, { prefix }));
 */
export function describeRunLedgerConformance(name: string, factory: ConformanceFactory<RunLedger>): void {
  async function setUp(): Promise<{ ledger: RunLedger; job: (name?: string) => string }> {
    const namespace = uniqueNamespace();
    const ledger = await factory(namespace);
    return { ledger, job: (suffix = 'job') => `${namespace}${suffix}` };
  }

  function run(
    job: string,
    scheduledAt: number,
    token: number,
    outcome: RunOutcome = 'success',
    extra: Partial<RunRecord> = {},
  ): RunRecord {
    return {
      job,
      scheduledAt,
      outcome,
      token,
      instance: 'conformance:1',
      startedAt: scheduledAt + 10,
      endedAt: scheduledAt + 20,
      ...(outcome === 'failure' ? { error: 'boom' } : {}),
      ...extra,
    };
  }

  async function history(ledger: RunLedger, job: string, limit?: number): Promise<RunRecord[]> {
    return (await ledger.runHistory(job, limit)).map(normalized);
  }

  describe(`RunLedger conformance: ${name}`, () => {
    it('a success completes its occurrence, and only that one', async () => {
      const { ledger, job } = await setUp();
      const at = Date.now() - minute;
      expect(await ledger.isCompleted(job(), at)).toBe(false);
      const record = run(job(), at, 1);
      await ledger.recordRun(record);
      expect(await ledger.isCompleted(job(), at)).toBe(true);
      expect(await ledger.isCompleted(job(), at + 1_000)).toBe(false);
      expect(await ledger.isCompleted(job(), at - 1_000)).toBe(false);
      expect(await history(ledger, job())).toEqual([record]);
    });

    it('a failure does not complete its occurrence but is kept in the history with its error', async () => {
      const { ledger, job } = await setUp();
      const at = Date.now() - minute;
      const record = run(job(), at, 1, 'failure', { error: 'database unreachable' });
      await ledger.recordRun(record);
      expect(await ledger.isCompleted(job(), at)).toBe(false);
      expect(await ledger.lastCompleted(job())).toBeUndefined();
      expect(await history(ledger, job())).toEqual([record]);
    });

    it('refuses a record whose token is lower than the highest seen, with StaleTokenError, writing nothing', async () => {
      const { ledger, job } = await setUp();
      const at = Date.now() - 10 * minute;
      await ledger.recordRun(run(job(), at, 5));
      for (const outcome of ['success', 'failure'] as const) {
        const stale = run(job(), at + minute, 4, outcome);
        const error = await ledger.recordRun(stale).then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(isStaleTokenError(error), `recordRun(${outcome}, token 4) after token 5`).toBe(true);
        expect((error as StaleTokenError).token).toBe(4);
        expect(error).toBeInstanceOf(StaleTokenError);
      }
      expect(await ledger.isCompleted(job(), at + minute)).toBe(false);
      expect(await ledger.lastCompleted(job())).toBe(at);
      expect(await history(ledger, job())).toHaveLength(1);
    });

    it('accepts the same token again (one holder, several runs) and higher tokens', async () => {
      const { ledger, job } = await setUp();
      const at = Date.now() - 10 * minute;
      await ledger.recordRun(run(job(), at, 5, 'failure'));
      await ledger.recordRun(run(job(), at, 5));
      await ledger.recordRun(run(job(), at + minute, 6));
      expect(await ledger.isCompleted(job(), at)).toBe(true);
      expect(await ledger.isCompleted(job(), at + minute)).toBe(true);
      expect(await history(ledger, job())).toHaveLength(3);
    });

    it('returns the history newest first, trimmed to historyLimit, and at most limit records', async () => {
      const { ledger, job } = await setUp();
      const at = Date.now() - hour;
      const records = Array.from({ length: 5 }, (_, index) =>
        run(job(), at + index * minute, index + 1, index % 2 ? 'failure' : 'success'),
      );
      for (const record of records) await ledger.recordRun(record, { historyLimit: 3 });
      const newestFirst = [...records].reverse();
      expect(await history(ledger, job())).toEqual(newestFirst.slice(0, 3));
      expect(await history(ledger, job(), 2)).toEqual(newestFirst.slice(0, 2));
    });

    it('keeps 20 runs of history by default', async () => {
      const { ledger, job } = await setUp();
      const at = Date.now() - hour;
      for (let index = 0; index < 22; index++) await ledger.recordRun(run(job(), at + index * 1_000, 1));
      const kept = await history(ledger, job(), 50);
      expect(kept).toHaveLength(20);
      expect(kept[0]!.scheduledAt).toBe(at + 21_000);
      expect(kept[19]!.scheduledAt).toBe(at + 2_000);
      expect(await history(ledger, job())).toHaveLength(20);
    });

    it('does not keep an occurrence older than now - retention', async () => {
      const { ledger, job } = await setUp();
      const old = Date.now() - 24 * hour;
      await ledger.recordRun(run(job(), old, 1), { retentionMs: hour });
      expect(await ledger.isCompleted(job(), old)).toBe(false);
      expect(await ledger.lastCompleted(job())).toBeUndefined();
    });

    it('drops completed occurrences that fall out of retention when a run is recorded', async () => {
      const { ledger, job } = await setUp();
      const now = Date.now();
      await ledger.recordRun(run(job(), now - 2 * hour, 1));
      expect(await ledger.isCompleted(job(), now - 2 * hour)).toBe(true);
      await ledger.recordRun(run(job(), now - minute, 1), { retentionMs: hour });
      expect(await ledger.isCompleted(job(), now - 2 * hour)).toBe(false);
      expect(await ledger.isCompleted(job(), now - minute)).toBe(true);
      expect(await ledger.lastCompleted(job())).toBe(now - minute);
    });

    it('lastCompleted is the latest completed occurrence, whatever the order of recording', async () => {
      const { ledger, job } = await setUp();
      const at = Date.now() - hour;
      expect(await ledger.lastCompleted(job())).toBeUndefined();
      await ledger.recordRun(run(job(), at + 2 * minute, 1));
      await ledger.recordRun(run(job(), at + minute, 1));
      await ledger.recordRun(run(job(), at + 3 * minute, 1, 'failure'));
      expect(await ledger.lastCompleted(job())).toBe(at + 2 * minute);
      expect(await ledger.isCompleted(job(), at + minute)).toBe(true);
    });

    it('keeps jobs apart: occurrences, history and tokens', async () => {
      const { ledger, job } = await setUp();
      const at = Date.now() - hour;
      await ledger.recordRun(run(job('a'), at, 9));
      expect(await ledger.isCompleted(job('b'), at)).toBe(false);
      expect(await ledger.lastCompleted(job('b'))).toBeUndefined();
      expect(await history(ledger, job('b'))).toEqual([]);
      await ledger.recordRun(run(job('b'), at, 1));
      expect(await ledger.isCompleted(job('b'), at)).toBe(true);
      expect(await history(ledger, job('a'))).toHaveLength(1);
    });
  });
}
