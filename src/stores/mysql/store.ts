import type { Pool, PoolConnection } from 'mysql2/promise';
import {
  type ClaimRequest,
  type ClaimResult,
  checkInstanceInfo,
  type InstanceInfo,
  type InstanceRegistry,
  type JobPause,
  type LedgerTrim,
  type OccurrenceLease,
  type RegisteredInstance,
  type RunLedger,
  type RunRecord,
  type RunResult,
  runRecordOf,
} from '../../ledger/contract.ts';
import { type Applied, LedgerEngine } from '../../ledger/engine.ts';
import { parseDuration } from '../../pipeline/duration.ts';
import { InvalidOptionError } from '../../pipeline/errors.ts';
import type { StrategyEnvironment } from '../../pipeline/strategy.ts';
import { withDeadline } from '../../pipeline/time.ts';
import type { CircuitController } from '../../strategies/circuit-breaker/controller.ts';
import { SharedCircuitBreaker } from '../../strategies/circuit-breaker/fleet.ts';
import type {
  CircuitProbeClaim,
  CircuitSync,
  CircuitSyncReply,
  LocalCircuitBreaker,
  SharedCircuitStore,
  SharedCircuits,
} from '../../strategies/circuit-breaker/shared.ts';
import { isStoreSetupError, StaleTokenError, type StoreSetupError } from '../../strategies/lock/errors.ts';
import type { LeaseInfo, LockStore } from '../../strategies/lock/store.ts';
import type { RateLimiter } from '../../strategies/rate-limiter/limiter.ts';
import type { RateLimiterStrategyOptions } from '../../strategies/rate-limiter/options.ts';
import { CallBatches } from '../call-batches.ts';
import { shownArgument } from '../credentials.ts';
import {
  checkClaimRequest,
  checkCount,
  checkDurationMs,
  checkFinish,
  checkOccurrenceLease,
  checkString,
} from '../ledger-arguments.ts';
import { mysqlLedgerBatchLimits, mysqlLockStoreDefaults } from './defaults.ts';
import { checkStoredKey, isLockContention, isMissingTable, isServerError, storeError } from './errors.ts';
import { applyLedgerBatch, type LedgerCall, ledgerStatements, text } from './ledger.ts';
import type { MysqlLockStoreOptions } from './options.ts';
import { ReleasePolls } from './release-notifications.ts';
import {
  createStatements,
  isDuplicateColumnError,
  type MysqlTables,
  nowMs,
  nowUs,
  resolveTables,
  upgradeStatements,
} from './schema.ts';
import {
  type CircuitStatements,
  circuitStatements,
  claimMysqlProbe,
  syncMysqlCircuit,
} from './shared-circuit.ts';
import { mysqlSharedRateLimiter } from './shared-rate-limit.ts';

