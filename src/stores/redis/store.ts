import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import { parseDurationInRange } from '../../pipeline/duration.ts';
import { InvalidOptionError } from '../../pipeline/errors.ts';
import { StaleTokenError, StoreUnavailableError } from '../../strategies/lock/errors.ts';
import type { RunLedger, RunRecord } from '../../strategies/lock/run-ledger.ts';
import type { LeaseInfo, LockStore } from '../../strategies/lock/store.ts';
import { BoundedCommands, type ConnectionStatus, commandError, describe } from './bounded-commands.ts';
import { redisLockStoreDefaults, redisLockStoreLimits } from './defaults.ts';
import { guardErrorEvents } from './error-events.ts';
import { RedisKeys } from './keys.ts';
import type { FencedSetOptions, RedisLockStoreOptions } from './options.ts';
import { type ScriptedCommands, type ScriptedPipeline, storeScripts } from './scripts.ts';

type Client = (Redis | Cluster) & ScriptedCommands & ConnectionStatus;

/** What `WAIT` answered when fewer replicas than asked acknowledged in time. */
type PipelineReplies = Array<[Error | null, unknown]> | null;

/**
 * A {@link LockStore} and {@link RunLedger} on Redis, through an ioredis client you create (so TLS,
 * ACL users, Sentinel and Cluster are configured the ioredis way), plus a fenced write.
 *
 * - Each operation is one Lua script: one round trip, atomic. Lease and token keys of a lock share
 *   a `{key}` hash tag, so it works on Redis Cluster.
 * - Expiry is judged by Redis (`PX`); `now()` is the server's clock (`TIME`).
 * - Fencing tokens: max(last token + 1, the server's `TIME` in microseconds), kept in a key that
 *   never expires. They increase on every acquire, also across a restart without persistence and
 *   (while server clocks agree) across a failover that lost the last increments.
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
export class RedisLockStore implements LockStore, RunLedger {
  /** The client the store sends through (the one you passed). */
  readonly client: Redis | Cluster;
  /** The key prefix in use. */
  readonly prefix: string;
  readonly #commands: Client;
  readonly #keys: RedisKeys;
  readonly #bounded: BoundedCommands;
  readonly #waitForReplicas: number;
  readonly #replicaTimeout: number;

  constructor(client: Redis | Cluster, options: RedisLockStoreOptions = {}) {
    if (client === null || typeof client !== 'object' || typeof client.defineCommand !== 'function') {
      throw new InvalidOptionError('client', client, 'an ioredis Redis or Cluster instance');
    }
    const prefix = options.prefix ?? redisLockStoreDefaults.prefix;
    if (typeof prefix !== 'string') throw new InvalidOptionError('prefix', prefix, 'a string');
    const { commandTimeout: timeoutLimits, replicaTimeout: replicaLimits } = redisLockStoreLimits;
    const commandTimeout = parseDurationInRange(
      options.commandTimeout ?? redisLockStoreDefaults.commandTimeout,
      'commandTimeout',
      timeoutLimits.min,
      timeoutLimits.max,
    );
    const waitForReplicas = options.waitForReplicas ?? redisLockStoreDefaults.waitForReplicas;
    if (!Number.isSafeInteger(waitForReplicas) || waitForReplicas < 0) {
      throw new InvalidOptionError('waitForReplicas', waitForReplicas, 'an integer >= 0');
    }
    const replicaTimeout = parseDurationInRange(
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
    this.client = client;
    this.prefix = prefix;
    this.#keys = new RedisKeys(prefix);
    this.#waitForReplicas = waitForReplicas;
    this.#replicaTimeout = Math.ceil(replicaTimeout);
    for (const [name, definition] of Object.entries(storeScripts)) {
      // Same name, same script: several stores on one client redefine it harmlessly.
      client.defineCommand(name, definition);
    }
    guardErrorEvents(client);
    this.#commands = client as Client;
    this.#bounded = new BoundedCommands(this.#commands, commandTimeout);
  }

  // acquire, renew and release are the hot path: no async wrapper, no named closures.
  acquire(key: string, owner: string, ttlMs: number): Promise<number | undefined> {
    let lease: string;
    let ttl: number;
    try {
      lease = this.#keys.lease(checkKey(key));
      ttl = checkTtl(ttlMs);
    } catch (error) {
      return Promise.reject(error);
    }
    const token = this.#keys.token(key);
    const commands = this.#commands;
    if (this.#waitForReplicas > 0) return this.#acquireReplicated(key, lease, token, owner, ttl);
    return this.#bounded
      .run(
        'acquire',
        key,
        () => commands.resilLockAcquire(lease, token, owner, ttl),
        // A reply we gave up on may still mean the lease was taken; releasing it (queued behind
        // the acquire on the same connection) keeps a late execution from holding the key a ttl.
        () => this.#undoAcquire(lease, owner),
      )
      .then(tokenOrUndefined);
  }

  async #acquireReplicated(key: string, lease: string, token: string, owner: string, ttl: number) {
    const replies = await this.#bounded.run(
      'acquire',
      key,
      () => this.#withWait(this.#pipeline().resilLockAcquire(lease, token, owner, ttl)),
      () => this.#undoAcquire(lease, owner),
    );
    const issued = replies?.[0]?.[1];
    try {
      this.#checkReplicated('acquire', key, replies);
    } catch (error) {
      if (typeof issued === 'number') this.#undoAcquire(lease, owner);
      throw error;
    }
    return typeof issued === 'number' ? issued : undefined;
  }

  #undoAcquire(lease: string, owner: string): void {
    this.#commands.resilLockRelease(lease, owner).catch(ignore);
  }

  renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    let lease: string;
    let ttl: number;
    try {
      lease = this.#keys.lease(checkKey(key));
      ttl = checkTtl(ttlMs);
    } catch (error) {
      return Promise.reject(error);
    }
    const commands = this.#commands;
    if (this.#waitForReplicas > 0) {
      return this.#bounded
        .run('renew', key, () => this.#withWait(this.#pipeline().resilLockRenew(lease, owner, ttl)))
        .then((replies) => this.#checkReplicated('renew', key, replies) === 1);
    }
    return this.#bounded.run('renew', key, () => commands.resilLockRenew(lease, owner, ttl)).then(isOne);
  }

  release(key: string, owner: string): Promise<void> {
    let lease: string;
    try {
      lease = this.#keys.lease(checkKey(key));
    } catch (error) {
      return Promise.reject(error);
    }
    const commands = this.#commands;
    return this.#bounded.run('release', key, () => commands.resilLockRelease(lease, owner)).then(ignore);
  }

  async inspect(key: string): Promise<LeaseInfo | undefined> {
    const lease = this.#keys.lease(checkKey(key));
    const token = this.#keys.token(key);
    const commands = this.#commands;
    const reply = await this.#bounded.run('inspect', key, () => commands.resilLockInspect(lease, token));
    if (reply === null) return undefined;
    const [owner, issued, pttl, seconds, microseconds] = reply;
    const expiresAt = pttl < 0 ? maxDate : serverMs(seconds, microseconds) + pttl;
    return { owner, token: Number(issued), expiresAt: new Date(expiresAt) };
  }

  /** The Redis server's clock (`TIME`), in epoch ms. */
  async now(): Promise<number> {
    const client = this.client;
    const [seconds, microseconds] = await this.#bounded.run('TIME', '', () => client.time());
    return serverMs(String(seconds), String(microseconds));
  }

  async isCompleted(job: string, scheduledAt: number): Promise<boolean> {
    const keys = this.#keys;
    checkKey(job, 'job');
    checkEpochMs(scheduledAt, 'scheduledAt');
    const commands = this.#commands;
    const reply = await this.#bounded.run('isCompleted', job, () =>
      commands.resilLedgerIsCompleted(
        keys.ledger(job),
        keys.done(job),
        redisLockStoreDefaults.retentionMs,
        scheduledAt,
      ),
    );
    return reply === 1;
  }

  async recordRun(
    record: RunRecord,
    options: { retentionMs?: number; historyLimit?: number } = {},
  ): Promise<void> {
    const { job, token, scheduledAt } = record;
    checkKey(job, 'record.job');
    checkToken(token, 'record.token');
    checkEpochMs(scheduledAt, 'record.scheduledAt');
    const retentionMs = options.retentionMs ?? redisLockStoreDefaults.retentionMs;
    if (!Number.isSafeInteger(retentionMs) || retentionMs < 0) {
      throw new InvalidOptionError('retentionMs', retentionMs, 'an integer number of ms >= 0');
    }
    const historyLimit = options.historyLimit ?? redisLockStoreDefaults.historyLimit;
    if (!Number.isSafeInteger(historyLimit) || historyLimit < 1) {
      throw new InvalidOptionError('historyLimit', historyLimit, 'an integer >= 1');
    }
    const keys = this.#keys;
    const commands = this.#commands;
    const args = [
      keys.ledger(job),
      keys.runs(job),
      keys.done(job),
      String(token),
      JSON.stringify(record),
      historyLimit,
      record.outcome === 'success' ? '1' : '0',
      scheduledAt,
      retentionMs,
    ] as const;
    let highest: unknown;
    if (this.#waitForReplicas === 0) {
      highest = await this.#bounded.run('recordRun', job, () => commands.resilLedgerRecord(...args));
    } else {
      const replies = await this.#bounded.run('recordRun', job, () =>
        this.#withWait(this.#pipeline().resilLedgerRecord(...args)),
      );
      highest = this.#checkReplicated('recordRun', job, replies);
    }
    if (highest !== null) throw new StaleTokenError(job, token, Number(highest));
  }

  async runHistory(job: string, limit: number = redisLockStoreDefaults.historyLimit): Promise<RunRecord[]> {
    checkKey(job, 'job');
    if (!Number.isSafeInteger(limit) || limit < 0)
      throw new InvalidOptionError('limit', limit, 'an integer >= 0');
    if (limit === 0) return [];
    const runs = this.#keys.runs(job);
    const client = this.client;
    const lines = await this.#bounded.run('runHistory', job, () => client.lrange(runs, 0, limit - 1));
    return lines.map((line) => JSON.parse(line) as RunRecord);
  }

  async lastCompleted(job: string): Promise<number | undefined> {
    checkKey(job, 'job');
    const keys = this.#keys;
    const commands = this.#commands;
    const latest = await this.#bounded.run('lastCompleted', job, () =>
      commands.resilLedgerLastCompleted(keys.ledger(job), keys.done(job), redisLockStoreDefaults.retentionMs),
    );
    return latest === null ? undefined : Number(latest);
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
        : String(checkTtl(parseDurationInRange(options.ttl, 'ttl', 1, Number.MAX_SAFE_INTEGER)));
    const fence = this.#keys.fence(resource);
    const target = this.#keys.value(resource, name);
    const commands = this.#commands;
    const send = () => commands.resilFencedSet(fence, target, String(token), value, ttl);
    let highest: unknown;
    if (this.#waitForReplicas === 0) {
      highest = await this.#bounded.run('fencedSet', resource, send);
    } else {
      const replies = await this.#bounded.run('fencedSet', resource, () =>
        this.#withWait(this.#pipeline().resilFencedSet(fence, target, String(token), value, ttl)),
      );
      highest = this.#checkReplicated('fencedSet', resource, replies);
    }
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

  #pipeline(): ScriptedPipeline {
    return this.client.pipeline() as ScriptedPipeline;
  }

  /** Appends `WAIT` to a pipeline holding one script call: both go out in one write, one round trip. */
  #withWait(pipeline: ChainableCommander): Promise<PipelineReplies> {
    return pipeline.wait(this.#waitForReplicas, this.#replicaTimeout).exec();
  }

  /** The script's reply, once `WAIT` confirmed enough replicas; else `StoreUnavailableError`. */
  #checkReplicated(operation: string, key: string, replies: PipelineReplies): unknown {
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

