import { Cluster, Redis } from 'ioredis';
import { RedisLockStore } from 'resil/redis';
import {
  describeInstanceRegistryConformance,
  describeLockStoreConformance,
  describeRunLedgerConformance,
} from 'resil/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keySlot } from '../../../src/stores/redis/lease-batches.ts';
import {
  deleteKeys,
  privateRedisUnavailableReason,
  type RedisClusterServers,
  redisUrlForTests,
  startRedisCluster,
} from '../../support/redis.ts';

const redisUrl = await redisUrlForTests();

describe.skipIf(!redisUrl)('RedisLockStore on a standalone Redis', () => {
  const client = new Redis(redisUrl ?? '', { lazyConnect: true });
  // The server may be shared: remove what these tests wrote (token keys never expire).
  const prefixes: string[] = [];
  afterAll(async () => {
    for (const prefix of prefixes) await deleteKeys(client, prefix);
    await client.quit();
  });
  const store = (prefix: string) => {
    prefixes.push(prefix);
    return new RedisLockStore(client, { prefix });
  };

  describeLockStoreConformance('RedisLockStore', store, { test: { describe, it, expect } });
  describeRunLedgerConformance('RedisLockStore', store, { test: { describe, it, expect } });
  describeInstanceRegistryConformance('RedisLockStore', store, { test: { describe, it, expect } });
});

// A client with a key prefix: ioredis prefixes keys, never pub/sub channels, so the store names
// its release channels itself (the ledger's write publishes on the channel it is given).
describe.skipIf(!redisUrl)('RedisLockStore through a client with a keyPrefix', () => {
  const client = new Redis(redisUrl ?? '', { lazyConnect: true, keyPrefix: `kp-${process.pid}:` });
  const admin = new Redis(redisUrl ?? '', { lazyConnect: true });
  afterAll(async () => {
    await deleteKeys(admin, `kp-${process.pid}:`);
    await Promise.all([client.quit(), admin.quit()]);
  });
  const store = (prefix: string) => new RedisLockStore(client, { prefix });

  describeRunLedgerConformance('RedisLockStore (keyPrefix)', store, { test: { describe, it, expect } });
});

describe.skipIf(privateRedisUnavailableReason())('RedisLockStore on a 3-master Redis Cluster', () => {
  let servers: RedisClusterServers | undefined;
  let cluster: Cluster | undefined;
  beforeAll(async () => {
    servers = await startRedisCluster({ masters: 3 });
    cluster = new Cluster(servers.startupNodes);
  });
  afterAll(async () => {
    cluster?.disconnect();
    await servers?.stop();
  });
  const store = (prefix: string) => new RedisLockStore(cluster!, { prefix });

  it('batches by the slot Redis Cluster computes for each key (CLUSTER KEYSLOT), hash tags and UTF-8 included', async () => {
    const keys = [
      'somekey',
      'foo{hash_tag}',
      'foo{}{bar}',
      'foo{{bar}}zap',
      '{user1000}.following',
      'ключ',
      '🔒',
    ];
    for (let index = 0; index < 100; index++) keys.push(`resil:{job-${index}-${Math.random()}}:lease`);
    for (const key of keys) {
      expect(keySlot(key), key).toBe(Number(await cluster!.call('CLUSTER', 'KEYSLOT', key)));
    }
  });

  it('acquires of many keys in one tick, spread over the slots of 3 masters: one winner per key', async () => {
    const clustered = store(`batch-${Date.now()}:`);
    const keys = Array.from({ length: 40 }, (_, index) => `k${index}`);
    const results = await Promise.all(
      keys.flatMap((key) => [clustered.acquire(key, 'a', 30_000), clustered.acquire(key, 'b', 30_000)]),
    );
    for (const [index, key] of keys.entries()) {
      const [a, b] = [results[2 * index], results[2 * index + 1]];
      expect(a, key).toBeGreaterThan(0);
      expect(b, key).toBeUndefined();
    }
    await Promise.all(keys.map((key) => clustered.release(key, 'a')));
    expect(
      (await Promise.all(keys.map((key) => clustered.inspect(key)))).every((lease) => lease === undefined),
    ).toBe(true);
  });

  describeLockStoreConformance('RedisLockStore (Cluster)', store, { test: { describe, it, expect } });
  describeRunLedgerConformance('RedisLockStore (Cluster)', store, { test: { describe, it, expect } });
  describeInstanceRegistryConformance('RedisLockStore (Cluster)', store, { test: { describe, it, expect } });
});