// Each lease statement runs alone in autocommit, and reads the clock as UTC_TIMESTAMP (nowMs):
// the instant the statement started, one value everywhere in it, so the expiry check and the new
// expiry use one instant. A statement that waits for a row lock keeps its start time, which only
// makes a lease look alive a little longer: the safe direction.
function statements(t: MysqlTables) {
  const free = `(expires_at_ms IS NULL OR expires_at_ms <= ${nowMs})`;
  return {
    // One statement for a new key, a free one and a held one. MySQL evaluates the assignments in
    // order, so `free` is tested before expires_at_ms, written last, changes. The token comes back
    // as the statement's insert id (LAST_INSERT_ID(expr)): a new key's first one is the clock in
    // microseconds (so even a deleted row never brings tokens back below ones issued before), a
    // free key's the next one, and a held key sets it to 0: nothing was acquired, nor written.
    acquire: `INSERT INTO ${t.leases} (lock_key, owner, token, expires_at_ms)
VALUES (?, ?, LAST_INSERT_ID(${nowUs}), ${nowMs} + ?)
ON DUPLICATE KEY UPDATE
  owner = IF(${free}, ?, owner),
  current_job = IF(${free}, NULL, current_job),
  current_at_ms = IF(${free}, NULL, current_at_ms),
  token = IF(${free}, LAST_INSERT_ID(token + 1), token + LAST_INSERT_ID(0)),
  expires_at_ms = IF(${free}, ${nowMs} + ?, expires_at_ms)`,
    renew: `UPDATE ${t.leases} SET expires_at_ms = ${nowMs} + ?
WHERE lock_key = ? AND owner = ? AND expires_at_ms > ${nowMs}`,
    // The row (and its token) stays: only the lease is cleared, so tokens keep increasing.
    release: `UPDATE ${t.leases} SET owner = NULL, expires_at_ms = NULL WHERE lock_key = ? AND owner = ?`,
    inspect: `SELECT owner, token, expires_at_ms FROM ${t.leases}
WHERE lock_key = ? AND owner IS NOT NULL AND expires_at_ms > ${nowMs}`,
    now: `SELECT ${nowMs} AS now_ms`,
    runHistory: `SELECT scheduled_at_ms, state, reason, token, instance, started_at_ms, ended_at_ms, error, takeovers,
  run_trigger, actor, trigger_reason
FROM ${t.occurrences} WHERE lock_key = ? AND job = ? ORDER BY scheduled_at_ms DESC LIMIT ?`,
    lastCompleted: `SELECT MAX(scheduled_at_ms) AS last FROM ${t.occurrences}
WHERE lock_key = ? AND job = ? AND state = 'success'`,
    // Read by a claim, under the key's row lock, in the same transaction as its decision.
    pauseJob: `INSERT INTO ${t.pauses} (lock_key, job, paused_at_ms, paused_by, reason) VALUES (?, ?, ${nowMs}, ?, ?)
ON DUPLICATE KEY UPDATE paused_at_ms = ${nowMs}, paused_by = ?, reason = ?`,
    resumeJob: `DELETE FROM ${t.pauses} WHERE lock_key = ? AND job = ?`,
    pauseOf: `SELECT paused_at_ms, paused_by, reason FROM ${t.pauses} WHERE lock_key = ? AND job = ?`,
    // A heartbeat also drops the rows of instances that expired, so the table stays the fleet's size.
    dropExpiredInstances: `DELETE FROM ${t.instances} WHERE expires_at_ms <= ${nowMs} AND instance <> ?`,
    registerInstance: `REPLACE INTO ${t.instances}
  (instance, host, pid, version, started_at_ms, jobs, clock_offset_ms, last_seen_at_ms, expires_at_ms, definitions)
VALUES (?, ?, ?, ?, ?, ?, ?, ${nowMs}, ${nowMs} + ?, ?)`,
    removeInstance: `DELETE FROM ${t.instances} WHERE instance = ?`,
    listInstances: `SELECT instance, host, pid, version, started_at_ms, jobs, clock_offset_ms, last_seen_at_ms,
  definitions
FROM ${t.instances} WHERE expires_at_ms > ${nowMs} AND LEFT(instance, ?) = ? ORDER BY instance`,
  };
}

const ignore = () => {};

/** How many times a batch's transaction is run when it keeps losing to row locks (within its bound). */
const maxLedgerAttempts = 3;

/** An occurrence's instant as the tables keep it: whole epoch ms (the scheduler's always are). */
function checkWholeMs(option: string, value: number): void {
  if (!Number.isSafeInteger(value)) throw new InvalidOptionError(option, value, 'whole epoch milliseconds');
}

/** What the store binds to a statement's placeholders. */
type Parameter = string | number | null;

/** A number column: a BIGINT is a string when the pool has `bigNumberStrings`. */
type Numeric = number | string;

