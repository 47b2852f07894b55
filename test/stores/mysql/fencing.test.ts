import mysql from 'mysql2/promise';
import { isInvalidKeyError, isInvalidOptionError } from 'resil';
import {
  isStaleTokenError,
  isTransactionAbortedError,
  MysqlLockStore,
  withFencedTransaction,
} from 'resil/mysql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mysqlUrlForTests, uniqueTableName } from '../../support/mysql.ts';
import { waitUntil } from '../../support/processes.ts';

const mysqlUrl = await mysqlUrlForTests();
const table = uniqueTableName('fencing');
const reports = `${table}_reports`;

describe.skipIf(!mysqlUrl)('withFencedTransaction on MySQL', () => {
  const pool = mysql.createPool({ uri: mysqlUrl, connectionLimit: 6 });
  const options = { table };

  beforeAll(async () => {
    await new MysqlLockStore(pool, options).ensureTables();
    await pool.query(
      `CREATE TABLE \`${reports}\` (id INT AUTO_INCREMENT PRIMARY KEY, resource VARCHAR(100), body VARCHAR(100)) ENGINE=InnoDB`,
    );
  });
  afterAll(async () => {
    for (const suffix of ['', '_occurrences', '_pauses', '_fences', '_instances', '_circuits', '_reports']) {
      await pool.query(`DROP TABLE IF EXISTS \`${table}${suffix}\``);
    }
    await pool.end();
  });

  /** Writes `body` to `resource` in a transaction fenced with `token`. */
  const write = (resource: string, token: number, body: string) =>
    withFencedTransaction(
      pool,
      resource,
      token,
      async (connection) => {
        await connection.execute(`INSERT INTO \`${reports}\` (resource, body) VALUES (?, ?)`, [
          resource,
          body,
        ]);
        return body;
      },
      options,
    );
  const bodiesOf = async (resource: string) => {
    const [rows] = await pool.execute(`SELECT body FROM \`${reports}\` WHERE resource = ? ORDER BY id`, [
      resource,
    ]);
    return (rows as Array<{ body: string }>).map((row) => row.body);
  };
  const fenceOf = async (resource: string) => {
    const [rows] = await pool.execute(`SELECT token FROM \`${table}_fences\` WHERE resource = ?`, [resource]);
    return (rows as Array<{ token: number }>)[0]?.token;
  };

  it('commits the work of the highest token and of equal ones; refuses a lower one before the work runs', async () => {
    expect(await write('report', 10, 'first')).toBe('first');
    expect(await write('report', 10, 'same holder again')).toBe('same holder again');
    expect(await write('report', 12, 'successor')).toBe('successor');
    let ran = false;
    const error = await withFencedTransaction(
      pool,
      'report',
      11,
      async () => {
        ran = true;
      },
      options,
    ).catch((caught: unknown) => caught);
    expect(isStaleTokenError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'STALE_TOKEN', resource: 'report', token: 11, highestToken: 12 });
    expect(ran).toBe(false);
    expect(await bodiesOf('report')).toEqual(['first', 'same holder again', 'successor']);
    expect(await fenceOf('report')).toBe(12);
  });

  it('rolls everything back, the fence included, when the work throws, and rethrows its error', async () => {
    await write('thrown', 5, 'kept');
    const failure = new Error('the job failed midway');
    const error = await withFencedTransaction(
      pool,
      'thrown',
      9,
      async (connection) => {
        await connection.execute(`INSERT INTO \`${reports}\` (resource, body) VALUES ('thrown', 'lost')`);
        throw failure;
      },
      options,
    ).catch((caught: unknown) => caught);
    expect(error).toBe(failure);
    expect(await bodiesOf('thrown')).toEqual(['kept']);
    expect(await fenceOf('thrown')).toBe(5);
  });

  it('fenced transactions on one resource wait for each other: a lower token that came second is refused once the first commits', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const first = withFencedTransaction(
      pool,
      'serial',
      20,
      async (connection) => {
        entered();
        await held;
        await connection.execute(`INSERT INTO \`${reports}\` (resource, body) VALUES ('serial', 'twenty')`);
      },
      options,
    );
    await inside;
    const second = write('serial', 19, 'nineteen').catch((caught: unknown) => caught);
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    await first;
    expect(isStaleTokenError(await second)).toBe(true);
    expect(await bodiesOf('serial')).toEqual(['twenty']);
  });

  it('the work reads what the fenced transaction before it committed: its snapshot is taken once the fence row is locked', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const first = withFencedTransaction(
      pool,
      'visible',
      30,
      async (connection) => {
        await connection.execute(`INSERT INTO \`${reports}\` (resource, body) VALUES ('visible', 'thirty')`);
        entered();
        await held;
      },
      options,
    );
    await inside;
    const second = withFencedTransaction(
      pool,
      'visible',
      31,
      async (connection) => {
        const [rows] = await connection.execute(`SELECT body FROM \`${reports}\` WHERE resource = 'visible'`);
        return (rows as Array<{ body: string }>).map((row) => row.body);
      },
      options,
    );
    await waitUntil('the second fenced transaction to wait for the fence row', async () => {
      const [rows] = await pool.query(
        "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE command = 'Execute' AND info LIKE ?",
        [`INSERT INTO \`${table}_fences\`%`],
      );
      return Number((rows as Array<{ n: number }>)[0]!.n) === 1;
    });
    release();
    await first;
    expect(await second).toEqual(['thirty']);
  });

  it('work that ends the transaction itself (a swallowed rollback) is TransactionAbortedError: nothing commits', async () => {
    const error = await withFencedTransaction(
      pool,
      'aborted',
      3,
      async (connection) => {
        await connection.execute(
          `INSERT INTO \`${reports}\` (resource, body) VALUES ('aborted', 'rolled back')`,
        );
        await connection.query('ROLLBACK');
      },
      options,
    ).catch((caught: unknown) => caught);
    expect(isTransactionAbortedError(error)).toBe(true);
    expect(await bodiesOf('aborted')).toEqual([]);
    expect(await fenceOf('aborted')).toBeUndefined();
  });

  it('work that commits implicitly (DDL) is TransactionAbortedError, which does not claim that nothing was written', async () => {
    const error = await withFencedTransaction(
      pool,
      'implicit',
      4,
      async (connection) => {
        await connection.execute(
          `INSERT INTO \`${reports}\` (resource, body) VALUES ('implicit', 'committed by DDL')`,
        );
        await connection.query(`CREATE TABLE IF NOT EXISTS \`${reports}\` (id INT PRIMARY KEY)`);
        await connection.execute(
          `INSERT INTO \`${reports}\` (resource, body) VALUES ('implicit', 'unfenced')`,
        );
      },
      options,
    ).catch((caught: unknown) => caught);
    expect(isTransactionAbortedError(error)).toBe(true);
    expect((error as Error).message).toMatch(/or the work ended it itself \(ROLLBACK, COMMIT, or DDL/);
    expect(await bodiesOf('implicit')).toEqual(['committed by DDL', 'unfenced']);
    expect(await fenceOf('implicit')).toBe(4);
  });

  it('keeps the fences of stores with different prefixes apart', async () => {
    const other = { table, prefix: 'other-app:' };
    await write('shared', 100, 'mine');
    await withFencedTransaction(pool, 'shared', 1, async () => {}, other);
    expect(await fenceOf('other-app:shared')).toBe(1);
    expect(await fenceOf('shared')).toBe(100);
  });

  it('refuses a token that is not an integer and a resource the table cannot keep, before the database', async () => {
    const badToken = await withFencedTransaction(pool, 'r', undefined as never, async () => {}).catch(
      (caught: unknown) => caught,
    );
    expect(isInvalidOptionError(badToken)).toBe(true);
    const longResource = await withFencedTransaction(pool, 'x'.repeat(1_001), 1, async () => {}).catch(
      (caught: unknown) => caught,
    );
    expect(isInvalidKeyError(longResource)).toBe(true);
  });
});
