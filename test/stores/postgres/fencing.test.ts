import pg from 'pg';
import { isInvalidOptionError } from 'resil';
import {
  fenceTransaction,
  isStaleTokenError,
  isTransactionAbortedError,
  PostgresLockStore,
  withFencedTransaction,
} from 'resil/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrlForTests, uniqueSchemaName } from '../../support/postgres.ts';

const databaseUrl = await databaseUrlForTests();
const schema = uniqueSchemaName('fencing');
const tables = { schema };

describe.skipIf(!databaseUrl)('PostgreSQL fencing', () => {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  let resourceCounter = 0;
  const nextResource = () => `report-${++resourceCounter}`;

  const insertReport = (client: pg.PoolClient, resource: string, body: string) =>
    client.query(`INSERT INTO ${schema}.reports (resource, body) VALUES ($1, $2)`, [resource, body]);
  const reports = async (resource: string) =>
    (
      await pool.query<{ body: string }>(
        `SELECT body FROM ${schema}.reports WHERE resource = $1 ORDER BY id`,
        [resource],
      )
    ).rows.map((row) => row.body);
  const storedToken = async (resource: string) =>
    (
      await pool.query<{ token: string }>(
        `SELECT token FROM ${schema}.resil_locks_fences WHERE resource = $1`,
        [resource],
      )
    ).rows[0]?.token;

  beforeAll(async () => {
    await pool.query(`CREATE SCHEMA ${schema}`);
    await new PostgresLockStore(pool, tables).ensureTables();
    await pool.query(`CREATE TABLE ${schema}.reports (id serial PRIMARY KEY, resource text, body text)`);
  });

  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  it('commits the work and records the token when no higher token was seen; returns what the work returns', async () => {
    const resource = nextResource();
    const value = await withFencedTransaction(
      pool,
      resource,
      5,
      async (client) => {
        await insertReport(client, resource, 'by 5');
        return 'done';
      },
      tables,
    );
    expect(value).toBe('done');
    expect(await reports(resource)).toEqual(['by 5']);
    expect(await storedToken(resource)).toBe('5');
  });

  it('accepts the same token again (one holder, several writes) and higher tokens', async () => {
    const resource = nextResource();
    for (const token of [5, 5, 9]) {
      await withFencedTransaction(
        pool,
        resource,
        token,
        (client) => insertReport(client, resource, `by ${token}`),
        tables,
      );
    }
    expect(await reports(resource)).toEqual(['by 5', 'by 5', 'by 9']);
    expect(await storedToken(resource)).toBe('9');
  });

  it('refuses a lower token with StaleTokenError: the work never runs, nothing is written', async () => {
    const resource = nextResource();
    await withFencedTransaction(
      pool,
      resource,
      9,
      (client) => insertReport(client, resource, 'by 9'),
      tables,
    );
    let ran = false;
    const error = await withFencedTransaction(
      pool,
      resource,
      8,
      async (client) => {
        ran = true;
        await insertReport(client, resource, 'by 8');
      },
      tables,
    ).catch((caught: unknown) => caught);
    expect(isStaleTokenError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'STALE_TOKEN', resource, token: 8, highestToken: 9 });
    expect(ran).toBe(false);
    expect(await reports(resource)).toEqual(['by 9']);
    expect(await storedToken(resource)).toBe('9');
  });

  it("the job's writes made before a stale fence in the same transaction never commit, even if the caller commits", async () => {
    const resource = nextResource();
    await withFencedTransaction(pool, resource, 9, async () => {}, tables);
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await insertReport(client, resource, 'written before the fence');
      const error = await fenceTransaction(client, resource, 3, tables).catch((caught: unknown) => caught);
      expect(isStaleTokenError(error)).toBe(true);
      // A careless caller swallows the error and carries on: the transaction is already aborted.
      await expect(insertReport(client, resource, 'written after')).rejects.toThrow(
        /current transaction is aborted/,
      );
      const commit = await client.query('COMMIT');
      expect(commit.command).toBe('ROLLBACK');
    } finally {
      client.release();
    }
    expect(await reports(resource)).toEqual([]);
    expect(await storedToken(resource)).toBe('9');
  });

  it('rolls back the work and the fence when the work throws, and rethrows its error', async () => {
    const resource = nextResource();
    await withFencedTransaction(pool, resource, 2, async () => {}, tables);
    const failure = new Error('job failed half-way');
    await expect(
      withFencedTransaction(
        pool,
        resource,
        4,
        async (client) => {
          await insertReport(client, resource, 'half');
          throw failure;
        },
        tables,
      ),
    ).rejects.toBe(failure);
    expect(await reports(resource)).toEqual([]);
    // The fence rolled back with the work: token 3 may still write.
    expect(await storedToken(resource)).toBe('2');
    await withFencedTransaction(
      pool,
      resource,
      3,
      (client) => insertReport(client, resource, 'by 3'),
      tables,
    );
    expect(await reports(resource)).toEqual(['by 3']);
  });

  it('reports TransactionAbortedError when the work swallowed a failed statement: nothing commits', async () => {
    const resource = nextResource();
    const error = await withFencedTransaction(
      pool,
      resource,
      1,
      async (client) => {
        await insertReport(client, resource, 'lost');
        await client.query('SELECT 1 / 0').catch(() => {});
      },
      tables,
    ).catch((caught: unknown) => caught);
    expect(isTransactionAbortedError(error)).toBe(true);
    expect(await reports(resource)).toEqual([]);
    expect(await storedToken(resource)).toBeUndefined();
  });

  it('serializes fenced transactions on one resource: a lower token waiting behind a higher one is refused', async () => {
    const resource = nextResource();
    let releaseHigher!: () => void;
    const higherMayCommit = new Promise<void>((resolve) => {
      releaseHigher = resolve;
    });
    let higherFenced!: () => void;
    const higherHasFenced = new Promise<void>((resolve) => {
      higherFenced = resolve;
    });
    const higher = withFencedTransaction(
      pool,
      resource,
      6,
      async (client) => {
        higherFenced();
        await higherMayCommit;
        await insertReport(client, resource, 'by 6');
      },
      tables,
    );
    await higherHasFenced;
    // Blocks on the fence row until the token-6 transaction ends, then sees 6.
    const lower = withFencedTransaction(
      pool,
      resource,
      5,
      (client) => insertReport(client, resource, 'by 5'),
      tables,
    ).catch((caught: unknown) => caught);
    await new Promise((resolve) => setTimeout(resolve, 50));
    releaseHigher();
    await higher;
    expect(isStaleTokenError(await lower)).toBe(true);
    expect(await reports(resource)).toEqual(['by 6']);
  });

  it('rejects a missing or non-integer token before taking a connection', async () => {
    for (const token of [undefined, 1.5, Number.NaN, '7']) {
      const error = await withFencedTransaction(pool, 'r', token as never, async () => {}, tables).catch(
        (caught: unknown) => caught,
      );
      expect(isInvalidOptionError(error), String(token)).toBe(true);
    }
    expect(pool.totalCount - pool.idleCount).toBe(0);
  });

  it('returns every connection to the pool', async () => {
    expect(pool.totalCount - pool.idleCount).toBe(0);
    expect(pool.waitingCount).toBe(0);
  });
});
