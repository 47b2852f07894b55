import type { Pool, QueryResult, QueryResultRow } from 'pg';
import { parseDuration } from '../../pipeline/duration.ts';
import { InvalidOptionError } from '../../pipeline/errors.ts';
import { StaleTokenError } from '../../strategies/lock/errors.ts';
import type { RunLedger, RunRecord } from '../../strategies/lock/run-ledger.ts';
import type { LeaseInfo, LockStore } from '../../strategies/lock/store.ts';
import { postgresLockStoreDefaults } from './defaults.ts';
import { storeUnavailable } from './errors.ts';
import type { PostgresLockStoreOptions } from './options.ts';
import { type PostgresTables, resolveTables, setupSql } from './schema.ts';

/** Epoch ms (a parameter) to timestamptz; exact to the microsecond. */
const fromMs = (parameter: string) => `to_timestamp(${parameter}::float8 / 1000)`;
/** timestamptz to epoch ms, rounded to the microsecond so whole milliseconds come back whole. */
const toMs = (column: string) => `round((extract(epoch FROM ${column}) * 1000)::numeric, 3)::float8`;
const msInterval = (parameter: string) => `${parameter}::float8 * interval '1 millisecond'`;

// Every statement reads the clock with now(). Each runs alone in autocommit, so now() is the
// instant the statement started, after the client sent it: expiry is judged by the database's
// clock, never an instance's, and one statement sees one instant everywhere it asks
// (clock_timestamp() would move between the expiry check and the new expiry). If the statement
// waits for a row lock, now() stays at its start: a lease then looks alive a little longer, the
// safe direction.
function statements(t: PostgresTables) {
  return {
    // A new key's first token is the database clock in microseconds, not 1: if its row is ever
    // deleted, the next token is still higher than every one issued before.
    //
    // The NOT EXISTS pre-check makes a poll on a held key a pure read: no row lock, no WAL flush
    // at commit. It reads the statement's snapshot, so it may miss a release that just committed
    // (the poll then fails, as if it came a moment earlier); the ON CONFLICT condition, checked
    // under the row lock, is what decides who wins.
    acquire: `INSERT INTO ${t.leases} AS lease (key, owner, token, expires_at)
SELECT $1::text, $2::text, floor(extract(epoch FROM now()) * 1000000)::bigint, now() + ${msInterval('$3')}
WHERE NOT EXISTS (
  SELECT 1 FROM ${t.leases} WHERE key = $1::text AND owner IS NOT NULL AND expires_at > now()
)
ON CONFLICT (key) DO UPDATE
  SET owner = EXCLUDED.owner, token = lease.token + 1, expires_at = EXCLUDED.expires_at
  WHERE lease.owner IS NULL OR lease.expires_at <= now()
RETURNING token`,
    renew: `UPDATE ${t.leases} SET expires_at = now() + ${msInterval('$3')}
WHERE key = $1::text AND owner = $2::text AND expires_at > now()`,
    // The row (and its token) stays: only the lease is cleared, so tokens keep increasing.
    release: `UPDATE ${t.leases} SET owner = NULL, expires_at = NULL WHERE key = $1::text AND owner = $2::text`,
    inspect: `SELECT owner, token, (extract(epoch FROM expires_at) * 1000)::float8 AS expires_at
FROM ${t.leases} WHERE key = $1::text AND owner IS NOT NULL AND expires_at > now()`,
    now: 'SELECT (extract(epoch FROM now()) * 1000)::float8 AS now',
    // One statement: the guard raises the job's highest token (row-locked, so concurrent records
    // of one job serialize) and everything else happens only when it let the record through.
    // Completed occurrences expire `retentionMs` after their instant; each record also drops the
    // job's occurrences that are out of its own retention window. The trims cannot see the rows
    // inserted by the same statement, hence `limit - 1` and the occurrence excluded from the sweep.
    recordRun: `WITH guard AS (
  INSERT INTO ${t.ledger} AS ledger (job, highest_token) VALUES ($1::text, $2::bigint)
  ON CONFLICT (job) DO UPDATE SET highest_token = EXCLUDED.highest_token, updated_at = now()
    WHERE ledger.highest_token <= EXCLUDED.highest_token
  RETURNING job
), run AS (
  INSERT INTO ${t.runs} (job, scheduled_at, outcome, token, instance, started_at, ended_at, error)
  SELECT $1::text, ${fromMs('$3')}, $4::text, $2::bigint, $5::text, ${fromMs('$6')}, ${fromMs('$7')}, $8::text
  FROM guard
), trim_history AS (
  DELETE FROM ${t.runs}
  WHERE job = $1::text AND EXISTS (SELECT 1 FROM guard)
    AND id NOT IN (SELECT id FROM ${t.runs} WHERE job = $1::text ORDER BY id DESC LIMIT $10::int - 1)
), complete AS (
  INSERT INTO ${t.completed} (job, scheduled_at, token, expires_at)
  SELECT $1::text, ${fromMs('$3')}, $2::bigint, ${fromMs('$3')} + ${msInterval('$9')}
  FROM guard
  WHERE $4::text = 'success' AND ${fromMs('$3')} + ${msInterval('$9')} > now()
  ON CONFLICT (job, scheduled_at) DO UPDATE
    SET token = EXCLUDED.token, completed_at = now(), expires_at = EXCLUDED.expires_at
), expire AS (
  DELETE FROM ${t.completed}
  WHERE job = $1::text AND (expires_at <= now() OR scheduled_at + ${msInterval('$9')} <= now())
    AND scheduled_at <> ${fromMs('$3')}
    AND EXISTS (SELECT 1 FROM guard)
)
SELECT (SELECT count(*) FROM guard)::int AS recorded,
  (SELECT highest_token FROM ${t.ledger} WHERE job = $1::text) AS highest`,
    isCompleted: `SELECT 1 FROM ${t.completed}
WHERE job = $1::text AND scheduled_at = ${fromMs('$2')} AND expires_at > now()`,
    lastCompleted: `SELECT ${toMs('max(scheduled_at)')} AS last
FROM ${t.completed} WHERE job = $1::text AND expires_at > now()`,
    runHistory: `SELECT job, ${toMs('scheduled_at')} AS scheduled_at, outcome, token, instance,
  ${toMs('started_at')} AS started_at, ${toMs('ended_at')} AS ended_at, error
FROM ${t.runs} WHERE job = $1::text ORDER BY id DESC LIMIT $2::int`,
  };
}

