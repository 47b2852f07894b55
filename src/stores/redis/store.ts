import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
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
  type StoredRunRecord,
} from '../../ledger/contract.ts';
import type { LedgerEntry, LedgerView } from '../../ledger/decide.ts';
import { checkConcurrency, ledgerTrimOf } from '../../ledger/defaults.ts';
import {
  compareAndWrite,
  type DecidedOnKnown,
  LedgerEngine,
  type ReadTarget,
  type StoredView,
  type WriteChanges,
  type WriteReply,
} from '../../ledger/engine.ts';
import { KnownViews, type VersionParts } from '../../ledger/known-views.ts';
import { ledgerEntryOf, type StoredLedgerEntry, storedEntryOf } from '../../ledger/stored-entry.ts';
import { parseDuration } from '../../pipeline/duration.ts';
import { InvalidOptionError } from '../../pipeline/errors.ts';
import type { StrategyEnvironment } from '../../pipeline/strategy.ts';
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
import { InvalidKeyError, StaleTokenError, StoreUnavailableError } from '../../strategies/lock/errors.ts';
import { type LeaseInfo, type LockStore, storeKeyByteLimit } from '../../strategies/lock/store.ts';
import type { RateLimiter } from '../../strategies/rate-limiter/limiter.ts';
import type { RateLimiterStrategyOptions } from '../../strategies/rate-limiter/options.ts';
import { CallBatches } from '../call-batches.ts';
import { shownArgument } from '../credentials.ts';
import { checkOverlap } from '../overlap-option.ts';
import {
  BoundedCommands,
  type ConnectionStatus,
  commandError,
  describe,
  type KeysOf,
} from './bounded-commands.ts';
import { redisLedgerBatchLimits, redisLockStoreDefaults, redisLockStoreLimits } from './defaults.ts';
import { guardErrorEvents } from './error-events.ts';
import { RedisKeys } from './keys.ts';
import { keySlot, LeaseBatches } from './lease-batches.ts';
import type { FencedSetOptions, RedisLockStoreOptions } from './options.ts';
import { ReleaseNotifications, waitersTtlMs } from './release-notifications.ts';
import {
  isNoScriptError,
  ledgerReadLimit,
  packArguments,
  runScript,
  type ScriptRunner,
  type StoreScript,
  storeScripts,
} from './scripts.ts';
import { claimRedisProbe, type RunCircuitScript, syncRedisCircuit } from './shared-circuit.ts';
import { rateLimitScript, redisSharedRateLimiter } from './shared-rate-limit.ts';

type Client = (Redis | Cluster) & ScriptRunner<Promise<unknown>> & ConnectionStatus;
type Argument = string | Buffer | number;

/** What `WAIT` answered when fewer replicas than asked acknowledged in time. */
type PipelineReplies = Array<[Error | null, unknown]> | null;

/**
 * A {@link LockStore} and {@link RunLedger} on Redis, through an ioredis client you create (so TLS,
 * ACL users, Sentinel and Cluster are configured the ioredis way), plus a fenced write.
 *
 * - Each operation is one Lua script: one round trip, atomic. Acquires and releases issued in the
 *   same tick share one script call (per hash slot on Cluster), each still atomic on its key: 16
 *   concurrent acquires are one round trip, not 16. The lease and token keys of a lock,
 *   and the run ledger of the occurrences claimed under it, share a `{key}` hash tag, so it works
 *   on Redis Cluster (see keys.ts for the layout).
 * - Expiry is judged by Redis (`PX`); `now()` is the server's clock (`TIME`), and so is every
 *   decision of the run ledger (deadlines, takeovers, retention), which follows `MemoryLockStore`'s.
 * - A claim granted under the key's lease (every overlap policy but `allow-all`, with a `concurrency` of 1) holds the same
 *   `{key}:lease` as `acquire`, so plain locks and claims exclude each other and `inspect` shows it.
 * - Fencing tokens: `INCR` of a counter that never expires, seeded from the server's `TIME` in
 *   microseconds when missing, so they increase on every acquire, also across a Redis restarted
 *   without persistence. A failover to a replica that missed the last increments can hand out a
 *   token again unless `waitForReplicas` covers the promoted replica.
 * - A release publishes on the key's pub/sub channel when someone waits on the key, so waiters
 *   (`lock.wait`) try at once instead of at their next poll; the store marks the key and listens
 *   through a connection of its own only while someone waits (see {@link onRelease}).
 * - Every operation fails within `commandTimeout` with `StoreUnavailableError` when Redis is down
 *   or stalled; nothing is left in the client's offline queue.
 * - Client `'error'` events never crash the process and never carry a password: the store
 *   prepends one listener that masks `AUTH`/`HELLO` arguments on errors and, while it is the only
 *   listener, prints them the way ioredis does without one (see `guardErrorEvents`).
 *
 * @example
 * import Redis from 'ioredis';
 * import { RedisLockStore } from 'resil/redis';
 *
 * const store = new RedisLockStore(new Redis(process.env.REDIS_URL), { prefix: 'billing:' });
 * const pipeline = new ResiliencePipelineBuilder().addLock({ key: () => 'nightly-report', store }).build();
 */
