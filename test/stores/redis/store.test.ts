import { Redis } from 'ioredis';
import { isInvalidOptionError, isStaleTokenError, isStoreUnavailableError } from 'resil';
import { RedisLockStore, redisLockStoreDefaults } from 'resil/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  privateRedisUnavailableReason,
  type RedisServer,
  scanKeys,
  startRedisServer,
} from '../../support/redis.ts';

const ttl = 30_000;

describe('RedisLockStore defaults and options', () => {
  it('pins the documented defaults', () => {
    expect(redisLockStoreDefaults).toEqual({
      prefix: 'resil:',
      commandTimeout: 2_000,
      waitForReplicas: 0,
      replicaTimeout: 500,
      retentionMs: 7 * 86_400_000,
      historyLimit: 20,
    });
  });

  // No server needed: the store validates before it sends anything.
  const client = new Redis({ lazyConnect: true });
  afterAll(() => client.disconnect());

  it.each([
    [{ commandTimeout: -1 }, 'commandTimeout', '-1'],
    [{ commandTimeout: 'soon' }, 'commandTimeout', '"soon"'],
    [{ commandTimeout: 5 }, 'commandTimeout', '5'],
    [{ waitForReplicas: 1.5 }, 'waitForReplicas', '1.5'],
    [{ waitForReplicas: -1 }, 'waitForReplicas', '-1'],
    [{ waitForReplicas: 1, replicaTimeout: '2s' }, 'replicaTimeout', '"2s"'],
    [{ prefix: 42 }, 'prefix', '42'],
  ])('rejects %o naming the option and the value', (options, option, shown) => {
    let caught: unknown;
    try {
      new RedisLockStore(client, options as never);
    } catch (error) {
      caught = error;
    }
    expect(isInvalidOptionError(caught)).toBe(true);
    expect((caught as Error).message).toContain(option);
    expect((caught as Error).message).toContain(shown);
  });

  it('rejects something that is not an ioredis client', () => {
    expect(() => new RedisLockStore({} as never)).toThrow(/client/);
    expect(() => new RedisLockStore('redis://localhost' as never)).toThrow(/client/);
  });

  it('rejects keys that would break the hash tag, and bad ttls and tokens, before sending', async () => {
    const store = new RedisLockStore(client);
    await expect(store.acquire('', 'owner', ttl)).rejects.toThrow(/key/);
    await expect(store.acquire('}x', 'owner', ttl)).rejects.toThrow(/key/);
    await expect(store.acquire('k', 'owner', 0)).rejects.toThrow(/ttlMs/);
    await expect(store.renew('k', 'owner', Number.NaN)).rejects.toThrow(/ttlMs/);
    await expect(store.fencedSet('r', -1, 'v', 'x')).rejects.toThrow(/token/);
    await expect(store.fencedSet('r', 1.5, 'v', 'x')).rejects.toThrow(/token/);
    expect(client.status).toBe('wait');
  });
});

