import mysql from 'mysql2/promise';
import { ResiliencePipelineBuilder } from 'resil';
import { MysqlLockStore, mysqlLockStoreSql } from 'resil/mysql';
import { afterAll, describe, expect, it } from 'vitest';
// Not exported by the package: the statement and the arithmetic its parameters come from.
import { rateLimitSql } from '../../../src/stores/mysql/shared-rate-limit.ts';
import { gcraMicroseconds } from '../../../src/strategies/rate-limiter/shared-limiter.ts';
import { mysqlUrlForTests, uniqueTableName } from '../../support/mysql.ts';
import { describeSharedRateLimitConformance } from '../../support/shared-rate-limit-conformance.ts';

const mysqlUrl = await mysqlUrlForTests();
const table = uniqueTableName('rate_limit');
const suffixes = ['', '_occurrences', '_pauses', '_fences', '_instances', '_rate_limits'];

describe.skipIf(!mysqlUrl)('MysqlLockStore.sharedRateLimiter', () => {
  const pool = mysql.createPool({ uri: mysqlUrl, connectionLimit: 20 });
  const tables = [table];

  afterAll(async () => {
    for (const base of tables) {
      for (const suffix of suffixes) await pool.query(`DROP TABLE IF EXISTS \`${base}${suffix}\``);
    }
    await pool.end();
  });

  // Every store on the same tables, each through the namespace as its prefix.
  describeSharedRateLimitConformance('MysqlLockStore', {
    store: (prefix) => new MysqlLockStore(pool, { table, prefix }),
    invalidKey: 'x'.repeat(1_001),
  });

  it('a call whose statement started before another call that took the row first still gets the permit the budget holds', async () => {
    const own = uniqueTableName('rate_race');
    tables.push(own);
    const store = new MysqlLockStore(pool, { table: own });
    // The store creates its tables at its first use.
    await new ResiliencePipelineBuilder()
      .addRateLimiter({ permitLimit: 1, window: '1m', store, key: 'setup' })
      .build()
      .execute(() => 'ran');
    const limits = `\`${own}_rate_limits\``;
    const sql = rateLimitSql(limits);
    // Bursts of 2, one permit an hour; the bucket full.
    const { interval, tolerance } = gcraMicroseconds({ intervalMs: 3_600_000, burst: 2 });
    await pool.query(`INSERT INTO ${limits} (limit_key, tat_us) VALUES ('race', 0)`);
    const take = async (client: mysql.Pool | mysql.PoolConnection) => {
      const [result] = await client.query(sql, ['race', interval, tolerance, interval]);
      return Number((result as mysql.ResultSetHeader).insertId);
    };
    const holder = await pool.getConnection();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT tat_us FROM ${limits} WHERE limit_key = 'race' FOR UPDATE`);
      // A call whose statement starts now (the server runs it: its instant is set) and waits for
      // the row's lock...
      let settled = false;
      const early = take(pool).finally(() => {
        settled = true;
      });
      // Until the server runs it; `early` cannot settle before the holder commits, unless it failed.
      for (let polls = 0; ; polls++) {
        const [running] = await pool.query(
          'SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE ?',
          [`INSERT INTO ${limits}%`],
        );
        if (Number((running as Array<{ n: number }>)[0]!.n) > 0) break;
        if (settled || polls >= 1_000) {
          await early;
          throw new Error(`the waiting call was not seen running after ${polls} polls`);
        }
      }
      // ... while the holder takes a permit, later on the clock (as the statement would: the row
      // one interval past the clock), and commits.
      await holder.query(
        `UPDATE ${limits} SET tat_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) + ? WHERE limit_key = 'race'`,
        [interval],
      );
      await holder.query('COMMIT');
      // The waiting call runs after it: the second permit of the burst is there.
      expect(await early).toBe(0);
      expect(await take(pool)).toBeGreaterThan(0);
    } finally {
      holder.release();
    }
  });

  it('creates its table with the others (in mysqlLockStoreSql) and keeps one row per key, prefixed', async () => {
    expect(mysqlLockStoreSql({ table: 'x' })).toContain('CREATE TABLE IF NOT EXISTS `x_rate_limits`');
    const own = uniqueTableName('rate_rows');
    tables.push(own);
    const store = new MysqlLockStore(pool, { table: own, prefix: 'billing/' });
    const pipeline = new ResiliencePipelineBuilder()
      .addRateLimiter({ permitLimit: 3, window: '1m', store, key: 'provider' })
      .build();
    await pipeline.execute(() => 'ran');
    await pipeline.execute(() => 'ran');
    const [rows] = await pool.query(
      `SELECT CAST(limit_key AS CHAR) AS limit_key, tat_us,
        TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us
      FROM \`${own}_rate_limits\``,
    );
    const found = rows as Array<{ limit_key: string; tat_us: string; now_us: string }>;
    expect(found).toHaveLength(1);
    expect(found[0]!.limit_key).toBe('billing/provider');
    // Two permits of 20 s each ahead of the database's clock, in microseconds.
    const ahead = Number(found[0]!.tat_us) - Number(found[0]!.now_us);
    expect(ahead).toBeGreaterThan(39_000_000);
    expect(ahead).toBeLessThanOrEqual(40_000_000);
  });
});