export class RedisLockStore
  implements LockStore, RunLedger, InstanceRegistry, SharedCircuitStore, SharedCircuits
{
  readonly storeName = 'RedisLockStore';
  /** The client the store sends through (the one you passed). */
  readonly client: Redis | Cluster;
  /** The key prefix in use. */
  readonly prefix: string;
  readonly #client: Client;
  readonly #keys: RedisKeys;
  readonly #bounded: BoundedCommands;
  readonly #batches: LeaseBatches;
  /** The run ledger's decisions, on the two scripts below. */
  readonly #ledger: LedgerEngine;
  /** What this process knows of the ledgers it wrote (see src/ledger/known-views.ts). */
  readonly #known: KnownViews;
  /** The ledger's reads and conditional writes, many per script call (see {@link CallBatches}). */
  readonly #reads: CallBatches<LedgerCall, unknown>;
  readonly #writes: CallBatches<LedgerCall, unknown>;
  readonly #waitForReplicas: number;
  readonly #replicaTimeout: number;
  readonly #notifications: ReleaseNotifications | undefined;

  constructor(client: Redis | Cluster, options: RedisLockStoreOptions = {}) {
    if (
      client === null ||
      typeof client !== 'object' ||
      typeof (client as Partial<Client>).evalsha !== 'function'
    ) {
      throw new InvalidOptionError('client', shownArgument(client), 'an ioredis Redis or Cluster instance');
    }
    const prefix = options.prefix ?? redisLockStoreDefaults.prefix;
    if (typeof prefix !== 'string') throw new InvalidOptionError('prefix', prefix, 'a string');
    const { commandTimeout: timeoutLimits, replicaTimeout: replicaLimits } = redisLockStoreLimits;
    const commandTimeout = parseDuration(
      options.commandTimeout ?? redisLockStoreDefaults.commandTimeout,
      'commandTimeout',
      timeoutLimits.min,
      timeoutLimits.max,
    );
    const waitForReplicas = options.waitForReplicas ?? redisLockStoreDefaults.waitForReplicas;
    if (!Number.isSafeInteger(waitForReplicas) || waitForReplicas < 0) {
      throw new InvalidOptionError('waitForReplicas', waitForReplicas, 'an integer >= 0');
    }
    const replicaTimeout = parseDuration(
      options.replicaTimeout ?? redisLockStoreDefaults.replicaTimeout,
      'replicaTimeout',
      replicaLimits.min,
      replicaLimits.max,
    );
    if (waitForReplicas > 0 && replicaTimeout >= commandTimeout) {
      throw new InvalidOptionError(
        'replicaTimeout',
        options.replicaTimeout ?? replicaTimeout,
        `less than commandTimeout (${commandTimeout} ms), so WAIT ends before the command times out`,
      );
    }
    const releaseNotifications = options.releaseNotifications ?? redisLockStoreDefaults.releaseNotifications;
    if (typeof releaseNotifications !== 'boolean') {
      throw new InvalidOptionError('releaseNotifications', releaseNotifications, 'true or false');
    }
    this.client = client;
    this.prefix = prefix;
    this.#notifications = releaseNotifications
      ? new ReleaseNotifications(client, (waiters) =>
          this.#bounded.run('onRelease', waiters, () => client.set(waiters, '1', 'PX', waitersTtlMs)),
        )
      : undefined;
    this.#keys = new RedisKeys(prefix);
    this.#waitForReplicas = waitForReplicas;
    this.#replicaTimeout = Math.ceil(replicaTimeout);
    guardErrorEvents(client);
    this.#client = client as Client;
    this.#bounded = new BoundedCommands(this.#client, commandTimeout);
    const clientPrefix = (client.options as { keyPrefix?: unknown } | undefined)?.keyPrefix;
    const keyPrefix = typeof clientPrefix === 'string' ? clientPrefix : '';
    const slotOf =
      (client as { isCluster?: boolean }).isCluster === true
        ? (key: string) => keySlot(keyPrefix + key)
        : undefined;
    this.#batches = new LeaseBatches(this.#client, this.#bounded, slotOf);
    const groupOf = slotOf && ((call: LedgerCall) => slotOf(this.#keys.lease(call.key)));
    this.#reads = new CallBatches({
      send: (calls) => this.#sendLedgerCalls(storeScripts.ledgerRead, calls, false),
      groupOf,
      limits: redisLedgerBatchLimits,
    });
    this.#writes = new CallBatches({
      send: (calls) => this.#sendLedgerCalls(storeScripts.ledgerWrite, calls, true),
      groupOf,
      limits: redisLedgerBatchLimits,
    });
    this.#known = new KnownViews({ versionOf, entryLimit: ledgerReadLimit, presumeNew: true });
    this.#ledger = new LedgerEngine(
      {
        apply: compareAndWrite(
          'RedisLockStore',
          (target) => this.#readLedger(target),
          (target, _version, changes, onKnown, stored) => this.#writeLedger(target, stored, changes, onKnown),
          this.#known,
        ),
      },
      { claimsReadHistory: true },
    );
  }

  /** A sync of a shared circuit breaker (`circuitBreaker.store`): see shared-circuit.ts. */
  async syncCircuit(key: string, sync: CircuitSync): Promise<CircuitSyncReply> {
    const run: RunCircuitScript = (script, args) => this.#script('syncCircuit', key, script, args);
    return syncRedisCircuit(run, this.prefix, checkKey(key), sync);
  }

  /** The probe lease of a shared circuit breaker: see shared-circuit.ts. */
  async claimProbe(key: string, claim: { owner: string; leaseMs: number }): Promise<CircuitProbeClaim> {
    const run: RunCircuitScript = (script, args) => this.#script('claimProbe', key, script, args);
    return claimRedisProbe(run, this.prefix, checkKey(key), claim);
  }

  /** A circuit breaker sharing its circuit through this store (`circuitBreaker.store`). */
  sharedCircuitBreaker(breaker: LocalCircuitBreaker): CircuitController {
    return new SharedCircuitBreaker(breaker, this);
  }

  /**
   * Throws `InvalidKeyError` unless `key` is a lock key the store can keep: non-empty, without
   * `}` (it would end the key's hash tag), at most 1000 bytes of UTF-8.
   */
  checkKey(key: string): void {
    checkKey(key);
  }

  // acquire, renew and release are the hot path: no async wrapper, no named closures.
  acquire(key: string, owner: string, ttlMs: number): Promise<number | undefined> {
    const invalid = rejectInvalidLease(key, ttlMs);
    if (invalid) return invalid;
    const argv = [this.#keys.lease(key), this.#keys.token(key), this.#keys.current(key), owner, pxTtl(ttlMs)];
    if (this.#waitForReplicas > 0) return this.#acquireReplicated(key, argv);
    // A reply we gave up on may still mean the lease was taken; releasing it (queued behind the
    // acquire on the same connection) keeps a late execution from holding the key a ttl.
    return this.#batches.acquire(key, argv, () => this.#undoAcquire(key, owner));
  }

  async #acquireReplicated(key: string, args: Argument[]): Promise<number | undefined> {
    const owner = args[3] as string;
    const replies = await this.#bounded.run(
      'acquire',
      key,
      (load) => this.#withWait(storeScripts.acquire, load, args),
      () => this.#undoAcquire(key, owner),
    );
    const issued = replies?.[0]?.[1];
    try {
      this.#checkReplicated('acquire', key, replies);
    } catch (error) {
      if (typeof issued === 'number') this.#undoAcquire(key, owner);
      throw error;
    }
    return typeof issued === 'number' ? issued : undefined;
  }

  /** EVAL, not EVALSHA: a rare call that must work even on a server that lost its scripts. */
  #undoAcquire(key: string, owner: string): void {
    runScript(this.#client, storeScripts.release, true, [
      this.#keys.lease(key),
      owner,
      this.#keys.released(key),
    ]).catch(ignore);
  }

  renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const invalid = rejectInvalidLease(key, ttlMs);
    if (invalid) return invalid;
    const args = [this.#keys.lease(key), owner, pxTtl(ttlMs)];
    if (this.#waitForReplicas > 0) {
      return this.#bounded
        .run('renew', key, (load) => this.#withWait(storeScripts.renew, load, args))
        .then((replies) => this.#checkReplicated('renew', key, replies) === 1);
    }
    const client = this.#client;
    return this.#bounded
      .run('renew', key, (load) => runScript(client, storeScripts.renew, load, args))
      .then(isOne);
  }

  release(key: string, owner: string): Promise<void> {
    let lease: string;
    try {
      lease = this.#keys.lease(checkKey(key));
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#batches.release(key, [lease, owner, this.#keys.released(key)]);
  }

  /**
   * Wakes a waiter when the lease on `key` is released (see `LockStore.onRelease`): the store sets
   * the key's `waiters` key while someone waits (a release publishes on the key's channel only
   * then), and subscribes to the channels someone waits on
   * through one connection of its own (`client.duplicate()`), opened with the first subscription
   * and closed with the last one, or by {@link close}. A notification lost while that connection
   * is down only costs the waiter's next poll. With `releaseNotifications: false` it never calls
   * `listener`.
   */
  onRelease(key: string, listener: () => void): () => void {
    const channel = this.#keys.released(checkKey(key));
    if (this.#notifications === undefined) return ignore;
    return this.#notifications.subscribe(channel, this.#keys.waiters(key), listener);
  }

  /**
   * Closes the store's own connection, the one waiters' wake-ups come through: waiters go on
   * polling. The client you passed stays open; close it yourself.
   */
  async close(): Promise<void> {
    this.#notifications?.close();
  }

  async inspect(key: string): Promise<LeaseInfo | undefined> {
    const lease = this.#keys.lease(checkKey(key));
    const reply = (await this.#script('inspect', key, storeScripts.inspect, [
      lease,
      this.#keys.token(key),
    ])) as [string, string, number, string, string] | null;
    if (reply === null) return undefined;
    const [owner, issued, pttl, seconds, microseconds] = reply;
    const expiresAt = pttl < 0 ? maxDate : serverMs(seconds, microseconds) + pttl;
    return { owner, token: Number(issued), expiresAt: new Date(expiresAt) };
  }

  /**
   * Reads the server's clock (see `RunLedger.warmUp`): every claim goes through the client's one
   * connection, which this wakes, and the reading refreshes the store time known views decide at.
   */
  warmUp(): Promise<number> {
    return this.now();
  }

  /** The Redis server's clock (`TIME`), in epoch ms. */
  async now(): Promise<number> {
    const client = this.client;
    const [seconds, microseconds] = await this.#bounded.run('TIME', '', () => client.time());
    this.#known.sawStoreTime(Number(seconds) * 1000 + Number(microseconds) / 1000, true);
    return serverMs(String(seconds), String(microseconds));
  }

  /**
   * Decides, on the server's clock, what the fire does (see `RunLedger`): the ledger's decisions
   * (src/ledger/decide.ts) between a read and a write of the job's ledger, the write made only
   * where nothing read has changed since. Every key they touch shares the lease key's `{key}` hash
   * tag. Recording a skip drops records past `request.retentionMs`, as a finish does.
   */
  async claimOccurrence(request: ClaimRequest): Promise<ClaimResult> {
    const { job, key, scheduledAt, owner, instance, ttlMs, overlap, startingDeadlineMs } = request;
    checkJob(job);
    checkKey(key);
    checkEpochMs(scheduledAt, 'scheduledAt');
    checkOwner(owner);
    if (typeof instance !== 'string') throw new InvalidOptionError('instance', instance, 'a string');
    const ttl = checkTtl(ttlMs);
    checkOverlap('overlap', overlap);
    checkConcurrency(request);
    if (!(startingDeadlineMs >= 0) || !Number.isFinite(startingDeadlineMs)) {
      throw new InvalidOptionError('startingDeadlineMs', startingDeadlineMs, 'a number of ms >= 0');
    }
    const retentionMs = checkRetention(request.retentionMs);
    return this.#ledger.claimOccurrence({ ...request, ttlMs: ttl, retentionMs });
  }

  async renewOccurrence(lease: OccurrenceLease, ttlMs: number): Promise<boolean> {
    checkLease(lease);
    return this.#ledger.renewOccurrence(lease, checkTtl(ttlMs));
  }

  /**
   * Records the end and releases the lease; a token lower than the occurrence's latest claim throws
   * `StaleTokenError` (only the release is written). Then drops records older than `retentionMs`
   * and the oldest past `ledgerRecordLimit`, at most 100 per call.
   */
  async finishOccurrence(lease: OccurrenceLease, result: RunResult, options: LedgerTrim = {}): Promise<void> {
    checkLease(lease);
    ledgerTrimOf(options);
    checkToken(lease.token, 'lease.token');
    if (result?.outcome !== 'success' && result?.outcome !== 'failure') {
      throw new InvalidOptionError('result.outcome', result?.outcome, "'success' or 'failure'");
    }
    if (result.error !== undefined && typeof result.error !== 'string') {
      throw new InvalidOptionError('result.error', result.error, 'a string');
    }
    const retentionMs = checkRetention(options.retentionMs);
    const highest = await this.#ledger.finishOccurrence(lease, result, { ...options, retentionMs });
    if (highest !== undefined) throw new StaleTokenError(lease.job, lease.token, highest);
  }

  /** The ledger's read of one job (see ledgerRead in scripts.ts). */
  async #readLedger(target: ReadTarget): Promise<StoredView> {
    const { key, job } = target;
    const reply = (await this.#reads.run({
      operation: target.operation,
      key,
      job,
      argv: readArguments(target),
    })) as LedgerReadReply;
    const stored = storedViewOf(reply, target);
    this.#known.sawStoreTime(stored.view.now);
    return stored;
  }

  /** The ledger's conditional write of one job, decided on `stored` (see ledgerWrite in scripts.ts). */
  async #writeLedger(
    target: ReadTarget,
    stored: StoredView,
    changes: WriteChanges,
    onKnown?: DecidedOnKnown,
  ): Promise<WriteReply> {
    const { grant, renewKey, releaseKey } = changes;
    const argv: Array<string | number> = [
      target.job,
      target.occurrences.length,
      ...target.occurrences.map(String),
      stored.version!,
      onKnown === undefined ? '' : String(onKnown.decidedAt),
      // A claim made on a known view: '=' and the counter it knew ('' for none: a view presumed
      // new), for the records alone when it moved.
      onKnown !== undefined && target.recordFirst === true ? `=${onKnown.parts.counter}` : '',
      grant === undefined ? '' : String(grant.scheduledAt),
      grant?.owner ?? '',
      grant === undefined ? '' : pxTtl(grant.ttlMs),
      grant?.holdsKey ? '1' : '0',
      renewKey === undefined ? '' : pxTtl(renewKey.ttlMs),
      releaseKey === undefined ? '' : this.#keys.released(target.key),
      releaseKey !== undefined && changes.current === releaseKey.scheduledAt ? '1' : '0',
      changes.put.length,
      changes.drop.length,
    ];
    const records = new Map<number, string>();
    for (const { entry, before } of changes.put) {
      const at = entry.scheduledAt;
      // The index of running occurrences is kept for the claims that read it (those with a
      // `concurrency` above 1): a running occurrence joins it only from one of them, and leaves it
      // when it stops running (so a trim, which drops no running occurrence, never has to). A
      // running record outside the index says so (`unindexed`), so that its finish does not
      // remove it again; a record without it (one of an earlier release) may be in the index.
      const wasRunning = before?.outcome === 'running';
      const indexed = wasRunning
        ? !isUnindexed(stored.parts?.records.get(at))
        : entry.outcome === 'running' && target.running === true;
      const storedEntry = storedEntryOf(entry);
      const record = JSON.stringify(
        entry.outcome === 'running' && !indexed ? { ...storedEntry, unindexed: true } : storedEntry,
      );
      records.set(at, record);
      argv.push(
        String(at),
        record,
        indexChange(before?.outcome === 'queued', entry.outcome === 'queued'),
        entry.outcome === 'running'
          ? !wasRunning && indexed
            ? '1'
            : '0'
          : wasRunning && indexed
            ? '-1'
            : '0',
      );
    }
    for (const entry of changes.drop)
      argv.push(String(entry.scheduledAt), entry.outcome === 'queued' ? '1' : '0');
    const reply = (await this.#writes.run({
      operation: target.operation,
      key: target.key,
      job: target.job,
      argv,
    })) as
      | 0
      | [token: number, now: string, counter: string, keyToken: string]
      | [refused: 0, now: string, records: string[]];
    if (reply === 0) return { written: false };
    if (reply[0] === 0) {
      // Another write came first: the records asked about, as a record-first read returns them.
      const [, now, found] = reply as [0, string, string[]];
      const entries = new Map<number, LedgerEntry>();
      for (const [index, at] of target.occurrences.entries()) {
        entries.set(at, ledgerEntryOf(JSON.parse(found[index]!) as StoredLedgerEntry));
      }
      return {
        written: false,
        stored: { view: { now: Number(now), paused: false, entries }, recordOnly: true },
      };
    }
    // The store's time in microseconds: the known view's time to the microsecond.
    const [token, micros, counter, keyToken] = reply as [number, string, string, string];
    const now = Number(micros) / 1000;
    if (token < 0) return { written: true, now, records, counter, keyToken };
    // The grant's record as the script wrote it: with its token first (see ledgerWrite in scripts.ts).
    const granted = records.get(grant!.scheduledAt)!;
    records.set(grant!.scheduledAt, `{"token":"${token}",${granted.slice(1)}`);
    return { written: true, token, now, records, counter, keyToken };
  }

  /** The job's occurrences under `key` (defaults to the job's name), newest first, at most `limit` (20). */
  async runHistory(job: string, options: { key?: string; limit?: number } = {}): Promise<RunRecord[]> {
    checkJob(job);
    const key = checkKey(options.key ?? job);
    const limit = options.limit ?? redisLockStoreDefaults.historyLimit;
    if (!Number.isSafeInteger(limit) || limit < 0)
      throw new InvalidOptionError('limit', limit, 'an integer >= 0');
    if (limit === 0) return [];
    const lines = (await this.#script('runHistory', key, storeScripts.runHistory, [
      this.#keys.occurrences(key, job),
      limit,
    ])) as string[];
    return lines.map(parseRecord);
  }

  /** The latest occurrence of the job under `key` (defaults to the job's name) that succeeded, or `undefined`. */
  async lastCompleted(job: string, options: { key?: string } = {}): Promise<number | undefined> {
    checkJob(job);
    const key = checkKey(options.key ?? job);
    const records = this.#keys.occurrences(key, job);
    const client = this.client;
    // The fields, then the records newest first, a page a command: 10 first (the newest is
    // usually a success), then 200. Nothing is decoded in Redis, so a job with many records since
    // its last success holds the server no longer than an HKEYS.
    const fields = (await this.#bounded.run('lastCompleted', key, () => client.hkeys(records)))
      .map(Number)
      .filter(Number.isFinite)
      .sort((a, b) => b - a);
    for (let start = 0, size = 10; start < fields.length; start += size, size = 200) {
      const page = fields.slice(start, start + size);
      const found = await this.#bounded.run('lastCompleted', key, () =>
        client.hmget(records, ...page.map(String)),
      );
      for (const [index, raw] of found.entries()) {
        if (raw !== null && (JSON.parse(raw) as { outcome?: string }).outcome === 'success')
          return page[index];
      }
    }
    return undefined;
  }

  /** Pauses the job under `key` fleet-wide, at the server's clock (see `RunLedger.pauseJob`). */
  async pauseJob(job: string, options: { key: string; by: string; reason?: string }): Promise<void> {
    checkJob(job);
    const key = checkKey(options?.key);
    const { by, reason } = options;
    if (typeof by !== 'string' || by.length === 0)
      throw new InvalidOptionError('by', by, 'a non-empty string');
    if (reason !== undefined && typeof reason !== 'string') {
      throw new InvalidOptionError('reason', reason, 'a string');
    }
    await this.#writeScript('pauseJob', key, storeScripts.pauseJob, [
      this.#keys.paused(key, job),
      this.#keys.occurrences(key, job),
      by,
      reason === undefined ? '0' : '1',
      reason ?? '',
    ]);
  }

  async resumeJob(job: string, options: { key: string }): Promise<void> {
    checkJob(job);
    const key = checkKey(options?.key);
    await this.#writeScript('resumeJob', key, storeScripts.resumeJob, [
      this.#keys.paused(key, job),
      this.#keys.occurrences(key, job),
    ]);
  }

  async pauseOf(job: string, options: { key: string }): Promise<JobPause | undefined> {
    checkJob(job);
    const key = checkKey(options?.key);
    const reply = (await this.#script('pauseOf', key, storeScripts.pauseOf, [this.#keys.paused(key, job)])) as
      | [string, string, string | null]
      | null;
    if (reply === null) return undefined;
    const [pausedAt, by, reason] = reply;
    return { pausedAt: Number(pausedAt), by, ...(reason === null ? {} : { reason }) };
  }

  /**
   * Registers the instance, seen at the server's clock, until `ttlMs` after it (one script, under
   * the `{instances}` hash tag); drops instances already expired.
   */
  async registerInstance(info: InstanceInfo, options: { ttlMs: number }): Promise<void> {
    const fields = checkInstanceInfo(info, options?.ttlMs);
    await this.#writeScript('registerInstance', fields.instance, storeScripts.registerInstance, [
      ...this.#keys.instances(),
      fields.instance,
      JSON.stringify(fields),
      pxTtl(options.ttlMs),
    ]);
  }

  async removeInstance(instance: string): Promise<void> {
    checkJob(instance, 'instance');
    await this.#writeScript('removeInstance', instance, storeScripts.removeInstance, [
      ...this.#keys.instances(),
      instance,
    ]);
  }

  /** The instances whose last heartbeat is within their ttl by the server's clock, by name. */
  async listInstances(): Promise<RegisteredInstance[]> {
    const entries = (await this.#script('listInstances', '', storeScripts.listInstances, [
      ...this.#keys.instances(),
    ])) as string[];
    return entries
      .map((entry) => {
        const space = entry.indexOf(' ');
        const info = JSON.parse(entry.slice(space + 1)) as InstanceInfo;
        return { ...info, lastSeenAt: Number(entry.slice(0, space)) };
      })
      .sort((a, b) => (a.instance < b.instance ? -1 : a.instance > b.instance ? 1 : 0));
  }

  /**
   * The fencing check, done by Redis: sets `<prefix>{resource}:value:<name>` to `value` only when
   * `token` is >= the highest token written to `resource` so far, and records `token` as the
   * highest, in one atomic script. A lower token throws `StaleTokenError` (code `STALE_TOKEN`)
   * and writes nothing, so a holder that lost its lease while paused cannot overwrite the work
   * of the holder that took over.
   *
   * @example
   * await pipeline.execute(async () => {
   *   const report = await buildReport();
   *   await store.fencedSet('nightly-report', getLockToken()!, 'latest', JSON.stringify(report));
   * });
   * const latest = await store.fencedGet('nightly-report', 'latest');
   */
  async fencedSet(
    resource: string,
    token: number,
    name: string,
    value: string | Buffer,
    options: FencedSetOptions = {},
  ): Promise<void> {
    checkKey(resource, 'resource');
    checkToken(token, 'token');
    const ttl =
      options.ttl === undefined
        ? ''
        : String(checkTtl(parseDuration(options.ttl, 'ttl', 1, Number.MAX_SAFE_INTEGER)));
    const highest = await this.#writeScript('fencedSet', resource, storeScripts.fencedSet, [
      this.#keys.fence(resource),
      this.#keys.value(resource, name),
      String(token),
      value,
      ttl,
    ]);
    if (highest !== null) throw new StaleTokenError(resource, token, Number(highest));
  }

  /** A value written by {@link fencedSet}, or `undefined`. */
  async fencedGet(resource: string, name: string): Promise<string | undefined> {
    checkKey(resource, 'resource');
    const target = this.#keys.value(resource, name);
    const client = this.client;
    const value = await this.#bounded.run('fencedGet', resource, () => client.get(target));
    return value ?? undefined;
  }

  /** The highest token written to `resource` through {@link fencedSet}, or `undefined`. */
  async highestFencedToken(resource: string): Promise<number | undefined> {
    checkKey(resource, 'resource');
    const fence = this.#keys.fence(resource);
    const client = this.client;
    const value = await this.#bounded.run('highestFencedToken', resource, () => client.get(fence));
    return value === null ? undefined : Number(value);
  }

  /**
   * A rate limit every process on this Redis shares: the rate limiter strategy's `store` option
   * (see shared-rate-limit.ts). One script per call, or per batch of the calls issued together,
   * on the server's clock.
   */
  sharedRateLimiter(options: RateLimiterStrategyOptions, environment: StrategyEnvironment): RateLimiter {
    const client = this.#client;
    return redisSharedRateLimiter(options, environment, this.prefix, checkKey, (key, redisKeys, argv) =>
      this.#bounded.run('rateLimit', key, (load) =>
        runScript(client, rateLimitScript, load, [...redisKeys, ...argv], redisKeys.length),
      ),
    );
  }

  /**
   * Ledger calls as one round trip: the script's batch form (each call's lease key, then each
   * call's ARGV packed into one argument, see batchOf in scripts.ts); one reply per call. Bounded
   * like any command; a write is followed by `WAIT` when the store waits for replicas.
   */
  #sendLedgerCalls(
    script: StoreScript,
    calls: readonly LedgerCall[],
    writes: boolean,
  ): Promise<readonly unknown[]> {
    // One key and one argument a call (see batchOf in scripts.ts), made here, not when a call is
    // queued: a long queue holds less.
    const args: Argument[] = new Array(2 * calls.length);
    for (const [index, call] of calls.entries()) {
      args[index] = this.#keys.lease(call.key);
      args[calls.length + index] = packArguments(call.argv);
    }
    const numberOfKeys = script.numberOfKeys * calls.length;
    const keys = calls.length === 1 ? calls[0]!.key : calls.map((call) => call.key);
    const operation = [...new Set(calls.map((call) => call.operation))].join('/');
    if (!writes || this.#waitForReplicas === 0) {
      return this.#bounded.run(operation, keys, (load) =>
        runScript(this.#client, script, load, args, numberOfKeys),
      ) as Promise<unknown[]>;
    }
    return this.#bounded
      .run(operation, keys, (load) => this.#withWait(script, load, args, numberOfKeys))
      .then((replies) => this.#checkReplicated(operation, keys, replies) as unknown[]);
  }

  /** One script, bounded. */
  #script(operation: string, key: string, script: StoreScript, args: Argument[]): Promise<unknown> {
    const client = this.#client;
    return this.#bounded.run(operation, key, (load) => runScript(client, script, load, args));
  }

  /** One script that writes, followed by `WAIT` when `waitForReplicas` asks for it. */
  async #writeScript(
    operation: string,
    key: string,
    script: StoreScript,
    args: Argument[],
  ): Promise<unknown> {
    if (this.#waitForReplicas === 0) return this.#script(operation, key, script, args);
    const replies = await this.#bounded.run(operation, key, (load) => this.#withWait(script, load, args));
    return this.#checkReplicated(operation, key, replies);
  }

  /**
   * The script and `WAIT` in one pipeline: both go out in one write, one round trip. A `NOSCRIPT`
   * reply is raised so that the bounded run sends the pipeline again with `EVAL`.
   */
  async #withWait(
    script: StoreScript,
    load: boolean,
    args: readonly Argument[],
    numberOfKeys = script.numberOfKeys,
  ): Promise<PipelineReplies> {
    const pipeline = this.client.pipeline();
    runScript(pipeline as unknown as ScriptRunner<unknown>, script, load, args, numberOfKeys);
    const replies = await pipeline.wait(this.#waitForReplicas, this.#replicaTimeout).exec();
    const scriptError = replies?.[0]?.[0];
    if (isNoScriptError(scriptError)) throw scriptError;
    return replies;
  }

  /** The script's reply, once `WAIT` confirmed enough replicas; else `StoreUnavailableError`. */
  #checkReplicated(operation: string, key: KeysOf, replies: PipelineReplies): unknown {
    const [scriptReply, waitReply] = replies ?? [];
    if (scriptReply?.[0]) throw commandError(operation, key, scriptReply[0]);
    const acknowledged = waitReply?.[0] ? -1 : Number(waitReply?.[1]);
    if (acknowledged < this.#waitForReplicas) {
      throw new StoreUnavailableError(
        `Redis ${describe(operation, key)} reached ${Math.max(acknowledged, 0)} of ${this.#waitForReplicas} replicas within ${this.#replicaTimeout} ms.`,
        { cause: waitReply?.[0] ?? undefined },
      );
    }
    return scriptReply?.[1];
  }
}