describe.skipIf(privateRedisUnavailableReason())('RedisLockStore on a private Redis', () => {
  let server: RedisServer;
  let client: Redis;
  /** A second connection for looking at the server without touching the store's command stats. */
  let admin: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.url);
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    client?.disconnect();
    admin?.disconnect();
    await server?.stop();
  });

  it('puts every key it writes under the prefix, lease and token of a lock under one hash tag', async () => {
    const store = new RedisLockStore(client, { prefix: 'billing:' });
    const token = await store.acquire('nightly', 'a', ttl);
    await store.renew('nightly', 'a', ttl);
    await store.inspect('nightly');
    await store.recordRun({
      job: 'nightly',
      scheduledAt: Date.now(),
      outcome: 'success',
      token: token!,
      instance: 'test:1',
      startedAt: Date.now(),
      endedAt: Date.now(),
    });
    await store.fencedSet('report', token!, 'latest', 'body');
    await store.release('nightly', 'a');
    expect(await scanKeys(admin, '*')).toEqual([
      'billing:{nightly}:done',
      'billing:{nightly}:ledger',
      'billing:{nightly}:runs',
      'billing:{nightly}:token',
      'billing:{report}:fence',
      'billing:{report}:value:latest',
    ]);
    await admin.flushall();
  });

  it('sends exactly one command per acquire, renew, release and inspect (MONITOR)', async () => {
    const store = new RedisLockStore(client, { prefix: 'count:' });
    // The first use of a script on a server is EVALSHA, NOSCRIPT, then EVAL (which loads it).
    await store.acquire('warm-up', 'a', ttl);
    await store.renew('warm-up', 'a', ttl);
    await store.inspect('warm-up');
    await store.release('warm-up', 'a');
    const monitor = await admin.monitor();
    const sent: string[] = [];
    let markerSeen: () => void = () => {};
    const marker = new Promise<void>((resolve) => {
      markerSeen = resolve;
    });
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source === 'lua') return; // commands a script ran inside the server, not sent by a client
      if (args[0] === 'echo' && args[1] === 'marker') markerSeen();
      else sent.push(args[0]!);
    });
    const rounds = 25;
    for (let round = 0; round < rounds; round++) {
      await store.acquire(`k${round}`, 'a', ttl);
      await store.renew(`k${round}`, 'a', ttl);
      await store.inspect(`k${round}`);
      await store.release(`k${round}`, 'a');
    }
    await client.echo('marker');
    await marker;
    monitor.disconnect();
    expect(sent.length).toBe(rounds * 4);
    expect(new Set(sent)).toEqual(new Set(['evalsha']));
  });

  it('keeps working after the script cache is flushed (NOSCRIPT falls back to EVAL)', async () => {
    const store = new RedisLockStore(client, { prefix: 'flush:' });
    expect(await store.acquire('k', 'a', ttl)).toBeGreaterThan(0);
    await admin.script('FLUSH');
    expect(await store.renew('k', 'a', ttl)).toBe(true);
    await store.release('k', 'a');
    expect(await store.inspect('k')).toBeUndefined();
  });

  it('seeds a missing token counter from the server clock in microseconds, kept in a key that never expires', async () => {
    const store = new RedisLockStore(client, { prefix: 'tokens:' });
    const [seconds, microseconds] = await admin.time();
    const before = Number(seconds) * 1_000_000 + Number(microseconds);
    const first = (await store.acquire('k', 'a', 500))!;
    expect(first).toBeGreaterThanOrEqual(before);
    expect(first).toBeLessThan(before + 60_000_000);
    expect(Number.isSafeInteger(first)).toBe(true);
    expect(await admin.pttl('tokens:{k}:lease')).toBeGreaterThan(0);
    expect(await admin.pttl('tokens:{k}:lease')).toBeLessThanOrEqual(500);
    expect(await admin.ttl('tokens:{k}:token')).toBe(-1);
    await store.release('k', 'a');
    // Then it counts acquisitions.
    expect(await store.acquire('k', 'b', 500)).toBe(first + 1);
  });

  it('reports the live lease with its expiry by the server clock', async () => {
    const store = new RedisLockStore(client, { prefix: 'inspect:' });
    const token = await store.acquire('k', 'owner-1', 10_000);
    const serverNow = await store.now();
    const lease = await store.inspect('k');
    expect(lease?.owner).toBe('owner-1');
    expect(lease?.token).toBe(token);
    expect(lease!.expiresAt.getTime()).toBeGreaterThan(serverNow + 9_000);
    expect(lease!.expiresAt.getTime()).toBeLessThanOrEqual(serverNow + 10_050);
  });

  describe('fencedSet', () => {
    it('writes when the token is >= the highest seen, refuses a lower one with STALE_TOKEN and writes nothing', async () => {
      const store = new RedisLockStore(client, { prefix: 'fence:' });
      await store.fencedSet('report', 10, 'latest', 'v10');
      await store.fencedSet('report', 10, 'latest', 'v10-again'); // the same holder writes twice
      await store.fencedSet('report', 12, 'other', 'v12');
      let caught: unknown;
      try {
        await store.fencedSet('report', 11, 'latest', 'stale');
      } catch (error) {
        caught = error;
      }
      expect(isStaleTokenError(caught)).toBe(true);
      expect(caught).toMatchObject({ code: 'STALE_TOKEN', resource: 'report', token: 11, highestToken: 12 });
      expect(await store.fencedGet('report', 'latest')).toBe('v10-again');
      expect(await store.highestFencedToken('report')).toBe(12);
      // Resources are fenced independently.
      await store.fencedSet('other-resource', 1, 'latest', 'v1');
      expect(await store.fencedGet('other-resource', 'latest')).toBe('v1');
      expect(await store.fencedGet('report', 'missing')).toBeUndefined();
    });

    it('sets an expiry when asked', async () => {
      const store = new RedisLockStore(client, { prefix: 'fence-ttl:' });
      await store.fencedSet('cache', 1, 'entry', 'v', { ttl: '10s' });
      const pttl = await admin.pttl('fence-ttl:{cache}:value:entry');
      expect(pttl).toBeGreaterThan(9_000);
      expect(pttl).toBeLessThanOrEqual(10_000);
      expect(await admin.pttl('fence-ttl:{cache}:fence')).toBe(-1);
    });
  });

  it('keeps run records as JSON, with their error message', async () => {
    const store = new RedisLockStore(client, { prefix: 'ledger:' });
    const record = {
      job: 'sync',
      scheduledAt: Date.now() - 1_000,
      outcome: 'failure' as const,
      token: 7,
      instance: 'host:42',
      startedAt: Date.now() - 900,
      endedAt: Date.now() - 800,
      error: 'upstream said "no"',
    };
    await store.recordRun(record);
    expect(await store.runHistory('sync')).toEqual([record]);
    expect(await store.runHistory('sync', 0)).toEqual([]);
    await expect(store.recordRun({ ...record, token: 6 })).rejects.toSatisfy(isStaleTokenError);
    await expect(store.recordRun(record, { historyLimit: 0 })).rejects.toThrow(/historyLimit/);
  });
});

