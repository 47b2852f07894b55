import type { Pool, PoolConnection } from 'mysql2/promise';
import { errorGuard, InvalidOptionError, ResilienceError } from '../../pipeline/errors.ts';
import { StaleTokenError } from '../../strategies/lock/errors.ts';
import { checkStoredKey } from './errors.ts';
import type { MysqlTableOptions } from './options.ts';
import { nowMs, resolveTables } from './schema.ts';

/**
 * `withFencedTransaction`'s transaction ended before its COMMIT: a statement inside it failed in
 * a way that rolls the whole transaction back (InnoDB chose it as a deadlock's victim, say) and
 * the work caught the error and went on, or the work ended it itself (`ROLLBACK`, `COMMIT`, or a
 * statement that commits implicitly, such as DDL). Statements the work ran after that ran on their
 * own, outside any transaction and outside the fence.
 */
export class TransactionAbortedError extends ResilienceError {
  readonly code = 'TRANSACTION_ABORTED';
  constructor(readonly resource: string) {
    super(
      `The fenced transaction on "${resource}" ended before COMMIT: a statement in it failed and rolled it back (what it wrote before was not committed), or the work ended it itself (ROLLBACK, COMMIT, or DDL, which commits implicitly). What the work ran after that ran outside the transaction, unfenced.`,
    );
    this.name = 'TransactionAbortedError';
  }
}

export const isTransactionAbortedError = errorGuard<TransactionAbortedError>('TRANSACTION_ABORTED');

interface FenceStatements {
  readonly prefix: string;
  /**
   * Records the token on the resource's fence row when it is not lower than the one there,
   * creating the row for a new resource. Either way it takes the row's exclusive lock, so
   * concurrent fenced transactions on one resource serialize until the first commits or rolls back.
   */
  readonly fence: string;
  /**
   * The resource's highest token, read under that lock. A locking read: it sees the latest
   * committed token whatever snapshot the transaction has, also when the fence wrote nothing (a
   * lower token changes no column, so the row would not be the transaction's own change).
   */
  readonly highest: string;
}

function fenceStatements(options: MysqlTableOptions | undefined): FenceStatements {
  const { fences, prefix } = resolveTables(options);
  return {
    prefix,
    fence: `INSERT INTO ${fences} (resource, token, fenced_at_ms) VALUES (?, ?, ${nowMs})
ON DUPLICATE KEY UPDATE fenced_at_ms = IF(token <= ?, ${nowMs}, fenced_at_ms), token = GREATEST(token, ?)`,
    highest: `SELECT token FROM ${fences} WHERE resource = ? FOR UPDATE`,
  };
}

const statementsByTables = new Map<string, FenceStatements>();

function statementsFor(options: MysqlTableOptions | undefined): FenceStatements {
  const cacheKey = `${options?.table ?? ''}\0${options?.prefix ?? ''}`;
  let statements = statementsByTables.get(cacheKey);
  if (statements === undefined) {
    statements = fenceStatements(options);
    statementsByTables.set(cacheKey, statements);
  }
  return statements;
}

function checkToken(token: unknown): number {
  if (typeof token !== 'number' || !Number.isSafeInteger(token)) {
    throw new InvalidOptionError(
      'token',
      token,
      'a fencing token (an integer; getLockToken() is undefined outside a lock)',
    );
  }
  return token;
}

/** InnoDB's `SERVER_STATUS_IN_TRANS` flag of an OK packet: a transaction is open on the connection. */
const inTransaction = 0x0001;

const ignore = () => {};

/**
 * Runs `work` in a transaction fenced on `resource` with `token`: START TRANSACTION, fence, work,
 * COMMIT; ROLLBACK when the fence finds a higher token (`StaleTokenError`, `work` never runs) or
 * when `work` throws (its error is rethrown). The job's writes through `connection` commit only if
 * the fence held. Equal tokens pass: one holder may write many times under one lease. Returns what
 * `work` returns.
 *
 * Fenced transactions on one resource wait for each other (the fence row is locked until COMMIT
 * or ROLLBACK), so a holder paused inside one blocks its successor: on MariaDB set
 * `idle_transaction_timeout`, on MySQL a short `wait_timeout`, for the pool's sessions, so such a
 * session is ended and rolled back (the successor waits at most `innodb_lock_wait_timeout`).
 *
 * The fence table is `<table>_fences` (`resil_locks_fences` by default), created by
 * `MysqlLockStore` or the SQL from `mysqlLockStoreSql()`. Pass the same `table`/`prefix` options
 * as the store's.
 *
 * @example
 * import { getLockToken } from 'resil';
 * import { withFencedTransaction } from 'resil/mysql';
 *
 * await withFencedTransaction(pool, 'nightly-report', getLockToken()!, async (connection) => {
 *   await connection.execute('INSERT INTO reports (day, body) VALUES (?, ?)', [day, body]);
 * });
 */
export async function withFencedTransaction<T>(
  pool: Pool,
  resource: string,
  token: number,
  work: (connection: PoolConnection) => Promise<T>,
  options?: MysqlTableOptions,
): Promise<T> {
  checkStoredKey('resource', resource);
  checkToken(token);
  const { prefix, fence, highest } = statementsFor(options);
  const stored = prefix + resource;
  const connection = await pool.getConnection();
  // A connection that breaks while it is checked out may emit 'error' more than once; the pool
  // listens only once. The failure reaches the caller through the next statement.
  connection.connection.on('error', ignore);
  let broken = false;
  try {
    await connection.query('START TRANSACTION');
    await connection.execute(fence, [stored, token, token, token]);
    const [rows] = await connection.execute(highest, [stored]);
    const recorded = Number((rows as Array<{ token: number | string }>)[0]!.token);
    if (recorded > token) throw new StaleTokenError(resource, token, recorded);
    const value = await work(connection);
    const [status] = await connection.query('DO 0');
    if ((Number((status as { serverStatus?: number }).serverStatus) & inTransaction) === 0) {
      throw new TransactionAbortedError(resource);
    }
    await connection.query('COMMIT');
    return value;
  } catch (error) {
    try {
      await connection.query('ROLLBACK');
    } catch {
      // The connection is unusable (the server rolls its transaction back): destroy it rather
      // than return it to the pool.
      broken = true;
    }
    throw error;
  } finally {
    connection.connection.off('error', ignore);
    if (broken) connection.destroy();
    else connection.release();
  }
}