// A pool emits 'error' when an idle client loses its connection (the server restarted, say);
// with no listener that crashes the process. The store's callers see the failure on their next
// operation instead, as StoreUnavailableError.
const poolsWithListener = new WeakSet<object>();
const ignore = () => {};

function checkRecord(record: RunRecord): void {
  if (record.outcome !== 'success' && record.outcome !== 'failure') {
    throw new InvalidOptionError('record.outcome', record.outcome, "'success' or 'failure'");
  }
  if (!Number.isSafeInteger(record.token)) {
    throw new InvalidOptionError('record.token', record.token, 'a fencing token (an integer)');
  }
  for (const field of ['scheduledAt', 'startedAt', 'endedAt'] as const) {
    if (!Number.isFinite(record[field])) {
      throw new InvalidOptionError(`record.${field}`, record[field], 'epoch milliseconds');
    }
  }
}

function checkCount(option: string, value: number, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new InvalidOptionError(option, value, `an integer >= ${min}`);
  }
  return value;
}

/**
 * A {@link LockStore} and {@link RunLedger} in PostgreSQL, for locking across processes and
 * machines. Every operation is one statement (one round trip); expiry is judged by the
 * database's clock; fencing tokens are issued by the statement that takes the lease and only ever
 * increase per key, also across expiry and release.
 *
 * The tables are created on first use unless `createTable` is false (see
 * `postgresLockStoreSql()`). When the database cannot be reached, or does not answer within
 * `timeout`, operations fail with `StoreUnavailableError`: the lock fails closed.
 *
 * @example
 * import pg from 'pg';
 * import { PostgresLockStore } from 'resil/postgres';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 2_000 });
 * const store = new PostgresLockStore(pool, { schema: 'ops' });
 * const pipeline = new ResiliencePipelineBuilder().addLock({ key: () => 'nightly-report', store }).build();
 */
export class PostgresLockStore implements LockStore, RunLedger {
  readonly #pool: Pool;

  /** The pool the store was given. The store never ends it; its owner does. */
  get pool(): Pool {
    return this.#pool;
  }
  readonly #tables: PostgresTables;
  readonly #sql: ReturnType<typeof statements>;
  readonly #timeoutMs: number;
  #ready: boolean;
  #setup: Promise<void> | undefined;

