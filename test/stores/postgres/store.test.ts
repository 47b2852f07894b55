import { inspect } from 'node:util';
import pg from 'pg';
import { isInvalidOptionError, isRejection } from 'resil';
import {
  isStaleTokenError,
  isStoreUnavailableError,
  PostgresLockStore,
  postgresLockStoreDefaults,
  postgresLockStoreSql,
} from 'resil/postgres';
import { describeLockStoreConformance, describeRunLedgerConformance } from 'resil/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrlForTests, uniqueSchemaName } from '../../support/postgres.ts';
import { freePort } from '../../support/processes.ts';

const databaseUrl = await databaseUrlForTests();
const schema = uniqueSchemaName('store');

const record = (
  job: string,
  scheduledAt: number,
  token: number,
  outcome: 'success' | 'failure' = 'success',
) => ({
  job,
  scheduledAt,
  outcome,
  token,
  instance: 'host:1',
  startedAt: scheduledAt + 1,
  endedAt: scheduledAt + 2,
});

describe.skipIf(!databaseUrl)('PostgresLockStore', () => {
  // Created at collection time so the conformance factories below can use it; no connection is
  // opened until the first query.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 20, connectionTimeoutMillis: 5_000 });
  let sharedStore: PostgresLockStore;

  beforeAll(async () => {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    sharedStore = new PostgresLockStore(pool, { schema });
    await sharedStore.ensureTables();
  });

  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  // One store per test, all on the same tables: the suites put their namespace in every key.
  describeLockStoreConformance('PostgresLockStore', () => new PostgresLockStore(pool, { schema }));
  describeRunLedgerConformance('PostgresLockStore', () => new PostgresLockStore(pool, { schema }));

  it('pins its defaults', () => {
    expect(postgresLockStoreDefaults).toEqual({
      table: 'resil_locks',
      createTable: true,
      timeout: 5_000,
      retentionMs: 7 * 24 * 3_600_000,
      historyLimit: 20,
    });
  });

  describe('tables', () => {
    it('creates its tables on first use, concurrently from many stores and pools without failing', async () => {
      const ownSchema = uniqueSchemaName('setup');
      await pool.query(`CREATE SCHEMA ${ownSchema}`);
      // Separate pools: separate sessions, like separate processes starting at once.
      const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: databaseUrl, max: 2 }));
      try {
        const tokens = await Promise.all(
          pools.map((each, index) =>
            new PostgresLockStore(each, { schema: ownSchema, table: 'Locks' }).acquire(
              `key-${index}`,
              'owner',
              30_000,
            ),
          ),
        );
        expect(tokens.every((token) => Number.isSafeInteger(token))).toBe(true);
        const tables = await pool.query<{ table_name: string }>(
          'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
          [ownSchema],
        );
        expect(tables.rows.map((row) => row.table_name)).toEqual([
          'Locks',
          'Locks_completed',
          'Locks_fences',
          'Locks_ledger',
          'Locks_runs',
        ]);
      } finally {
        await Promise.all(pools.map((each) => each.end()));
        await pool.query(`DROP SCHEMA ${ownSchema} CASCADE`);
      }
    });

    it('with createTable: false creates nothing and fails closed, naming the fix, while the table is missing', async () => {
      const ownSchema = uniqueSchemaName('nocreate');
      await pool.query(`CREATE SCHEMA ${ownSchema}`);
      try {
        const store = new PostgresLockStore(pool, { schema: ownSchema, createTable: false });
        const error = await store.acquire('key', 'owner', 1_000).catch((caught: unknown) => caught);
        expect(isStoreUnavailableError(error)).toBe(true);
        expect((error as Error).message).toMatch(/42P01.*postgresLockStoreSql\(\)/);
        const count = await pool.query(
          'SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1',
          [ownSchema],
        );
        expect(count.rows[0].n).toBe(0);
        // The exported SQL is what the store needs.
        await pool.query(postgresLockStoreSql({ schema: ownSchema }));
        await pool.query(postgresLockStoreSql({ schema: ownSchema })); // idempotent
        expect(await store.acquire('key', 'owner', 1_000)).toBeGreaterThan(0);
      } finally {
        await pool.query(`DROP SCHEMA ${ownSchema} CASCADE`);
      }
    });

    it('quotes identifiers: a table name with quotes, spaces and a semicolon is just a name', async () => {
      const table = 'odd "name"; DROP TABLE x; --';
      const store = new PostgresLockStore(pool, { schema, table });
      expect(await store.acquire('key', 'owner', 30_000)).toBeGreaterThan(0);
      const found = await pool.query(
        'SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2',
        [schema, table],
      );
      expect(found.rows[0].n).toBe(1);
      expect(postgresLockStoreSql({ table })).toContain('"odd ""name""; DROP TABLE x; --"');
    });

    it('passes keys and owners as parameters, never as SQL', async () => {
      const key = "k'); DELETE FROM resil_locks; --";
      const owner = "o' OR '1'='1";
      const token = await sharedStore.acquire(key, owner, 30_000);
      expect(await sharedStore.inspect(key)).toMatchObject({ owner, token });
      expect(await sharedStore.renew(key, "anything' OR 'x'='x", 30_000)).toBe(false);
    });

    it('rejects bad options, naming the option and the value', () => {
      const cases: [object, string][] = [
        [{ table: '' }, 'table'],
        [{ table: 'x'.repeat(51) }, 'table'],
        [{ schema: 'bad\0name' }, 'schema'],
        [{ schema: 'y'.repeat(64) }, 'schema'],
        [{ timeout: '5 parsecs' }, 'timeout'],
        [{ timeout: 0 }, 'timeout'],
        [{ createTable: 'yes' }, 'createTable'],
      ];
      for (const [options, option] of cases) {
        let caught: unknown;
        try {
          new PostgresLockStore(pool, options as never);
        } catch (error) {
          caught = error;
        }
        expect(isInvalidOptionError(caught), option).toBe(true);
        expect((caught as { option: string }).option).toBe(option);
      }
      expect(() => new PostgresLockStore(undefined as never)).toThrow(/pool/);
    });
  });

  describe('tokens and leases', () => {
    it('keeps the row and its token on release: the lease is cleared, the token keeps increasing', async () => {
      const first = (await sharedStore.acquire('kept', 'a', 30_000))!;
      await sharedStore.release('kept', 'a');
      const row = await pool.query(
        `SELECT owner, token, expires_at FROM ${schema}.resil_locks WHERE key = $1`,
        ['kept'],
      );
      expect(row.rows).toEqual([{ owner: null, token: String(first), expires_at: null }]);
      expect(await sharedStore.acquire('kept', 'b', 30_000)).toBe(first + 1);
    });

    it("seeds a new key's token from the database clock, so a deleted row never brings tokens back", async () => {
      const first = (await sharedStore.acquire('deleted', 'a', 30_000))!;
      const databaseNowMs = await sharedStore.now();
      expect(Math.abs(first / 1_000 - databaseNowMs)).toBeLessThan(5_000);
      await pool.query(`DELETE FROM ${schema}.resil_locks WHERE key = $1`, ['deleted']);
      expect(await sharedStore.acquire('deleted', 'b', 30_000)).toBeGreaterThan(first);
    });

    it('judges expiry by the database clock: a lease whose expires_at the database has passed is free', async () => {
      await sharedStore.acquire('db-clock', 'a', 60_000);
      // Move the stored expiry to just behind the database's now(): the local clock is irrelevant.
      await pool.query(
        `UPDATE ${schema}.resil_locks SET expires_at = now() - interval '1 millisecond' WHERE key = $1`,
        ['db-clock'],
      );
      expect(await sharedStore.inspect('db-clock')).toBeUndefined();
      expect(await sharedStore.renew('db-clock', 'a', 60_000)).toBe(false);
      expect(await sharedStore.acquire('db-clock', 'b', 60_000)).toBeDefined();
    });
  });

  describe('run ledger', () => {
    it('reports the highest token in the StaleTokenError and leaves every table untouched', async () => {
      const now = Date.now();
      await sharedStore.recordRun(record('stale-job', now - 1_000, 7));
      const before = await pool.query(
        `SELECT (SELECT count(*) FROM ${schema}.resil_locks_runs WHERE job = 'stale-job')::int AS runs,
                (SELECT count(*) FROM ${schema}.resil_locks_completed WHERE job = 'stale-job')::int AS completed`,
      );
      const error = await sharedStore
        .recordRun(record('stale-job', now, 6))
        .catch((caught: unknown) => caught);
      expect(isStaleTokenError(error)).toBe(true);
      expect(error).toMatchObject({ code: 'STALE_TOKEN', resource: 'stale-job', token: 6, highestToken: 7 });
      const after = await pool.query(
        `SELECT (SELECT count(*) FROM ${schema}.resil_locks_runs WHERE job = 'stale-job')::int AS runs,
                (SELECT count(*) FROM ${schema}.resil_locks_completed WHERE job = 'stale-job')::int AS completed`,
      );
      expect(after.rows).toEqual(before.rows);
      expect(await sharedStore.isCompleted('stale-job', now)).toBe(false);
    });

    it('serializes concurrent records of one job: a lower token never lands after a higher one', async () => {
      const now = Date.now();
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, index) =>
          sharedStore.recordRun(record('racing-job', now - index, index + 1)),
        ),
      );
      const history = await sharedStore.runHistory('racing-job', 20);
      const tokens = history.map((run) => run.token);
      // Newest first: tokens never increase going back in time.
      expect(tokens).toEqual([...tokens].sort((a, b) => b - a));
      expect(tokens[0]).toBe(20);
      const refused = results.filter((result) => result.status === 'rejected');
      expect(refused.every((result) => isStaleTokenError((result as PromiseRejectedResult).reason))).toBe(
        true,
      );
      expect(history.length + refused.length).toBe(20);
    });

    it('round-trips epoch milliseconds exactly and keeps the error message', async () => {
      const scheduledAt = Date.UTC(2026, 0, 1, 2, 0, 0, 123);
      await sharedStore.recordRun({ ...record('exact-job', scheduledAt, 1, 'failure'), error: 'boom' });
      expect(await sharedStore.runHistory('exact-job')).toEqual([
        { ...record('exact-job', scheduledAt, 1, 'failure'), error: 'boom' },
      ]);
    });

    it('rejects a malformed record or limit before touching the database', async () => {
      const bad = { ...record('bad-job', Date.now(), 1), outcome: 'maybe' } as never;
      await expect(sharedStore.recordRun(bad)).rejects.toSatisfy(isInvalidOptionError);
      await expect(sharedStore.recordRun(record('bad-job', Date.now(), 1.5))).rejects.toSatisfy(
        isInvalidOptionError,
      );
      await expect(
        sharedStore.recordRun(record('bad-job', Date.now(), 1), { historyLimit: 0 }),
      ).rejects.toSatisfy(isInvalidOptionError);
      await expect(sharedStore.runHistory('bad-job', -1)).rejects.toSatisfy(isInvalidOptionError);
    });
  });

  describe('failing closed', () => {
    it('an unreachable database fails with StoreUnavailableError, without the password, within the bound', async () => {
      const port = await freePort();
      const password = 's3cret-Pa55word';
      const deadPool = new pg.Pool({
        connectionString: `postgres://resil:${password}@127.0.0.1:${port}/nowhere`,
        connectionTimeoutMillis: 1_000,
      });
      try {
        const store = new PostgresLockStore(deadPool, { timeout: 2_000 });
        const startedAt = performance.now();
        for (const attempt of [
          () => store.acquire('key', 'owner', 1_000),
          () => store.renew('key', 'owner', 1_000),
          () => store.release('key', 'owner'),
          () => store.inspect('key'),
          () => store.now(),
          () => store.isCompleted('job', 0),
          () => store.recordRun(record('job', 0, 1)),
          () => store.runHistory('job'),
          () => store.lastCompleted('job'),
        ]) {
          const error = await attempt().catch((caught: unknown) => caught);
          expect(isStoreUnavailableError(error)).toBe(true);
          expect(isRejection(error)).toBe(true);
          const everything = `${String(error)} ${(error as Error).stack} ${JSON.stringify(error)} ${inspect(error, { depth: 10 })}`;
          expect(everything).not.toContain(password);
          expect((error as Error).message).toMatch(/ECONNREFUSED/);
        }
        expect(performance.now() - startedAt).toBeLessThan(5_000);
      } finally {
        await deadPool.end();
      }
    });

    it('a pool that never connects is bounded by the store timeout', async () => {
      // A listener that accepts TCP connections and never answers: the startup packet hangs.
      const { createServer } = await import('node:net');
      const sockets = new Set<import('node:net').Socket>();
      const silent = createServer((socket) => {
        sockets.add(socket);
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const port = (silent.address() as { port: number }).port;
      const hangingPool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/x` });
      try {
        const store = new PostgresLockStore(hangingPool, { timeout: 300, createTable: false });
        const startedAt = performance.now();
        const error = await store.acquire('key', 'owner', 1_000).catch((caught: unknown) => caught);
        expect(isStoreUnavailableError(error)).toBe(true);
        expect((error as Error).message).toMatch(/no answer within 300 ms/);
        expect(performance.now() - startedAt).toBeLessThan(2_000);
      } finally {
        for (const socket of sockets) socket.destroy();
        silent.close();
        await hangingPool.end();
      }
    });
  });
});