function tokenOrUndefined(issued: number | null): number | undefined {
  return issued === null ? undefined : issued;
}

function isOne(reply: unknown): boolean {
  return reply === 1;
}

function ignore(): void {}

function serverMs(seconds: string, microseconds: string): number {
  return Number(seconds) * 1000 + Math.floor(Number(microseconds) / 1000);
}

/**
 * Keys go inside a `{...}` hash tag. An empty one, or one starting with `}`, would make the tag
 * empty, so Redis Cluster would hash the whole key and the lease and token keys could land in
 * different slots.
 */
function checkKey(key: string, name = 'key'): string {
  if (typeof key !== 'string' || key.length === 0 || key.charCodeAt(0) === 125) {
    throw new InvalidOptionError(name, key, "a non-empty string that does not start with '}'");
  }
  return key;
}

/** PX wants a whole number of ms > 0; round up so a lease never ends before it was asked to. */
function checkTtl(ttlMs: number): number {
  if (!(ttlMs > 0) || !Number.isFinite(ttlMs))
    throw new InvalidOptionError('ttlMs', ttlMs, 'a number of ms > 0');
  return Math.ceil(ttlMs);
}

function checkToken(token: number, name: string): void {
  if (!Number.isSafeInteger(token) || token < 0)
    throw new InvalidOptionError(name, token, 'a fencing token (an integer >= 0)');
}

function checkEpochMs(value: number, name: string): void {
  if (!Number.isSafeInteger(value))
    throw new InvalidOptionError(name, value, 'epoch milliseconds (an integer)');
}
