import mysql from 'mysql2/promise';
import { ResiliencePipelineBuilder } from 'resil';
import { MysqlLockStore, mysqlLockStoreSql } from 'resil/mysql';
import { afterAll, describe, expect, it } from 'vitest';
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
