import pg from 'pg';
import { ResiliencePipelineBuilder } from 'resil';
import { PostgresLockStore, postgresLockStoreSql } from 'resil/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Not exported by the package: the statement and the arithmetic its parameters come from.
import { rateLimitSql } from '../../../src/stores/postgres/shared-rate-limit.ts';
import { gcraMicroseconds } from '../../../src/strategies/rate-limiter/shared-limiter.ts';
import { databaseUrlForTests, uniqueSchemaName } from '../../support/postgres.ts';
import { describeSharedRateLimitConformance } from '../../support/shared-rate-limit-conformance.ts';

const databaseUrl = await databaseUrlForTests();
const schema = uniqueSchemaName('rate_limit');

describe.skipIf(!databaseUrl)('PostgresLockStore.sharedRateLimiter', () => {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 20, connectionTimeoutMillis: 5_000 });

  beforeAll(async () => {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  });

  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  // Every store on the same tables: the cases put their namespace in every key.
  describeSharedRateLimitConformance('PostgresLockStore', {
    store: () => new PostgresLockStore(pool, { schema }),
    invalidKey: 'nul\u0000key',
  });

  it('a call whose statement started before another call that took the row first still gets the permit the budget holds', async () => {
    const store = new PostgresLockStore(pool, { schema, table: 'race' });
    // The store creates its tables at its first use.
    await new ResiliencePipelineBuilder()
      .addRateLimiter({ permitLimit: 1, window: '1m', store, key: 'setup' })
      .build()
      .execute(() => 'ran');
    const sql = rateLimitSql(`"${schema}"."race_rate_limits"`);
    // Bursts of 2, one permit an hour.
    const { interval, tolerance } = gcraMicroseconds({ intervalMs: 3_600_000, burst: 2 });
    const take = async (client: pg.Pool | pg.PoolClient) =>
      Number((await client.query(sql, ['race', interval, tolerance])).rows[0].wait);
    // A call whose transaction began before the first call's (its now() is older), run after it.
    const early = await pool.connect();
    try {
      await early.query('BEGIN');
      await early.query('SELECT now()');
      expect(await take(pool)).toBe(0);
      expect(await take(early)).toBe(0);
      expect(await take(early)).toBeGreaterThan(0);
      await early.query('COMMIT');
    } finally {
      early.release();
    }
  });

  it('creates its table with the others (IF NOT EXISTS, in postgresLockStoreSql) and keeps one row per key', async () => {
    expect(postgresLockStoreSql({ schema, table: 'x' })).toContain(
      `CREATE TABLE IF NOT EXISTS "${schema}"."x_rate_limits"`,
    );
    const store = new PostgresLockStore(pool, { schema, table: 'own' });
    const { ResiliencePipelineBuilder } = await import('resil');
    const pipeline = new ResiliencePipelineBuilder()
      .addRateLimiter({ permitLimit: 3, window: '1m', store, key: 'billing' })
      .build();
    await pipeline.execute(() => 'ran');
    await pipeline.execute(() => 'ran');
    const { rows } = await pool.query(`SELECT key, tat FROM ${schema}.own_rate_limits`);
    expect(rows).toHaveLength(1);
    expect(rows[0].key).toBe('billing');
    // Two permits of 20 s each ahead of the database's clock, in microseconds.
    const { rows: clock } = await pool.query(
      'SELECT floor(extract(epoch FROM now()) * 1000000)::bigint AS now',
    );
    const ahead = Number(rows[0].tat) - Number(clock[0].now);
    expect(ahead).toBeGreaterThan(39_000_000);
    expect(ahead).toBeLessThanOrEqual(40_000_000);
  });
});
