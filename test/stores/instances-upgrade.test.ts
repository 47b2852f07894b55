/**
 * Tables made by an earlier release: an instances table without `definitions` (config drift), an
 * occurrences table without the trigger columns. The PostgreSQL and MySQL stores add the columns
 * when they set up, and what needs them works at once.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { MysqlLockStore } from 'resil/mysql';
import { PostgresLockStore } from 'resil/postgres';
import { describe, expect, it } from 'vitest';
import { dropMysqlTables, mysqlUrlForTests, uniqueTableName } from '../support/mysql.ts';
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
      await dropMysqlTables(pool, table);
      await pool.end();
    }
  });
});

// An occurrences table made by a release before runs recorded how they started has no
// run_trigger, actor or trigger_reason: the stores add them when they set up, and a manual run's
// record keeps them at once.
const manualClaim = {
  job: 'report',
  key: 'report',
  scheduledAt: Math.floor(Date.now() / 1_000) * 1_000,
  owner: 'web-1/1',
  instance: 'web-1',
  ttlMs: 10_000,
  overlap: 'skip',
  startingDeadlineMs: 60_000,
  manual: true,
  trigger: 'manual',
  actor: 'ops@host-1',
  triggerReason: 'rerun',
} as const;

describe.skipIf(!databaseUrl)('PostgresLockStore on an occurrences table without the trigger columns', () => {
  it('adds them when it sets up, and records how a run started', async () => {
    const pool = new pg.Pool({ connectionString: databaseUrl });
    const schema = uniqueSchemaName('occurrences upgrade');
    try {
      await pool.query(`CREATE SCHEMA "${schema}"`);
      await pool.query(`CREATE TABLE "${schema}"."resil_locks_occurrences" (
  key text NOT NULL, job text NOT NULL, scheduled_at timestamptz NOT NULL,
  state text NOT NULL CHECK (state IN ('queued', 'running', 'success', 'failure', 'skipped')),
  reason text CHECK (reason IN ('overlap', 'missed', 'paused')), token bigint, owner text, instance text,
  started_at timestamptz, ended_at timestamptz, expires_at timestamptz,
  cancelled boolean NOT NULL DEFAULT false, deadline timestamptz, takeovers integer NOT NULL DEFAULT 0,
  error text, PRIMARY KEY (key, job, scheduled_at))`);
      const store = new PostgresLockStore(pool, { schema });
      const claim = await store.claimOccurrence(manualClaim);
      if (claim.status !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(claim)}`);
      await store.finishOccurrence(claim.lease, { outcome: 'success' });
      expect(await store.runHistory('report')).toMatchObject([
        { outcome: 'success', trigger: 'manual', actor: 'ops@host-1', triggerReason: 'rerun' },
      ]);
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    }
  });
});

describe.skipIf(!mysqlUrl)('MysqlLockStore on an occurrences table without the trigger columns', () => {
  it('adds them when it sets up, and records how a run started', async () => {
    const pool = mysql.createPool({ uri: mysqlUrl, connectionLimit: 4 });
    const table = uniqueTableName('upgrade');
    try {
      await pool.query(`CREATE TABLE \`${table}_occurrences\` (
  lock_key VARBINARY(1255) NOT NULL, job VARBINARY(1000) NOT NULL, scheduled_at_ms BIGINT NOT NULL,
  state ENUM('queued', 'running', 'success', 'failure', 'skipped') NOT NULL,
  reason ENUM('overlap', 'missed', 'paused'), token BIGINT, owner BLOB, instance BLOB,
  started_at_ms BIGINT, ended_at_ms BIGINT, expires_at_ms BIGINT, cancelled BOOLEAN NOT NULL DEFAULT FALSE,
  deadline_ms BIGINT, takeovers INT NOT NULL DEFAULT 0, error MEDIUMTEXT,
  PRIMARY KEY (lock_key, job, scheduled_at_ms)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
      const store = new MysqlLockStore(pool, { table });
      const claim = await store.claimOccurrence(manualClaim);
      if (claim.status !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(claim)}`);
      await store.finishOccurrence(claim.lease, { outcome: 'success' });
      expect(await store.runHistory('report')).toMatchObject([
        { outcome: 'success', trigger: 'manual', actor: 'ops@host-1', triggerReason: 'rerun' },
      ]);
    } finally {
      await dropMysqlTables(pool, table);
      await pool.end();
    }
  });
});