const maxDate = 8.64e15;

/** One read or write of the run ledger: its operation and lease key (for messages), its script's KEYS and ARGV. */
interface LedgerCall {
  readonly operation: string;
  readonly key: string;
  readonly job: string;
  readonly argv: ReadonlyArray<string | number>;
}

function isOne(reply: unknown): boolean {
  return reply === 1;
}

function ignore(): void {}

function serverMs(seconds: string, microseconds: string): number {
  return Number(seconds) * 1000 + Math.floor(Number(microseconds) / 1000);
}

/**
 * Lock keys and fenced resources go inside a `{...}` hash tag, which the first `}` ends. An empty
 * one would make the tag empty (Redis Cluster would then hash the whole key, and the lease and
 * token keys could land in different slots). One containing `}` would make its keys ambiguous: the
 * value `v}:lease` of the resource `r` is `{r}:value:v}:lease`, the lease of the lock key
 * `r}:value:v`. Without `}`, the tag is exactly the key, and distinct keys never share a Redis key.
 * (A `{` inside the tag is harmless: Redis reads the tag up to the first `}`.)
 */
function checkKey(key: string, name = 'key'): string {
  const refuse = (reason: string) => new InvalidKeyError('RedisLockStore', name, key, reason);
  if (typeof key !== 'string') throw new InvalidOptionError(name, key, 'a non-empty string');
  if (key.length === 0) throw refuse('it is empty');
  if (key.includes('}')) {
    throw refuse("it contains '}', which would end the {...} hash tag the store puts it in");
  }
  // A UTF-16 code unit is at most 3 bytes of UTF-8: a short key needs no counting.
  const bytes = key.length * 3 <= storeKeyByteLimit ? 0 : Buffer.byteLength(key);
  if (bytes > storeKeyByteLimit) {
    throw refuse(`it is ${bytes} bytes of UTF-8; the limit is ${storeKeyByteLimit}`);
  }
  return key;
}

