import { Cluster, Redis } from 'ioredis';
import { ResiliencePipelineBuilder, type TelemetryEvent } from 'resil';
import { RedisLockStore } from 'resil/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deleteKeys,
  privateRedisUnavailableReason,
  type RedisClusterServers,
  redisUrlForTests,
  startRedisCluster,
  startRedisServer,
} from '../../support/redis.ts';
import { describeSharedRateLimitConformance } from '../../support/shared-rate-limit-conformance.ts';

const redisUrl = await redisUrlForTests();

describe.skipIf(!redisUrl)('RedisLockStore.sharedRateLimiter', () => {
  const client = new Redis(redisUrl ?? '', { lazyConnect: true });
  const prefixes = new Set<string>();
  afterAll(async () => {
    for (const prefix of prefixes) await deleteKeys(client, prefix);
    await client.quit();
  });

  describeSharedRateLimitConformance('RedisLockStore', {
    store: (prefix) => {
      prefixes.add(prefix);
      return new RedisLockStore(client, { prefix });
    },
    invalidKey: 'a}b',
  });

  it('keeps one key per limit, <prefix>{<key>}:rate-limit, expiring once the bucket is full again', async () => {
    const prefix = `rl-keys-${Date.now()}:`;
    prefixes.add(prefix);
    const store = new RedisLockStore(client, { prefix });
    const pipeline = new ResiliencePipelineBuilder()
      .addRateLimiter({ tokenLimit: 2, replenishmentPeriod: '10s', store, key: 'billing' })
      .build();
    await pipeline.execute(() => 'ran');
    const keys = await client.keys(`${prefix}*`);
    expect(keys).toEqual([`${prefix}{billing}:rate-limit`]);
    // One token of two taken, refilled in 5 s: the key lives until then.
    const ttl = await client.pttl(keys[0]!);
    expect(ttl).toBeGreaterThan(4_000);
    expect(ttl).toBeLessThanOrEqual(5_000);
  });
});

describe.skipIf(privateRedisUnavailableReason())('RedisLockStore.sharedRateLimiter under faults', () => {
  it('decides locally within storeTimeout while Redis is stopped (SIGSTOP), and reports the switch once', async () => {
    const server = await startRedisServer();
    const client = new Redis(server.url, { maxRetriesPerRequest: null });
    try {
      const store = new RedisLockStore(client, { prefix: 'fault:' });
      const events: TelemetryEvent[] = [];
      const pipeline = new ResiliencePipelineBuilder({ telemetry: (event) => events.push(event) })
        .addRateLimiter({ tokenLimit: 3, replenishmentPeriod: '1h', store, key: 'k', storeTimeout: 200 })
        .build();
      expect((await pipeline.settle(() => 'ran')).ok).toBe(true);
      server.kill('SIGSTOP');
      const startedAt = performance.now();
      const outcomes = await Promise.all(Array.from({ length: 5 }, () => pipeline.settle(() => 'ran')));
      const elapsed = performance.now() - startedAt;
      // The local bucket (3 tokens, this process only) decides: fail-open, bounded by storeTimeout.
      expect(outcomes.filter((outcome) => outcome.ok)).toHaveLength(3);
      expect(elapsed).toBeLessThan(1_000);
      const unavailable = events.filter((event) => event.event === 'OnRateLimiterStoreUnavailable');
      expect(unavailable).toHaveLength(1);
      expect(unavailable[0]!.args).toMatchObject({ key: 'k', localFor: 1_000 });
      // Within the next second, no call waits for the store.
      const quick = performance.now();
      await pipeline.settle(() => 'ran');
      expect(performance.now() - quick).toBeLessThan(50);
    } finally {
      server.kill('SIGCONT');
      client.disconnect();
      await server.stop();
    }
  });
});

describe.skipIf(privateRedisUnavailableReason())(
  'RedisLockStore.sharedRateLimiter on a 3-master Redis Cluster',
  () => {
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

    // Each limit's key is in its own {key} hash tag: one slot per script call, whichever master has it.
    describeSharedRateLimitConformance('RedisLockStore (Cluster)', {
      store: (prefix) => new RedisLockStore(cluster!, { prefix }),
    });
  },
);
