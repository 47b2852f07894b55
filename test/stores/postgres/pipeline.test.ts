import pg from 'pg';
import {
  getLockToken,
  isLockNotAcquiredError,
  isStoreUnavailableError,
  ResiliencePipelineBuilder,
} from 'resil';
import { isStaleTokenError, PostgresLockStore, withFencedTransaction } from 'resil/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrlForTests, uniqueSchemaName } from '../../support/postgres.ts';
import { freePort } from '../../support/processes.ts';

const databaseUrl = await databaseUrlForTests();
const schema = uniqueSchemaName('pipeline');

describe.skipIf(!databaseUrl)('the lock strategy on PostgresLockStore', () => {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 6 });
  const store = new PostgresLockStore(pool, { schema });

  beforeAll(async () => {
    await pool.query(`CREATE SCHEMA ${schema}`);
    await store.ensureTables();
    await pool.query(`CREATE TABLE ${schema}.reports (id serial PRIMARY KEY, day text, token bigint)`);
  });

  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  const instance = () =>
    new ResiliencePipelineBuilder().addLock({ key: () => 'nightly-report', ttl: '5s', store }).build();

  it('two instances: one runs with the lease’s token and writes through the fence; the other is rejected', async () => {
    let releaseWinner!: () => void;
    const winnerMayFinish = new Promise<void>((resolve) => {
      releaseWinner = resolve;
    });
    let winnerStarted!: () => void;
    const started = new Promise<void>((resolve) => {
      winnerStarted = resolve;
    });
    const winner = instance().execute(async () => {
      const token = getLockToken()!;
      winnerStarted();
      expect((await store.inspect('nightly-report'))?.token).toBe(token);
      await winnerMayFinish;
      return withFencedTransaction(
        pool,
        'report:2026-01-01',
        token,
        async (client) => {
          await client.query(`INSERT INTO ${schema}.reports (day, token) VALUES ($1, $2)`, [
            '2026-01-01',
            token,
          ]);
          return token;
        },
        { schema },
      );
    });
    await started;
    const loser = await instance()
      .execute(async () => 'ran')
      .catch((error: unknown) => error);
    expect(isLockNotAcquiredError(loser)).toBe(true);
    releaseWinner();
    const token = await winner;
    const rows = await pool.query(`SELECT day, token FROM ${schema}.reports`);
    expect(rows.rows).toEqual([{ day: '2026-01-01', token: String(token) }]);
    // Released after the callback: the next instance acquires with a higher token, and an
    // ex-holder's token is now stale at the resource.
    const next = await instance().execute(async () => getLockToken()!);
    expect(next).toBeGreaterThan(token);
    await withFencedTransaction(pool, 'report:2026-01-01', next, async () => {}, { schema });
    await expect(
      withFencedTransaction(pool, 'report:2026-01-01', token, async () => {}, { schema }),
    ).rejects.toSatisfy(isStaleTokenError);
  });

  it('fails closed: with the database unreachable the callback never runs and the pipeline reports StoreUnavailableError', async () => {
    const deadPool = new pg.Pool({
      connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/x`,
      connectionTimeoutMillis: 1_000,
    });
    try {
      let ran = false;
      const outcome = await new ResiliencePipelineBuilder()
        .addLock({ key: () => 'nightly-report', store: new PostgresLockStore(deadPool) })
        .build()
        .settle(async () => {
          ran = true;
        });
      expect(ran).toBe(false);
      expect(outcome.ok).toBe(false);
      expect(isStoreUnavailableError(outcome.error)).toBe(true);
    } finally {
      await deadPool.end();
    }
  });
});