/** PX wants a whole number of ms > 0. */
function checkTtl(ttlMs: number): number {
  if (!(ttlMs > 0) || !Number.isFinite(ttlMs))
    throw new InvalidOptionError('ttlMs', ttlMs, 'a number of ms > 0');
  return pxTtl(ttlMs);
}

/** Rounds up, so a lease never ends before it was asked to. */
function pxTtl(ttlMs: number): number {
  return Math.ceil(ttlMs);
}

/**
 * The `checkKey` / `checkTtl` error as a rejected promise, or `undefined` when both are valid:
 * acquire and renew reject rather than throw, without an async wrapper.
 */
function rejectInvalidLease(key: string, ttlMs: number): Promise<never> | undefined {
  try {
    checkKey(key);
    checkTtl(ttlMs);
    return undefined;
  } catch (error) {
    return Promise.reject(error);
  }
}

function checkToken(token: number, name: string): void {
  if (!Number.isSafeInteger(token) || token < 0)
    throw new InvalidOptionError(name, token, 'a fencing token (an integer >= 0)');
}

function checkEpochMs(value: number, name: string): void {
  if (!Number.isSafeInteger(value))
    throw new InvalidOptionError(name, value, 'epoch milliseconds (an integer)');
}

function checkRetention(retentionMs: number | undefined): number {
  const value = retentionMs ?? redisLockStoreDefaults.retentionMs;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new InvalidOptionError('retentionMs', value, 'an integer number of ms >= 0');
  }
  return value;
}

