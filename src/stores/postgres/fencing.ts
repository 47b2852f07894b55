import type { ClientBase, Pool, PoolClient } from 'pg';
import { errorGuard, InvalidOptionError, ResilienceError } from '../../pipeline/errors.ts';
import { StaleTokenError } from '../../strategies/lock/errors.ts';
import { checkStoredKey } from './errors.ts';
import type { PostgresTableOptions } from './options.ts';
import { resolveTables } from './schema.ts';

/**
 * `withFencedTransaction`'s COMMIT rolled back instead: a statement inside the transaction failed
 * and the work caught the error. Nothing the work wrote was committed.
 */
export class TransactionAbortedError extends ResilienceError {
  readonly code = 'TRANSACTION_ABORTED';
  constructor(readonly resource: string) {
    super(
      `The fenced transaction on "${resource}" was rolled back at COMMIT because a statement in it failed; nothing was written.`,
    );
    this.name = 'TransactionAbortedError';
  }
}

export const isTransactionAbortedError = errorGuard<TransactionAbortedError>('TRANSACTION_ABORTED');

interface FenceStatements {
  readonly fence: string;
}

// The upsert takes the row lock on the resource's fence row, so concurrent fenced transactions on
// one resource serialize until the first commits or rolls back.
function fenceStatements(options: PostgresTableOptions | undefined): FenceStatements {
  const { fences } = resolveTables(options);
  return {
    fence: `WITH fenced AS (
  INSERT INTO ${fences} AS fence (resource, token) VALUES ($1::text, $2::bigint)
  ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token, fenced_at = now()
    WHERE fence.token <= EXCLUDED.token
  RETURNING token
)
SELECT (SELECT count(*) FROM fenced)::int AS fenced,
  (SELECT token FROM ${fences} WHERE resource = $1::text) AS highest`,
  };
}

// Raised on purpose after a stale fence: it puts the transaction into the failed state, so every
// later statement fails and COMMIT rolls back, even if the caller catches StaleTokenError.
const abortTransaction = `DO $$ BEGIN RAISE EXCEPTION 'stale fencing token: transaction aborted' USING ERRCODE = 'P0001'; END $$`;

const defaultStatements = fenceStatements(undefined);
const statementsByTables = new Map<string, FenceStatements>();

function statementsFor(options: PostgresTableOptions | undefined): FenceStatements {
  if (options === undefined || (options.schema === undefined && options.table === undefined)) {
    return defaultStatements;
  }
  const cacheKey = `${options.schema ?? ''}\0${options.table ?? ''}`;
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

/**
 * Fences the caller's open transaction on `resource`: records `token` as the resource's highest
 * token, but only when no higher one was recorded. Call it inside `BEGIN` on the connection that
 * does the writes, before them (or anywhere before COMMIT): the writes then commit only if the
 * fence held. Outside a transaction it protects nothing.
 *
 * A stale token throws `StaleTokenError` (code `STALE_TOKEN`) and leaves the transaction
 * aborted: every later statement in it fails and COMMIT rolls it back, so nothing it wrote can
 * commit. Roll it back (`ROLLBACK`) and release the connection; {@link withFencedTransaction}
 * does all of this for you.
 *
 * The fence table is `<table>_fences` (`resil_locks_fences` by default), created by
 * `PostgresLockStore` or the SQL from `postgresLockStoreSql()`. Pass the same `schema`/`table`
 * options as the store's.
 *
 * @example
 * await client.query('BEGIN');
 * try {
 *   await fenceTransaction(client, 'report:2026-01-01', getLockToken()!);
 *   await client.query('INSERT INTO reports (day, body) VALUES ($1, $2)', [day, body]);
 *   await client.query('COMMIT');
 * } catch (error) {
 *   await client.query('ROLLBACK');
 *   throw error;
 * }
 */
export async function fenceTransaction(
  client: ClientBase,
  resource: string,
  token: number,
  options?: PostgresTableOptions,
): Promise<void> {
  checkStoredKey('resource', resource);
  checkToken(token);
  const { fence } = statementsFor(options);
  const result = await client.query<{ fenced: number; highest: string | null }>(fence, [resource, token]);
  const row = result.rows[0]!;
  if (row.fenced === 1) return;
  try {
    await client.query(abortTransaction);
  } catch {
    // Expected: that statement exists to fail.
  }
  throw new StaleTokenError(resource, token, row.highest === null ? undefined : Number(row.highest));
}

/**
 * Runs `work` in a transaction fenced on `resource` with `token`: BEGIN, fence, work, COMMIT;
 * ROLLBACK when the fence finds a higher token (`StaleTokenError`, `work` never runs) or when
 * `work` throws (its error is rethrown). The job's writes through `client` commit only if the
 * fence held. Returns what `work` returns.
 *
 * Fenced transactions on one resource wait for each other (the fence row is locked until COMMIT
 * or ROLLBACK), so a holder paused inside one blocks its successor: set the server's
 * `idle_in_transaction_session_timeout` so such a session is ended and rolled back.
 *
 * @example
 * import { getLockToken } from 'resil';
 * import { withFencedTransaction } from 'resil/postgres';
 *
 * await withFencedTransaction(pool, 'nightly-report', getLockToken()!, async (client) => {
 *   await client.query('INSERT INTO reports (day, body) VALUES ($1, $2)', [day, body]);
 * });
 */
export async function withFencedTransaction<T>(
  pool: Pool,
  resource: string,
  token: number,
  work: (client: PoolClient) => Promise<T>,
  options?: PostgresTableOptions,
): Promise<T> {
  checkStoredKey('resource', resource);
  checkToken(token);
  const client = await pool.connect();
  let broken: Error | undefined;
  // A checked-out client whose connection drops (the server ended an idle-in-transaction session,
  // say) emits 'error'; unheard, that crashes the process. The failure reaches the caller through
  // the next query instead, and the client is destroyed on release.
  const onConnectionError = (error: Error) => {
    broken = error;
  };
  client.on('error', onConnectionError);
  try {
    await client.query('BEGIN');
    await fenceTransaction(client, resource, token, options);
    const value = await work(client);
    const commit = await client.query('COMMIT');
    // COMMIT of a transaction in the failed state answers ROLLBACK instead of raising.
    if (commit.command === 'ROLLBACK') throw new TransactionAbortedError(resource);
    return value;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      // The connection is unusable: destroy it rather than return it to the pool.
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
    throw error;
  } finally {
    client.off('error', onConnectionError);
    client.release(broken);
  }
}
