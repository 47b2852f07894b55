import { Cluster, Redis } from 'ioredis';
import { RedisLockStore } from 'resil/redis';
import {
  describeInstanceRegistryConformance,
  describeLockStoreConformance,
  describeRunLedgerConformance,
} from 'resil/testing';
import { afterAll, beforeAll, describe } from 'vitest';
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

  describeLockStoreConformance('RedisLockStore', store);
  describeRunLedgerConformance('RedisLockStore', store);
  describeInstanceRegistryConformance('RedisLockStore', store);
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

  describeLockStoreConformance('RedisLockStore (Cluster)', store);
  describeRunLedgerConformance('RedisLockStore (Cluster)', store);
  describeInstanceRegistryConformance('RedisLockStore (Cluster)', store);
});