function checkJob(job: string, name = 'job'): void {
  if (typeof job !== 'string' || job.length === 0)
    throw new InvalidOptionError(name, job, 'a non-empty string');
}

function checkOwner(owner: string, name = 'owner'): void {
  if (typeof owner !== 'string' || owner.length === 0)
    throw new InvalidOptionError(name, owner, 'a non-empty string');
}

/** The public `RunRecord` of one the scripts keep as JSON (numbers as '%d' strings). */
function parseRecord(line: string): RunRecord {
  return runRecordOf(JSON.parse(line) as StoredRunRecord);
}

/** The read's ARGV (see ledgerRead in scripts.ts). */
function readArguments(target: ReadTarget): Array<string | number> {
  const { trim } = target;
  return [
    target.job,
    target.operation === 'claimOccurrence'
      ? `${target.running ? 'claim-running' : 'claim'}${target.recordFirst ? '-record' : ''}`
      : target.operation === 'renewOccurrence'
        ? 'renew'
        : 'finish',
    trim?.retentionMs ?? 0,
    trim?.recordLimit ?? 0,
    target.occurrences.length,
    ...target.occurrences.map(String),
  ];
}

/** What the read script replies (see ledgerRead in scripts.ts). */
type LedgerReadReply = [
  now: string,
  owner: string | null,
  pttl: number,
  current: string | null,
  paused: number,
  total: number,
  oldest: string[],
  fields: string[],
  records: Array<string | null>,
  version: string,
  counter: string,
  keyToken: string,
];

