import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import {
  type ClaimRequest,
  type ClaimResult,
  checkInstanceInfo,
  type InstanceInfo,
  type InstanceRegistry,
  type JobPause,
  type LedgerSkipReason,
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
import { postgresLedgerBatchLimits, postgresLockStoreDefaults } from './defaults.ts';
import { checkStoredKey, isMissingObject, storeError } from './errors.ts';
import { applyLedgerBatch, type LedgerCall, ledgerStatements } from './ledger.ts';
import type { PostgresLockStoreOptions } from './options.ts';
import { ReleaseNotifications } from './release-notifications.ts';
import {
  literal,
  type PostgresTables,
  resolveTables,
  setupSql,
  someoneWaitsOn,
  toMs,
  toWholeMs,
} from './schema.ts';
import {
  type CircuitStatements,
  circuitStatements,
  claimPostgresProbe,
  type QueryCircuit,
  syncPostgresCircuit,
} from './shared-circuit.ts';
import { postgresSharedRateLimiter } from './shared-rate-limit.ts';

const msInterval = (parameter: string) => `${parameter}::float8 * interval '1 millisecond'`;

// The lease statements read the clock with now(). Each runs alone in autocommit, so now() is the
// instant the statement started, after the client sent it: expiry is judged by the database's
// clock, never an instance's, and one statement sees one instant everywhere it asks
// (clock_timestamp() would move between the expiry check and the new expiry). If the statement
// waits for a row lock, now() stays at its start: a lease then looks alive a little longer, the
// safe direction. A run ledger transaction reads clock_timestamp() once, right after it locks its
// keys' rows, and its decisions use that one instant throughout.
function statements(t: PostgresTables) {
  return {
    // A new key's first token is the database clock in microseconds, not 1: if its row is ever
    // deleted, the next token is still higher than every one issued before. A plain acquire is
    // not an occurrence: it clears the key's current occurrence (current_job, current_at).
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
  SET owner = EXCLUDED.owner, token = lease.token + 1, expires_at = EXCLUDED.expires_at,
    current_job = NULL, current_at = NULL
  WHERE lease.owner IS NULL OR lease.expires_at <= now()
RETURNING token`,
    renew: `UPDATE ${t.leases} SET expires_at = now() + ${msInterval('$3')}
WHERE key = $1::text AND owner = $2::text AND expires_at > now()`,
    // The row (and its token) stays: only the lease is cleared, so tokens keep increasing. When
    // someone waits on the key (someoneWaitsOn), the release announces the key on the store's
    // channel, which wakes the waiters (onRelease) once it commits.
    release: `WITH released AS (
  UPDATE ${t.leases} SET owner = NULL, expires_at = NULL WHERE key = $1::text AND owner = $2::text RETURNING key
)
SELECT pg_notify(${literal(t.releaseChannel)}, key) FROM released
WHERE ${someoneWaitsOn(t, 'key')}`,
    inspect: `SELECT owner, token, (extract(epoch FROM expires_at) * 1000)::float8 AS expires_at
FROM ${t.leases} WHERE key = $1::text AND owner IS NOT NULL AND expires_at > now()`,
    now: 'SELECT (extract(epoch FROM now()) * 1000)::float8 AS now',
    runHistory: `SELECT job, ${toMs('scheduled_at')} AS scheduled_at, state, reason, token, instance,
  ${toWholeMs('started_at')} AS started_at, ${toWholeMs('ended_at')} AS ended_at, error, takeovers,
  run_trigger, actor, trigger_reason
FROM ${t.occurrences} WHERE key = $1::text AND job = $2::text
ORDER BY scheduled_at DESC LIMIT $3::int`,
    lastCompleted: `SELECT ${toMs('max(scheduled_at)')} AS last
FROM ${t.occurrences} WHERE key = $1::text AND job = $2::text AND state = 'success'`,
    // Read by a claim, under the key's row lock, in the same transaction as its decision.
    pauseJob: `INSERT INTO ${t.pauses} (key, job, paused_at, paused_by, reason)
VALUES ($1::text, $2::text, now(), $3::text, $4::text)
ON CONFLICT (key, job) DO UPDATE
  SET paused_at = EXCLUDED.paused_at, paused_by = EXCLUDED.paused_by, reason = EXCLUDED.reason`,
    resumeJob: `DELETE FROM ${t.pauses} WHERE key = $1::text AND job = $2::text`,
    pauseOf: `SELECT ${toWholeMs('paused_at')} AS paused_at, paused_by, reason
FROM ${t.pauses} WHERE key = $1::text AND job = $2::text`,
    // A heartbeat also drops the rows of instances that expired, so the table stays the fleet's size.
    registerInstance: `WITH expired AS (
  DELETE FROM ${t.instances} WHERE expires_at <= now() AND instance <> $1::text
)
INSERT INTO ${t.instances}
  (instance, host, pid, version, started_at, jobs, clock_offset_ms, last_seen_at, expires_at, definitions)
VALUES ($1::text, $2::text, $3::int, $4::text, to_timestamp($5::float8 / 1000), $6::int, $7::float8, now(),
  now() + ${msInterval('$8')}, $9::text)
ON CONFLICT (instance) DO UPDATE
  SET host = EXCLUDED.host, pid = EXCLUDED.pid, version = EXCLUDED.version, started_at = EXCLUDED.started_at,
    jobs = EXCLUDED.jobs, clock_offset_ms = EXCLUDED.clock_offset_ms, last_seen_at = EXCLUDED.last_seen_at,
    expires_at = EXCLUDED.expires_at, definitions = EXCLUDED.definitions`,
    removeInstance: `DELETE FROM ${t.instances} WHERE instance = $1::text`,
    listInstances: `SELECT instance, host, pid, version, round(extract(epoch FROM started_at) * 1000)::float8 AS started_at,
  jobs, clock_offset_ms, ${toWholeMs('last_seen_at')} AS last_seen_at, definitions
FROM ${t.instances} WHERE expires_at > now() ORDER BY instance`,
  };
}

// A pool emits 'error' when an idle client loses its connection (the server restarted, say);
// with no listener that crashes the process. The store's callers see the failure on their next
// operation instead, as StoreUnavailableError.
const poolsWithListener = new WeakSet<object>();
const ignore = () => {};

/** A `pg.Pool`, as opposed to a single client given in its place. */
function isPool(pool: Pool): boolean {
  return typeof (pool as { totalCount?: unknown }).totalCount === 'number';
}

/**
 * A {@link LockStore} and {@link RunLedger} in PostgreSQL, for locking across processes and
 * machines. Every lease operation is one statement (one round trip); expiry is judged by the
 * database's clock; fencing tokens are issued by the statement that takes the lease and only ever
 * increase per key, also across expiry and release.
 *
 * The run ledger's decisions (src/ledger/decide.ts) run in the process, many per transaction
 * (ledger.ts): each transaction first locks its keys' lease rows, so claims, renewals and
 * finishes of one key serialize (of many instances claiming one occurrence at once, exactly one is
 * granted), and plain leases and claims exclude each other.
 *
 * A release wakes the waiters of its key (`lock.wait`) with NOTIFY, so they try at once instead of
 * at their next poll; the store LISTENs on a pool client only while someone waits (see
 * {@link onRelease}).
 *
 * The tables and functions are created on first use unless `createTable` is false (see
 * `postgresLockStoreSql()`), and again when dropped later. When the database cannot be reached, or
 * does not answer within `timeout`, operations fail with `StoreUnavailableError`; when the store
 * cannot be set up (a missing schema or privilege), with `StoreSetupError`, saying what to do.
 * Either way the lock fails closed.
 *
 * @example
 * import pg from 'pg';
 * import { PostgresLockStore } from 'resil/postgres';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 2_000 });
 * const store = new PostgresLockStore(pool, { schema: 'ops' });
 * const pipeline = new ResiliencePipelineBuilder().addLock({ key: () => 'nightly-report', store }).build();
 */
export class PostgresLockStore
  implements LockStore, RunLedger, InstanceRegistry, SharedCircuitStore, SharedCircuits
{
  readonly storeName = 'PostgresLockStore';
  readonly #pool: Pool;

  /** The pool the store was given. The store never ends it; its owner does. */
  get pool(): Pool {
    return this.#pool;
  }
  readonly #tables: PostgresTables;
  readonly #sql: ReturnType<typeof statements>;
  readonly #timeoutMs: number;
  readonly #notifications: ReleaseNotifications;
  readonly #createTable: boolean;
  #ready: boolean;
  /** The run ledger's decisions, each in a transaction with others (see ledger.ts). */
  readonly #ledger: LedgerEngine;
  readonly #ledgerSql: ReturnType<typeof ledgerStatements>;
  /** The ledger's decisions, many per transaction (see {@link CallBatches}). */
  readonly #ledgerCalls: CallBatches<LedgerCall, Applied>;
  /** With a single client for a pool: the last statement or ledger transaction on it, settled. */
  #clientTurn: Promise<void> = Promise.resolve();
  #setup: Promise<void> | undefined;
  /** The last operation's permanent set-up failure, until an operation succeeds: `now()` reports it. */
  #setupError: StoreSetupError | undefined;

  /**
   * @param pool a `pg.Pool` you configured (TLS, credentials and timeouts are yours). The store
   *   never closes it.
   */
  constructor(pool: Pool, options: PostgresLockStoreOptions = {}) {
    if (typeof pool !== 'object' || pool === null || typeof pool.query !== 'function') {
      throw new InvalidOptionError('pool', shownArgument(pool), 'a pg.Pool');
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
    this.#createTable = createTable;
    this.#ready = !createTable;
    this.#notifications = new ReleaseNotifications(pool, this.#tables, this.#timeoutMs);
    this.#ledgerSql = ledgerStatements(this.#tables);
    this.#ledgerCalls = new CallBatches({
      send: (calls) => this.#applyLedgerCalls(calls),
      limits: postgresLedgerBatchLimits,
      retryAlone: true,
    });
    this.#ledger = new LedgerEngine({
      apply: (target, decide) => this.#ledgerCalls.run({ target, decide }),
    });
    if (typeof pool.on === 'function' && !poolsWithListener.has(pool)) {
      poolsWithListener.add(pool);
      pool.on('error', ignore);
    }
  }

  /**
   * Throws `InvalidKeyError` unless the tables can keep `key`: no NUL character, at most 1000
   * bytes of UTF-8.
   */
  checkKey(key: string): void {
    checkStoredKey('key', key);
  }

  async acquire(key: string, owner: string, ttlMs: number): Promise<number | undefined> {
    checkStoredKey('key', key);
    const result = await this.#query<{ token: string }>('acquire', this.#sql.acquire, [key, owner, ttlMs]);
    const row = result.rows[0];
    return row === undefined ? undefined : Number(row.token);
  }

  async renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    checkStoredKey('key', key);
    const result = await this.#query('renew', this.#sql.renew, [key, owner, ttlMs]);
    return result.rowCount === 1;
  }

  async release(key: string, owner: string): Promise<void> {
    checkStoredKey('key', key);
    await this.#query('release', this.#sql.release, [key, owner]);
  }

  /**
   * Wakes a waiter when the lease on `key` is released (see `LockStore.onRelease`): the store
   * LISTENs on its channel through one client of the pool, taken while someone waits and closed
   * after (or by {@link close}), and marks each waited key with an advisory lock on that client;
   * a release of a marked key runs `pg_notify`. With a pool of one connection it never listens (the
   * store's queries need it): waiters then only poll. A notification lost while that client is
   * down only costs the waiter's next poll.
   */
  onRelease(key: string, listener: () => void): () => void {
    return this.#notifications.subscribe(checkStoredKey('key', key), listener);
  }

  /**
   * Closes the pool client waiters' wake-ups come through: waiters go on polling. The pool stays
   * open; end it yourself.
   */
  async close(): Promise<void> {
    this.#notifications.close();
  }

  async inspect(key: string): Promise<LeaseInfo | undefined> {
    checkStoredKey('key', key);
    const result = await this.#query<{ owner: string; token: string; expires_at: number }>(
      'inspect',
      this.#sql.inspect,
      [key],
    );
    const row = result.rows[0];
    if (row === undefined) return undefined;
    return { owner: row.owner, token: Number(row.token), expiresAt: new Date(Number(row.expires_at)) };
  }

  /**
   * The database's clock (`now()`), in epoch ms. While the last operation failed because the store is not set up (and
   * cannot set itself up), it looks again first, and fails with that `StoreSetupError` until the
   * store is usable: a probe of `now()` (`resil run --metrics`) then reports the store as down.
   */
  async now(): Promise<number> {
    if (this.#setupError !== undefined) {
      // Set up again (idempotent), or without createTable only read the tables.
      if (this.#createTable) {
        this.#ready = false;
        this.#setup = undefined;
      }
      await this.#bounded('now', this.#createTable ? this.#createTables() : this.#checkTables());
      this.#setupError = undefined;
    }
    const result = await this.#query<{ now: number }>('now', this.#sql.now, []);
    return Number(result.rows[0]!.now);
  }

  async claimOccurrence(request: ClaimRequest): Promise<ClaimResult> {
    return this.#ledger.claimOccurrence(
      checkClaimRequest(request, checkStoredKey, postgresLockStoreDefaults.retentionMs),
    );
  }

  async renewOccurrence(lease: OccurrenceLease, ttlMs: number): Promise<boolean> {
    checkOccurrenceLease(lease, checkStoredKey);
    return this.#ledger.renewOccurrence(lease, checkDurationMs('ttlMs', ttlMs, 1));
  }

  async finishOccurrence(lease: OccurrenceLease, result: RunResult, options: LedgerTrim = {}): Promise<void> {
    checkOccurrenceLease(lease, checkStoredKey);
    const trim = checkFinish(result, options, postgresLockStoreDefaults.retentionMs);
    const highest = await this.#ledger.finishOccurrence(lease, result, trim);
    if (highest !== undefined) throw new StaleTokenError(lease.job, lease.token, highest);
  }

  async runHistory(job: string, options: { key?: string; limit?: number } = {}): Promise<RunRecord[]> {
    checkStoredKey('job', job);
    const key = checkStoredKey('key', options.key ?? job);
    const limit = checkCount('limit', options.limit ?? postgresLockStoreDefaults.historyLimit, 0);
    const result = await this.#query<{
      job: string;
      scheduled_at: number;
      state: RunRecord['outcome'];
      reason: LedgerSkipReason | null;
      token: string | null;
      instance: string | null;
      started_at: number | null;
      ended_at: number | null;
      error: string | null;
      takeovers: number;
      run_trigger: RunRecord['trigger'] | null;
      actor: string | null;
      trigger_reason: string | null;
    }>('runHistory', this.#sql.runHistory, [key, job, limit]);
    return result.rows.map((row) =>
      runRecordOf({
        job: row.job,
        scheduledAt: row.scheduled_at,
        outcome: row.state,
        reason: row.reason,
        token: row.token,
        instance: row.instance,
        startedAt: row.started_at,
        endedAt: row.ended_at,
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
    const key = checkStoredKey('key', options.key ?? job);
    const result = await this.#query<{ last: number | null }>('lastCompleted', this.#sql.lastCompleted, [
      key,
      job,
    ]);
    const last = result.rows[0]?.last;
    return last === null || last === undefined ? undefined : Number(last);
  }

  /** Pauses the job under `key` fleet-wide, at the database's clock (see `RunLedger.pauseJob`). */
  async pauseJob(job: string, options: { key: string; by: string; reason?: string }): Promise<void> {
    checkStoredKey('job', job);
    const key = checkStoredKey('key', options?.key);
    const by = checkString('by', options.by);
    const reason = options.reason === undefined ? null : checkString('reason', options.reason);
    await this.#query('pauseJob', this.#sql.pauseJob, [key, job, by, reason]);
  }

  async resumeJob(job: string, options: { key: string }): Promise<void> {
    checkStoredKey('job', job);
    const key = checkStoredKey('key', options?.key);
    await this.#query('resumeJob', this.#sql.resumeJob, [key, job]);
  }

  async pauseOf(job: string, options: { key: string }): Promise<JobPause | undefined> {
    checkStoredKey('job', job);
    const key = checkStoredKey('key', options?.key);
    const result = await this.#query<{ paused_at: number; paused_by: string; reason: string | null }>(
      'pauseOf',
      this.#sql.pauseOf,
      [key, job],
    );
    const row = result.rows[0];
    if (row === undefined) return undefined;
    return {
      pausedAt: Number(row.paused_at),
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
    await this.#query('registerInstance', this.#sql.registerInstance, [
      instance,
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
    await this.#query('removeInstance', this.#sql.removeInstance, [checkString('instance', instance)]);
  }

  /** The instances whose last heartbeat is within their ttl by the database's clock, by name. */
  async listInstances(): Promise<RegisteredInstance[]> {
    const result = await this.#query<{
      instance: string;
      host: string;
      pid: number;
      version: string;
      started_at: number;
      jobs: number;
      clock_offset_ms: number;
      last_seen_at: number;
      definitions: string | null;
    }>('listInstances', this.#sql.listInstances, []);
    return result.rows.map((row) => ({
      instance: row.instance,
      host: row.host,
      pid: Number(row.pid),
      version: row.version,
      startedAt: Number(row.started_at),
      jobs: Number(row.jobs),
      clockOffsetMs: Number(row.clock_offset_ms),
      lastSeenAt: Number(row.last_seen_at),
      ...(row.definitions === null ? {} : { definitions: row.definitions }),
    }));
  }

  /** A sync of a shared circuit breaker (`circuitBreaker.store`): see shared-circuit.ts. */
  async syncCircuit(key: string, sync: CircuitSync): Promise<CircuitSyncReply> {
    return syncPostgresCircuit(this.#circuitQuery, this.#circuitSql, checkStoredKey('key', key), sync);
  }

  /** The probe lease of a shared circuit breaker: see shared-circuit.ts. */
  async claimProbe(key: string, claim: { owner: string; leaseMs: number }): Promise<CircuitProbeClaim> {
    return claimPostgresProbe(this.#circuitQuery, this.#circuitSql, checkStoredKey('key', key), claim);
  }

  /** A circuit breaker sharing its circuit through this store (`circuitBreaker.store`). */
  sharedCircuitBreaker(breaker: LocalCircuitBreaker): CircuitController {
    return new SharedCircuitBreaker(breaker, this);
  }

  readonly #circuitQuery: QueryCircuit = (operation, text, values) => this.#query(operation, text, values);
  get #circuitSql(): CircuitStatements {
    this.#circuitStatements ??= circuitStatements(this.#tables.circuits);
    return this.#circuitStatements;
  }
  #circuitStatements: CircuitStatements | undefined;

  /**
   * A rate limit every process on this database shares: the rate limiter strategy's `store` option
   * (see shared-rate-limit.ts). One statement per call, on the database's clock.
   */
  sharedRateLimiter(options: RateLimiterStrategyOptions, environment: StrategyEnvironment): RateLimiter {
    return postgresSharedRateLimiter(
      options,
      environment,
      this.#tables,
      (key) => checkStoredKey('key', key),
      (text, values) => this.#query('rateLimit', text, values),
    );
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

  /**
   * A batch of the ledger's decisions in one transaction on a client of the pool (see ledger.ts),
   * bounded like any operation. A table dropped since set-up is created again (with createTable)
   * and the batch sent once more.
   */
  #applyLedgerCalls(calls: readonly LedgerCall[]): Promise<Applied[]> {
    const operation = [...new Set(calls.map((call) => call.target.operation))].join('/');
    const apply = async () => {
      if (!isPool(this.#pool)) {
        const client = this.#pool as unknown as PoolClient;
        return this.#exclusive(() => applyLedgerBatch(client, this.#ledgerSql, calls));
      }
      const client = await this.#pool.connect();
      // A checked-out client whose connection drops emits 'error'; unheard, that would crash the
      // process. The failure reaches the batch through its statement instead.
      let broken: Error | undefined;
      const onConnectionError = (error: Error) => {
        broken = error;
      };
      client.on('error', onConnectionError);
      try {
        const applied = await applyLedgerBatch(client, this.#ledgerSql, calls);
        client.off('error', onConnectionError);
        client.release(broken);
        return applied;
      } catch (error) {
        client.off('error', onConnectionError);
        // An error the server did not send (a lost connection): the client is not reused.
        const fromServer = typeof (error as { severity?: unknown } | null)?.severity === 'string';
        client.release(broken ?? (fromServer ? undefined : (error as Error)));
        throw error;
      }
    };
    const send = async () => {
      if (!this.#ready) await this.#createTables();
      let applied: Applied[];
      try {
        applied = await apply();
      } catch (error) {
        if (!this.#createTable || !isMissingObject(error)) throw error;
        this.#ready = false;
        this.#setup = undefined;
        await this.#createTables();
        applied = await apply();
      }
      this.#setupError = undefined;
      return applied;
    };
    return this.#bounded(operation, send());
  }

  /**
   * Runs `work` at once with a pool; with a single client given as the pool, after the work before
   * it, so that no statement lands inside a ledger transaction on that client.
   */
  #exclusive<T>(work: () => Promise<T>): Promise<T> {
    if (isPool(this.#pool)) return work();
    const turn = this.#clientTurn.then(work);
    this.#clientTurn = turn.then(ignore, ignore);
    return turn;
  }

  /** Reads each table once (no rows): fails as an operation would while one is missing. */
  async #checkTables(): Promise<void> {
    const { leases, occurrences, pauses, fences, instances } = this.#tables;
    const reads = [leases, occurrences, pauses, fences, instances].map(
      (table) => `(SELECT 1 FROM ${table} LIMIT 0)`,
    );
    await this.#pool.query(`SELECT ${reads.join(', ')}`);
  }

  #query<R extends QueryResultRow = QueryResultRow>(
    operation: string,
    text: string,
    values: unknown[],
  ): Promise<QueryResult<R>> {
    return this.#bounded(operation, this.#send<R>(text, values));
  }

  /**
   * Sends a statement, setting the tables up first when needed. A table or function dropped since
   * the store set them up (42P01, 42883) is created again, with createTable, and the statement
   * sent once more.
   */
  async #send<R extends QueryResultRow>(text: string, values: unknown[]): Promise<QueryResult<R>> {
    if (!this.#ready) await this.#createTables();
    let result: QueryResult<R>;
    try {
      result = await this.#exclusive(() => this.#pool.query<R>(text, values));
    } catch (error) {
      if (!this.#createTable || !isMissingObject(error)) throw error;
      this.#ready = false;
      this.#setup = undefined;
      await this.#createTables();
      result = await this.#exclusive(() => this.#pool.query<R>(text, values));
    }
    this.#setupError = undefined;
    return result;
  }

  // The query itself cannot be cancelled from here; when the bound runs out the caller gets
  // StoreUnavailableError at once and the late answer is dropped. A lease acquired by an answer
  // that came too late expires on its own after ttl.
  #bounded<T>(operation: string, work: Promise<T>): Promise<T> {
    const failed = work.catch((error: unknown) => {
      const failure = storeError(operation, error, this.#createTable);
      if (isStoreSetupError(failure)) this.#setupError = failure;
      throw failure;
    });
    return withDeadline(failed, this.#timeoutMs, () => {
      throw storeError(operation, new Error(`no answer within ${this.#timeoutMs} ms`), this.#createTable);
    });
  }
}