/**
 * A {@link LockStore} and {@link RunLedger} in MySQL 8 or MariaDB 10.6+ (InnoDB), for locking
 * across processes and machines. Every lease operation is one statement (one round trip); expiry
 * is judged by the database's clock; fencing tokens are issued by the statement that takes the
 * lease and only ever increase per key, also across expiry, release and a server restart.
 *
 * The run ledger's decisions (src/ledger/decide.ts) run in the process, many per transaction
 * (ledger.ts): each transaction first locks its keys' lease rows, so claims, renewals and finishes
 * of one key serialize, and plain leases and claims exclude each other.
 *
 * The tables are created on first use unless `createTable` is false (see `mysqlLockStoreSql()`),
 * and again when dropped later. When the database cannot be reached, or does not answer within
 * `timeout`, operations fail with `StoreUnavailableError`; when the store cannot be set up (no
 * database, a missing privilege), with `StoreSetupError`, saying what to do. Either way the lock
 * fails closed.
 *
 * @example
 * import mysql from 'mysql2/promise';
 * import { MysqlLockStore } from 'resil/mysql';
 *
 * const pool = mysql.createPool({ uri: process.env.MYSQL_URL, connectTimeout: 2_000 });
 * const store = new MysqlLockStore(pool, { table: 'ops_locks' });
 * const pipeline = new ResiliencePipelineBuilder().addLock({ key: () => 'nightly-report', store }).build();
 */