function storedViewOf(reply: LedgerReadReply, target: ReadTarget): StoredView {
  const [nowText, owner, pttl, current, paused, total, oldest, fields, records, version] = reply;
  const now = Number(nowText);
  const entries = new Map<number, LedgerEntry>();
  const raw = new Map<number, string>();
  for (const [index, field] of fields.entries()) {
    const record = records[index];
    if (record == null) continue;
    const at = Number(field);
    entries.set(at, ledgerEntryOf(JSON.parse(record) as StoredLedgerEntry));
    raw.set(at, record);
  }
  const view: LedgerView = {
    now,
    ...(owner === null ? {} : { lease: { owner, expiresAt: pttl < 0 ? maxDate : now + pttl } }),
    ...(current === null ? {} : { current: Number(current) }),
    paused: paused === 1,
    entries,
  };
  // An empty version: the records asked about alone were read (see ledgerRead in scripts.ts).
  if (version === '') return { view, recordOnly: true };
  const [, , , , , , , , , , counter, keyToken] = reply;
  const parts: VersionParts = { counter, owner: owner ?? '', keyToken, records: raw };
  if (target.trim === undefined) return { view, version, parts };
  const history = { total, oldest: oldest.map(Number).filter((at) => entries.has(at)) };
  return { view, version, history, parts };
}

