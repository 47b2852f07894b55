/**
 * An instances table made by a release before config drift has no `definitions` column: the
 * PostgreSQL and MySQL stores add it when they set up, and the registry keeps definitions at once.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { MysqlLockStore } from 'resil/mysql';
import { PostgresLockStore } from 'resil/postgres';
import { describe, expect, it } from 'vitest';
import { mysqlUrlForTests, uniqueTableName } from '../support/mysql.ts';
import { databaseUrlForTests, uniqueSchemaName } from '../support/postgres.ts';

const databaseUrl = await databaseUrlForTests();
const mysqlUrl = await mysqlUrlForTests();

const info = {
  instance: 'web-1',
  host: 'host-1',
  pid: 42,
  version: '0.9.0',
  startedAt: Date.now(),
  jobs: 1,
  clockOffsetMs: 0,
  definitions: '{"v":1,"d":"Qm1x2k9aZ0rT"}',
};

describe.skipIf(!databaseUrl)('PostgresLockStore on an instances table without definitions', () => {
  it('adds the column when it sets up, once, and keeps what an instance registers', async () => {
    const pool = new pg.Pool({ connectionString: databaseUrl });
    const schema = uniqueSchemaName('instances upgrade');
    try {
      await pool.query(`CREATE SCHEMA "${schema}"`);
      await pool.query(`CREATE TABLE "${schema}"."resil_locks_instances" (
  instance text PRIMARY KEY, host text NOT NULL, pid integer NOT NULL, version text NOT NULL,
  started_at timestamptz NOT NULL, jobs integer NOT NULL, clock_offset_ms float8 NOT NULL,
  last_seen_at timestamptz NOT NULL, expires_at timestamptz NOT NULL)`);
      const store = new PostgresLockStore(pool, { schema });
      await store.registerInstance(info, { ttlMs: 10_000 });
      expect(await store.listInstances()).toMatchObject([info]);
      // A second store sets up again: the column is there, nothing to alter.
      await new PostgresLockStore(pool, { schema }).registerInstance(info, { ttlMs: 10_000 });
      const columns = await pool.query(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'resil_locks_instances' AND column_name = 'definitions'`,
        [schema],
      );
      expect(columns.rowCount).toBe(1);
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    }
  });
});

describe.skipIf(!mysqlUrl)('MysqlLockStore on an instances table without definitions', () => {
  it('adds the column when it sets up, once, and keeps what an instance registers', async () => {
    const pool = mysql.createPool({ uri: mysqlUrl, connectionLimit: 4 });
    const table = uniqueTableName('upgrade');
    try {
      await pool.query(`CREATE TABLE \`${table}_instances\` (
  instance VARBINARY(1255) NOT NULL, host MEDIUMTEXT NOT NULL, pid INT NOT NULL, version MEDIUMTEXT NOT NULL,
  started_at_ms BIGINT NOT NULL, jobs INT NOT NULL, clock_offset_ms DOUBLE NOT NULL,
  last_seen_at_ms BIGINT NOT NULL, expires_at_ms BIGINT NOT NULL, PRIMARY KEY (instance)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
      const store = new MysqlLockStore(pool, { table });
      await store.registerInstance(info, { ttlMs: 10_000 });
      expect(await store.listInstances()).toMatchObject([info]);
      await new MysqlLockStore(pool, { table }).registerInstance(info, { ttlMs: 10_000 });
      const [columns] = await pool.query(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND column_name = 'definitions'`,
        [`${table}_instances`],
      );
      expect(columns).toHaveLength(1);
    } finally {
      for (const suffix of [
        '',
        '_occurrences',
        '_pauses',
        '_fences',
        '_instances',
        '_circuits',
        '_rate_limits',
      ]) {
        await pool.query(`DROP TABLE IF EXISTS \`${table}${suffix}\``);
      }
      await pool.end();
    }
  });
});
