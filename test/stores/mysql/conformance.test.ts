import mysql from 'mysql2/promise';
import { MysqlLockStore } from 'resil/mysql';
import {
  describeInstanceRegistryConformance,
  describeLockStoreConformance,
  describeRunLedgerConformance,
} from 'resil/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropMysqlTables, mysqlUrlForTests, uniqueTableName } from '../../support/mysql.ts';

const mysqlUrl = await mysqlUrlForTests();
const table = uniqueTableName('conformance');

describe.skipIf(!mysqlUrl)('MysqlLockStore conformance', () => {
  // Created at collection time so the factories below can use it; no connection is opened until
  // the first statement.
  const pool = mysql.createPool({ uri: mysqlUrl, connectionLimit: 20 });

  beforeAll(async () => {
    await new MysqlLockStore(pool, { table }).ensureTables();
  });
  afterAll(async () => {
    await dropMysqlTables(pool, table);
    await pool.end();
  });

  const test = { describe, it, expect };
  // One store per test, all on the same tables: the lock store and instance suites through a
  // prefix of their own, the run ledger suite through its namespace in every key.
  describeLockStoreConformance('MysqlLockStore', (prefix) => new MysqlLockStore(pool, { table, prefix }), {
    test,
  });
  describeRunLedgerConformance('MysqlLockStore', () => new MysqlLockStore(pool, { table }), { test });
  describeInstanceRegistryConformance(
    'MysqlLockStore',
    (prefix) => new MysqlLockStore(pool, { table, prefix }),
    { test },
  );
});