/**
 * The version the scripts compute of a view with these parts, for the occurrences asked about
 * (digestOf in scripts.ts): what the process knows after its own write is checked as a read is.
 */
function versionOf(parts: VersionParts, occurrences: readonly number[]): string {
  const { counter, owner, records } = parts;
  // The key's token counts only while its lease is free (see ledgerRead in scripts.ts).
  const keyToken = owner === '' ? parts.keyToken : '';
  const lines = [counter, owner, keyToken, ...occurrences.map((at) => records.get(at) ?? '')];
  return createHash('sha1').update(lines.join('\n')).digest('hex');
}

/** True when a running record as the store keeps it says it is not in the index of running occurrences. */
function isUnindexed(record: string | undefined): boolean {
  return record?.includes('"unindexed":true') === true;
}

/** '1' when an occurrence joins an index, '-1' when it leaves it, '0' when neither. */
function indexChange(before: boolean, after: boolean): string {
  return before === after ? '0' : after ? '1' : '-1';
}

function checkLease(lease: OccurrenceLease): void {
  if (lease === null || typeof lease !== 'object') {
    throw new InvalidOptionError('lease', lease, 'an OccurrenceLease from claimOccurrence');
  }
  const { job, key, scheduledAt, owner, overlap } = lease;
  checkJob(job, 'lease.job');
  checkKey(key, 'lease.key');
  checkEpochMs(scheduledAt, 'lease.scheduledAt');
  checkOwner(owner, 'lease.owner');
  checkOverlap('lease.overlap', overlap);
  checkConcurrency(lease, 'lease.concurrency');
}