export class MysqlLockStore
  implements LockStore, RunLedger, InstanceRegistry, SharedCircuitStore, SharedCircuits
{
  readonly storeName = 'MysqlLockStore';
  readonly #pool: Pool;
  readonly #tables: MysqlTables;
  readonly #prefix: string;
  readonly #sql: ReturnType<typeof statements>;
  readonly #timeoutMs: number;
  readonly #createTable: boolean;
  readonly #releases: ReleasePolls;
  #ready: boolean;
  /** The run ledger's decisions, many per transaction (see ledger.ts and {@link CallBatches}). */
  readonly #ledger: LedgerEngine;
  readonly #ledgerSql: ReturnType<typeof ledgerStatements>;
  readonly #ledgerCalls: CallBatches<LedgerCall, Applied>;
  #setup: Promise<void> | undefined;
  /** The last operation's permanent set-up failure, until an operation succeeds: `now()` reports it. */
  #setupError: StoreSetupError | undefined;

  /**
   * @param pool a `mysql2/promise` pool you configured (TLS, credentials and timeouts are yours).
   *   The store never closes it.
   */
  constructor(pool: Pool, options: MysqlLockStoreOptions = {}) {
    if (
      typeof pool !== 'object' ||
      pool === null ||
      typeof pool.getConnection !== 'function' ||
      typeof pool.execute !== 'function' ||
      // mysql2's callback pool: its promise pool is pool.promise().
      typeof (pool as { promise?: unknown }).promise === 'function'
    ) {
      throw new InvalidOptionError(
        'pool',
        shownArgument(pool),
        'a mysql2/promise pool (createPool from mysql2/promise)',
      );
    }
    this.#pool = pool;
    this.#tables = resolveTables(options);
    this.#prefix = this.#tables.prefix;
    this.#sql = statements(this.#tables);
    this.#timeoutMs = parseDuration(
      options.timeout ?? mysqlLockStoreDefaults.timeout,
      'timeout',
      1,
      86_400_000,
    );
    const createTable = options.createTable ?? mysqlLockStoreDefaults.createTable;
    if (typeof createTable !== 'boolean') {
      throw new InvalidOptionError('createTable', createTable, 'a boolean');
    }
    this.#createTable = createTable;
    this.#ready = !createTable;
    this.#releases = new ReleasePolls(pool, this.#tables, this.#timeoutMs);
    this.#ledgerSql = ledgerStatements(this.#tables);
    this.#ledgerCalls = new CallBatches({
      send: (calls) => this.#applyLedgerCalls(calls),
      limits: mysqlLedgerBatchLimits,
      retryAlone: true,
    });
    this.#ledger = new LedgerEngine({
      apply: (target, decide) => this.#ledgerCalls.run({ target, decide }),
    });
  }

  /** The pool the store was given. The store never ends it; its owner does. */
  get pool(): Pool {
    return this.#pool;
  }

  /**
   * Throws `InvalidKeyError` unless the tables can keep `key`: at most 1000 bytes of UTF-8, no
   * lone surrogate.
   */
  checkKey(key: string): void {
    checkStoredKey('key', key);
  }

  async acquire(key: string, owner: string, ttlMs: number): Promise<number | undefined> {
    const stored = this.#key('key', key);
    const result = await this.#write('acquire', this.#sql.acquire, [stored, owner, ttlMs, owner, ttlMs]);
    const token = Number(result.insertId);
    return token === 0 ? undefined : token;
  }

  async renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const result = await this.#write('renew', this.#sql.renew, [ttlMs, this.#key('key', key), owner]);
    return result.affectedRows === 1;
  }

  async release(key: string, owner: string): Promise<void> {
    await this.#write('release', this.#sql.release, [this.#key('key', key), owner]);
  }

  /**
   * Wakes a waiter when the lease on `key` is released (see `LockStore.onRelease`): while someone
   * waits, the store reads the waited keys' leases every 100 ms, in one statement, and wakes the
   * waiters of a key found released. Best effort: the waiters poll anyway.
   */
  onRelease(key: string, listener: () => void): () => void {
    return this.#releases.subscribe(this.#key('key', key), listener);
  }

  /** Stops reading for waiters (they go on polling). The pool stays open; end it yourself. */
  async close(): Promise<void> {
    this.#releases.close();
  }

  async inspect(key: string): Promise<LeaseInfo | undefined> {
    const [row] = await this.#read<{ owner: Buffer; token: Numeric; expires_at_ms: Numeric }>(
      'inspect',
      this.#sql.inspect,
      [this.#key('key', key)],
    );
    if (row === undefined) return undefined;
    return {
      owner: text(row.owner)!,
      token: Number(row.token),
      expiresAt: new Date(Number(row.expires_at_ms)),
    };
  }

  /**
   * The database's clock (`UTC_TIMESTAMP`), in epoch ms. While the last operation failed because
   * the store is not set up (and cannot set itself up), it looks again first, and fails with that
   * `StoreSetupError` until the store is usable: a probe of `now()` (`resil run --metrics`) then
   * reports the store as down.
   */
  async now(): Promise<number> {
    if (this.#setupError !== undefined) {
      if (this.#createTable) {
        this.#ready = false;
        this.#setup = undefined;
      }
      await this.#bounded('now', () => (this.#createTable ? this.#createTables() : this.#checkTables()));
      this.#setupError = undefined;
    }
    const [row] = await this.#read<{ now_ms: Numeric }>('now', this.#sql.now, []);
    return Number(row!.now_ms);
  }

  async claimOccurrence(request: ClaimRequest): Promise<ClaimResult> {
    const claim = checkClaimRequest(request, checkStoredKey, mysqlLockStoreDefaults.retentionMs);
    checkWholeMs('request.scheduledAt', claim.scheduledAt);
    return this.#ledger.claimOccurrence(claim);
  }

  async renewOccurrence(lease: OccurrenceLease, ttlMs: number): Promise<boolean> {
    checkOccurrenceLease(lease, checkStoredKey);
    checkWholeMs('lease.scheduledAt', lease.scheduledAt);
    return this.#ledger.renewOccurrence(lease, checkDurationMs('ttlMs', ttlMs, 1));
  }

  async finishOccurrence(lease: OccurrenceLease, result: RunResult, options: LedgerTrim = {}): Promise<void> {
    checkOccurrenceLease(lease, checkStoredKey);
    checkWholeMs('lease.scheduledAt', lease.scheduledAt);
    const trim = checkFinish(result, options, mysqlLockStoreDefaults.retentionMs);
    const highest = await this.#ledger.finishOccurrence(lease, result, trim);
    if (highest !== undefined) throw new StaleTokenError(lease.job, lease.token, highest);
  }

  async runHistory(job: string, options: { key?: string; limit?: number } = {}): Promise<RunRecord[]> {
    checkStoredKey('job', job);
    const key = this.#key('key', options.key ?? job);
    const limit = checkCount('limit', options.limit ?? mysqlLockStoreDefaults.historyLimit, 0);
    // LIMIT as a string: some MySQL 8 versions refuse a DOUBLE there, and a JS number is sent as one.
    const rows = await this.#read<{
      scheduled_at_ms: Numeric;
      state: RunRecord['outcome'];
      reason: RunRecord['reason'] | null;
      token: Numeric | null;
      instance: Buffer | null;
      started_at_ms: Numeric | null;
      ended_at_ms: Numeric | null;
      error: string | null;
      takeovers: number;
      run_trigger: RunRecord['trigger'] | null;
      actor: string | null;
      trigger_reason: string | null;
    }>('runHistory', this.#sql.runHistory, [key, job, String(limit)]);
    return rows.map((row) =>
      runRecordOf({
        job,
        scheduledAt: row.scheduled_at_ms,
        outcome: row.state,
        reason: row.reason,
        token: row.token,
        instance: text(row.instance),
        startedAt: row.started_at_ms,
        endedAt: row.ended_at_ms,
        error: row.error,
        takeovers: row.takeovers,
        trigger: row.run_trigger,
        actor: row.actor,
        triggerReason: row.trigger_reason,
      }),
    );
  }

  async lastCompleted(job: string, options: { key?: string } = {}): Promise<number | undefined> {
    checkStoredKey('job', job);
    const key = this.#key('key', options.key ?? job);
    const [row] = await this.#read<{ last: Numeric | null }>('lastCompleted', this.#sql.lastCompleted, [
      key,
      job,
    ]);
    return row?.last == null ? undefined : Number(row.last);
  }

  /** Pauses the job under `key` fleet-wide, at the database's clock (see `RunLedger.pauseJob`). */
  async pauseJob(job: string, options: { key: string; by: string; reason?: string }): Promise<void> {
    checkStoredKey('job', job);
    const key = this.#key('key', options?.key);
    const by = checkString('by', options.by);
    const reason = options.reason === undefined ? null : checkString('reason', options.reason);
    await this.#write('pauseJob', this.#sql.pauseJob, [key, job, by, reason, by, reason]);
  }

  async resumeJob(job: string, options: { key: string }): Promise<void> {
    checkStoredKey('job', job);
    await this.#write('resumeJob', this.#sql.resumeJob, [this.#key('key', options?.key), job]);
  }

  async pauseOf(job: string, options: { key: string }): Promise<JobPause | undefined> {
    checkStoredKey('job', job);
    const [row] = await this.#read<{ paused_at_ms: Numeric; paused_by: string; reason: string | null }>(
      'pauseOf',
      this.#sql.pauseOf,
      [this.#key('key', options?.key), job],
    );
    if (row === undefined) return undefined;
    return {
      pausedAt: Number(row.paused_at_ms),
      by: row.paused_by,
      ...(row.reason === null ? {} : { reason: row.reason }),
    };
  }

  /** Registers the instance, seen at the database's clock, until `ttlMs` after it (see `InstanceRegistry`). */
  async registerInstance(info: InstanceInfo, options: { ttlMs: number }): Promise<void> {
    const { instance, host, pid, version, startedAt, jobs, clockOffsetMs, definitions } = checkInstanceInfo(
      info,
      options?.ttlMs,
    );
    const stored = this.#key('info.instance', instance);
    await this.#write('registerInstance', this.#sql.dropExpiredInstances, [stored]);
    await this.#write('registerInstance', this.#sql.registerInstance, [
      stored,
      host,
      pid,
      version,
      startedAt,
      jobs,
      clockOffsetMs,
      options.ttlMs,
      definitions ?? null,
    ]);
  }

  async removeInstance(instance: string): Promise<void> {
    await this.#write('removeInstance', this.#sql.removeInstance, [this.#key('instance', instance)]);
  }

  /** The instances whose last heartbeat is within their ttl by the database's clock, by name. */
  async listInstances(): Promise<RegisteredInstance[]> {
    const prefixBytes = Buffer.byteLength(this.#prefix);
    const rows = await this.#read<{
      instance: Buffer;
      host: string;
      pid: number;
      version: string;
      started_at_ms: Numeric;
      jobs: number;
      clock_offset_ms: number;
      last_seen_at_ms: Numeric;
      definitions: string | null;
    }>('listInstances', this.#sql.listInstances, [prefixBytes, this.#prefix]);
    return rows.map((row) => ({
      instance: text(row.instance.subarray(prefixBytes))!,
      host: row.host,
      pid: Number(row.pid),
      version: row.version,
      startedAt: Number(row.started_at_ms),
      jobs: Number(row.jobs),
      clockOffsetMs: Number(row.clock_offset_ms),
      lastSeenAt: Number(row.last_seen_at_ms),
      ...(row.definitions === null ? {} : { definitions: row.definitions }),
    }));
  }

  /**
   * A rate limit every process on this database shares: the rate limiter strategy's `store` option
   * (see shared-rate-limit.ts). One statement per call, on the database's clock.
   */
  sharedRateLimiter(options: RateLimiterStrategyOptions, environment: StrategyEnvironment): RateLimiter {
    return mysqlSharedRateLimiter(
      options,
      environment,
      this.#tables.rateLimits,
      (key) => this.#key('key', key),
      (sql, values) => this.#write('rateLimit', sql, values),
    );
  }

  /**
   * Creates the tables if they are missing. Operations do this on their own on first use (unless
   * `createTable` is false); call it to fail at start-up rather than on the first lock.
   */
  async ensureTables(): Promise<void> {
    await this.#bounded('ensureTables', () => this.#createTables());
  }

  /** A sync of a shared circuit breaker (`circuitBreaker.store`): see shared-circuit.ts. */
  async syncCircuit(key: string, sync: CircuitSync): Promise<CircuitSyncReply> {
    const circuitKey = this.#key('key', key);
    return this.#inCircuit('syncCircuit', (connection, expired) =>
      syncMysqlCircuit(connection, this.#circuitSql, circuitKey, sync, expired),
    );
  }

  /** The probe lease of a shared circuit breaker: see shared-circuit.ts. */
  async claimProbe(key: string, claim: { owner: string; leaseMs: number }): Promise<CircuitProbeClaim> {
    const circuitKey = this.#key('key', key);
    return this.#inCircuit('claimProbe', (connection, expired) =>
      claimMysqlProbe(connection, this.#circuitSql, circuitKey, claim, expired),
    );
  }

  /** A circuit breaker sharing its circuit through this store (`circuitBreaker.store`). */
  sharedCircuitBreaker(breaker: LocalCircuitBreaker): CircuitController {
    return new SharedCircuitBreaker(breaker, this);
  }

  #inCircuit<T>(operation: string, use: (connection: PoolConnection, expired: () => boolean) => Promise<T>) {
    return this.#bounded(operation, (expired) =>
      this.#withTables(() => this.#withConnection(expired, (connection) => use(connection, expired))),
    );
  }

  get #circuitSql(): CircuitStatements {
    this.#circuitStatements ??= circuitStatements(this.#tables.circuits);
    return this.#circuitStatements;
  }
  #circuitStatements: CircuitStatements | undefined;

  /** `value` checked as a key the tables can keep, with the store's prefix. */
  #key(option: string, value: unknown): string {
    return this.#prefix + checkStoredKey(option, value);
  }

  #createTables(): Promise<void> {
    // CREATE TABLE IF NOT EXISTS takes the table's metadata lock: processes starting at once create
    // each table one after the other, and the later ones find it there.
    this.#setup ??= (async () => {
      for (const statement of createStatements(this.#tables)) await this.#pool.query(statement);
      for (const upgrade of upgradeStatements(this.#tables)) {
        const [rows] = await this.#pool.query(upgrade.missing, upgrade.params);
        if (Number((rows as Array<{ n: unknown }>)[0]?.n) !== 0) continue;
        await this.#pool.query(upgrade.add).catch((error: unknown) => {
          if (!isDuplicateColumnError(error)) throw error;
        });
      }
    })().then(
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

  /** Reads each table once (no rows): fails as an operation would while one is missing. */
  async #checkTables(): Promise<void> {
    const { leases, occurrences, pauses, fences, instances } = this.#tables;
    const reads = [leases, occurrences, pauses, fences, instances].map(
      (table) => `(SELECT 1 FROM ${table} LIMIT 0)`,
    );
    await this.#pool.query(`SELECT ${reads.join(', ')}`);
  }

  /**
   * A batch of the ledger's decisions in one transaction on a connection of the pool (see
   * ledger.ts), bounded like any operation. A transaction that lost to a row lock (a deadlock's
   * victim, or a lock wait past `innodb_lock_wait_timeout`) is run again while the bound lasts; a
   * table dropped since set-up is created again (with createTable) and the batch sent once more.
   * Once the bound has run out, a transaction still going (waiting for a row lock, say) is rolled
   * back instead of committed: its callers were told the store did not answer.
   */
  #applyLedgerCalls(calls: readonly LedgerCall[]): Promise<Applied[]> {
    const operation = [...new Set(calls.map((call) => call.target.operation))].join('/');
    return this.#bounded(operation, (expired) =>
      this.#withTables(() =>
        this.#withConnection(expired, async (connection) => {
          for (let attempt = 1; ; attempt++) {
            try {
              return await applyLedgerBatch(connection, this.#ledgerSql, this.#prefix, calls, expired);
            } catch (error) {
              if (expired() || !isLockContention(error) || attempt === maxLedgerAttempts) throw error;
            }
          }
        }),
      ),
    );
  }

  async #read<R>(operation: string, sql: string, values: Parameter[]): Promise<R[]> {
    const [rows] = await this.#bounded(operation, (expired) => this.#statement(sql, values, expired));
    return rows as R[];
  }

  async #write(
    operation: string,
    sql: string,
    values: Parameter[],
  ): Promise<{ affectedRows: number; insertId: number }> {
    const [result] = await this.#bounded(operation, (expired) => this.#statement(sql, values, expired));
    return result as { affectedRows: number; insertId: number };
  }

  /** One prepared statement, in autocommit, with the tables set up. */
  #statement(sql: string, values: Parameter[], expired: () => boolean) {
    return this.#withTables(() =>
      this.#withConnection(expired, (connection) => connection.execute(sql, values)),
    );
  }

  /**
   * Runs `use` on a connection of the pool, unless the bound ran out while it waited for one: the
   * caller was told the store did not answer, so nothing may be sent after that (a lease taken
   * then would be nobody's until its ttl ran out). A connection that fails with an error the
   * server did not send (a lost connection) is destroyed, not returned to the pool.
   */
  async #withConnection<T>(
    expired: () => boolean,
    use: (connection: PoolConnection) => Promise<T>,
  ): Promise<T> {
    const connection = await this.#pool.getConnection();
    if (expired()) {
      connection.release();
      throw new Error('the bound ran out before a pooled connection was free');
    }
    // A connection that breaks while it is checked out may emit 'error' more than once; the pool
    // listens only once. The failure reaches `use` through its statement.
    connection.connection.on('error', ignore);
    try {
      return await use(connection);
    } catch (error) {
      if (!isServerError(error)) connection.destroy();
      throw error;
    } finally {
      connection.connection.off('error', ignore);
      connection.release();
    }
  }

  /**
   * Runs `work`, setting the tables up first when needed. A table dropped since the store set
   * them up (ER_NO_SUCH_TABLE) is created again, with createTable, and `work` run once more.
   */
  async #withTables<T>(work: () => Promise<T>): Promise<T> {
    if (!this.#ready) await this.#createTables();
    let result: T;
    try {
      result = await work();
    } catch (error) {
      if (!this.#createTable || !isMissingTable(error)) throw error;
      this.#ready = false;
      this.#setup = undefined;
      await this.#createTables();
      result = await work();
    }
    this.#setupError = undefined;
    return result;
  }

  // A statement already sent cannot be cancelled from here; when the bound runs out the caller
  // gets StoreUnavailableError at once, `work` learns it through `expired`, and the late answer is
  // dropped. A lease acquired by a statement that answered too late expires on its own after ttl;
  // a ledger batch rolls back instead (see #applyLedgerCalls).
  #bounded<T>(operation: string, work: (expired: () => boolean) => Promise<T>): Promise<T> {
    let expired = false;
    const failed = work(() => expired).catch((error: unknown) => {
      const failure = storeError(operation, error, this.#createTable);
      if (isStoreSetupError(failure)) this.#setupError = failure;
      throw failure;
    });
    return withDeadline(failed, this.#timeoutMs, () => {
      expired = true;
      throw storeError(operation, new Error(`no answer within ${this.#timeoutMs} ms`), this.#createTable);
    });
  }
}