  /**
   * @param pool a `pg.Pool` you configured (TLS, credentials and timeouts are yours). The store
   *   never closes it.
   */
  constructor(pool: Pool, options: PostgresLockStoreOptions = {}) {
    if (typeof pool !== 'object' || pool === null || typeof pool.query !== 'function') {
      throw new InvalidOptionError('pool', pool, 'a pg.Pool');
    }
    this.#pool = pool;
    this.#tables = resolveTables(options);
    this.#sql = statements(this.#tables);
    this.#timeoutMs = parseDuration(
      options.timeout ?? postgresLockStoreDefaults.timeout,
      'timeout',
      1,
      86_400_000,
    );
    const createTable = options.createTable ?? postgresLockStoreDefaults.createTable;
    if (typeof createTable !== 'boolean') {
      throw new InvalidOptionError('createTable', createTable, 'a boolean');
    }
    this.#ready = !createTable;
    if (typeof pool.on === 'function' && !poolsWithListener.has(pool)) {
      poolsWithListener.add(pool);
      pool.on('error', ignore);
    }
  }

  async acquire(key: string, owner: string, ttlMs: number): Promise<number | undefined> {
    const result = await this.#query<{ token: string }>('acquire', this.#sql.acquire, [key, owner, ttlMs]);
    const row = result.rows[0];
    return row === undefined ? undefined : Number(row.token);
  }

  async renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const result = await this.#query('renew', this.#sql.renew, [key, owner, ttlMs]);
    return result.rowCount === 1;
  }

  async release(key: string, owner: string): Promise<void> {
    await this.#query('release', this.#sql.release, [key, owner]);
  }

  async inspect(key: string): Promise<LeaseInfo | undefined> {
    const result = await this.#query<{ owner: string; token: string; expires_at: number }>(
      'inspect',
      this.#sql.inspect,
      [key],
    );
    const row = result.rows[0];
    if (row === undefined) return undefined;
    return { owner: row.owner, token: Number(row.token), expiresAt: new Date(Number(row.expires_at)) };
  }

  /** The database's clock (`now()`), in epoch ms. */
  async now(): Promise<number> {
    const result = await this.#query<{ now: number }>('now', this.#sql.now, []);
    return Number(result.rows[0]!.now);
  }

  async isCompleted(job: string, scheduledAt: number): Promise<boolean> {
    const result = await this.#query('isCompleted', this.#sql.isCompleted, [job, scheduledAt]);
    return result.rows.length > 0;
  }

  async recordRun(
    record: RunRecord,
    options: { retentionMs?: number; historyLimit?: number } = {},
  ): Promise<void> {
    checkRecord(record);
    const retentionMs = parseDuration(
      options.retentionMs ?? postgresLockStoreDefaults.retentionMs,
      'retentionMs',
      0,
      Number.MAX_SAFE_INTEGER,
    );
    const historyLimit = checkCount(
      'historyLimit',
      options.historyLimit ?? postgresLockStoreDefaults.historyLimit,
      1,
    );
    const result = await this.#query<{ recorded: number; highest: string | null }>(
      'recordRun',
      this.#sql.recordRun,
      [
        record.job,
        record.token,
        record.scheduledAt,
        record.outcome,
        record.instance,
        record.startedAt,
        record.endedAt,
        record.error ?? null,
        retentionMs,
        historyLimit,
      ],
    );
    const row = result.rows[0]!;
    if (row.recorded === 0) {
      throw new StaleTokenError(
        record.job,
        record.token,
        row.highest === null ? undefined : Number(row.highest),
      );
    }
  }

  async runHistory(
    job: string,
    limit: number = postgresLockStoreDefaults.historyLimit,
  ): Promise<RunRecord[]> {
    checkCount('limit', limit, 0);
    const result = await this.#query<{
      job: string;
      scheduled_at: number;
      outcome: RunRecord['outcome'];
      token: string;
      instance: string;
      started_at: number;
      ended_at: number;
      error: string | null;
    }>('runHistory', this.#sql.runHistory, [job, limit]);
    return result.rows.map((row) => {
      const record: RunRecord = {
        job: row.job,
        scheduledAt: Number(row.scheduled_at),
        outcome: row.outcome,
        token: Number(row.token),
        instance: row.instance,
        startedAt: Number(row.started_at),
        endedAt: Number(row.ended_at),
      };
      return row.error === null ? record : { ...record, error: row.error };
    });
  }

  async lastCompleted(job: string): Promise<number | undefined> {
    const result = await this.#query<{ last: number | null }>('lastCompleted', this.#sql.lastCompleted, [
      job,
    ]);
    const last = result.rows[0]?.last;
    return last === null || last === undefined ? undefined : Number(last);
  }

  /**
   * Creates the tables if they are missing. Operations do this on their own on first use (unless
   * `createTable` is false); call it to fail at start-up rather than on the first lock.
   */
  async ensureTables(): Promise<void> {
    await this.#bounded('ensureTables', this.#createTables());
  }

  #createTables(): Promise<void> {
    this.#setup ??= this.#runSetup().then(
      () => {
        this.#ready = true;
      },
      (error: unknown) => {
        this.#setup = undefined;
        throw error;
      },
    );
    return this.#setup;
  }

  async #runSetup(): Promise<void> {
    const sql = setupSql(this.#tables);
    try {
      await this.#pool.query(sql);
    } catch (error) {
      // Someone creating the same tables without our advisory lock (a migration running the README
      // SQL, say) can still collide on the catalog; the second attempt finds the tables there.
      const code = (error as { code?: unknown }).code;
      if (code !== '23505' && code !== '42P07') throw error;
      await this.#pool.query(sql);
    }
  }

  #query<R extends QueryResultRow = QueryResultRow>(
    operation: string,
    text: string,
    values: unknown[],
  ): Promise<QueryResult<R>> {
    const work = this.#ready
      ? this.#pool.query<R>(text, values)
      : this.#createTables().then(() => this.#pool.query<R>(text, values));
    return this.#bounded(operation, work);
  }

  // The query itself cannot be cancelled from here; when the bound runs out the caller gets
  // StoreUnavailableError at once and the late answer is dropped. A lease acquired by an answer
  // that came too late expires on its own after ttl.
  #bounded<T>(operation: string, work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(storeUnavailable(operation, new Error(`no answer within ${this.#timeoutMs} ms`)));
      }, this.#timeoutMs);
      work.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(storeUnavailable(operation, error));
        },
      );
    });
  }
}
