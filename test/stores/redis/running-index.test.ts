/**
 * The Redis store's index of running occurrences (`running:<job>`, read by claims with a
 * `concurrency` above 1) holds an occurrence only while it runs, whichever claim or finish ends it.
 */
import { Redis } from 'ioredis';
import type { ClaimRequest } from 'resil';
import { RedisLockStore } from 'resil/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateRedisUnavailableReason, type RedisServer, startRedisServer } from '../../support/redis.ts';

describe.skipIf(privateRedisUnavailableReason())('RedisLockStore: the index of running occurrences', () => {
  let server: RedisServer;
  let client: Redis;
  let store: RedisLockStore;

  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.url);
    store = new RedisLockStore(client, { prefix: 'idx:' });
  });
  afterAll(async () => {
    await client?.quit();
    await server?.stop();
  });

  const at = Math.floor(Date.now() / 1_000) * 1_000 - 5_000;
  const request = (overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
    job: 'sync',
    key: 'sync',
    scheduledAt: at,
    owner: `owner-${Math.random()}`,
    instance: 'web-1',
    ttlMs: 10_000,
    overlap: 'skip',
    startingDeadlineMs: 60_000,
    ...overrides,
  });
  const running = () => client.zrange('idx:{sync}:running:sync', 0, -1);

  it('a bounded occurrence taken over by a claim with concurrency 1 (a config change) leaves it when that run finishes', async () => {
    const first = await store.claimOccurrence(request({ concurrency: 2, ttlMs: 100 }));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    expect(await running()).toEqual([String(at)]);
    // Its holder is gone: the lease runs out on the server's clock.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const takeover = await store.claimOccurrence(request());
    if (takeover.status !== 'granted') throw new Error(JSON.stringify(takeover));
    expect(takeover.takeover).toBe(true);
    await store.finishOccurrence(takeover.lease, { outcome: 'success' });
    expect(await running()).toEqual([]);
  });
});