describe.skipIf(privateRedisUnavailableReason())('RedisLockStore waitForReplicas (WAIT)', () => {
  let master: RedisServer;
  let replica: RedisServer;
  let client: Redis;
  let replicaClient: Redis;
  beforeAll(async () => {
    master = await startRedisServer();
    replica = await startRedisServer({ args: ['--replicaof', '127.0.0.1', String(master.port)] });
    client = new Redis(master.url);
    replicaClient = new Redis(replica.url);
    // Bounded by the test's hook timeout; a fresh replica syncs in well under a second.
    for (;;) {
      const info = await replicaClient.info('replication');
      if (info.includes('master_link_status:up')) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
  afterAll(async () => {
    client?.disconnect();
    replicaClient?.disconnect();
    await replica?.stop();
    await master?.stop();
  });

  it('returns a token only once the lease and the token are on the replica', async () => {
    const store = new RedisLockStore(client, { prefix: 'wait:', waitForReplicas: 1, replicaTimeout: 500 });
    const token = await store.acquire('k', 'a', ttl);
    // WAIT returned, so the replica already applied both writes: no polling needed.
    expect(await replicaClient.get('wait:{k}:lease')).toBe('a');
    expect(await replicaClient.get('wait:{k}:token')).toBe(String(token));
    expect(await store.renew('k', 'a', ttl)).toBe(true);
    await store.fencedSet('r', token!, 'v', 'x');
    expect(await replicaClient.get('wait:{r}:value:v')).toBe('x');
  });

  it('fails with StoreUnavailableError and gives the lease back when too few replicas acknowledge', async () => {
    const store = new RedisLockStore(client, { prefix: 'wait2:', waitForReplicas: 2, replicaTimeout: 100 });
    const startedAt = performance.now();
    let caught: unknown;
    try {
      await store.acquire('k', 'a', ttl);
    } catch (error) {
      caught = error;
    }
    expect(isStoreUnavailableError(caught)).toBe(true);
    expect((caught as Error).message).toMatch(/acquire for "k" reached 1 of 2 replicas within 100 ms/);
    expect(performance.now() - startedAt).toBeLessThan(1_000);
    expect(await store.inspect('k')).toBeUndefined();
  });
});
