/**
 * What a claim reads on Redis, counted on a private server's INFO commandstats: a claim whose
 * occurrence is done, or running under a live lease, reads that record alone (one HMGET, beside
 * the batch's TIME); a claim that may be granted reads the job's whole view. And the index of
 * running occurrences (`running:<job>`, read by claims with a `concurrency` above 1) holds an
 * occurrence only while it runs, whichever claim or finish ends it.
 */
import { Redis } from 'ioredis';
import type { ClaimRequest } from 'resil';
import { RedisLockStore } from 'resil/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateRedisUnavailableReason, type RedisServer, startRedisServer } from '../../support/redis.ts';

describe.skipIf(privateRedisUnavailableReason())('RedisLockStore: what a claim reads', () => {
  let server: RedisServer;
  let client: Redis;
  let store: RedisLockStore;

  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.url);
    store = new RedisLockStore(client, { prefix: 'reads:' });
  });
  afterAll(async () => {
    await client?.quit();
    await server?.stop();
  });

  /** The commands the server ran (scripts' included) while `action` ran, by name. */
  const commandsOf = async (action: () => Promise<unknown>): Promise<Record<string, number>> => {
    await client.config('RESETSTAT');
    await action();
    const stats = await client.info('commandstats');
    const counts: Record<string, number> = {};
    for (const [, name, calls] of stats.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) {
      if (!name!.startsWith('config') && name !== 'info') counts[name!] = Number(calls);
    }
    return counts;
  };
  const at = Math.floor(Date.now() / 1_000) * 1_000 - 5_000;
  const request = (overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
    job: 'report',
    key: 'report',
    scheduledAt: at,
    owner: `owner-${Math.random()}`,
    instance: 'web-1',
    ttlMs: 10_000,
    overlap: 'skip',
    startingDeadlineMs: 60_000,
    ...overrides,
  });

  it('a claim of a finished occurrence reads its record alone; a manual run or a backfill reads the view', async () => {
    const granting = await commandsOf(async () => {
      const claim = await store.claimOccurrence(request());
      if (claim.status !== 'granted') throw new Error(JSON.stringify(claim));
      await store.finishOccurrence(claim.lease, { outcome: 'success' });
    });
    // The first claim finds no record: it read the view (the lease, the current occurrence, the
    // pause, the queue) after the record.
    expect(granting.get).toBeGreaterThanOrEqual(1);
    expect(granting.exists).toBeGreaterThanOrEqual(1);

    const done = await commandsOf(async () => {
      expect(await store.claimOccurrence(request())).toEqual({ status: 'skipped', reason: 'already-done' });
    });
    expect(done).toEqual({ evalsha: 1, time: 1, hmget: 1 });

    // A backfill of a done occurrence answers the same, from the whole view.
    const backfill = await commandsOf(async () => {
      expect(await store.claimOccurrence(request({ trigger: 'backfill' }))).toEqual({
        status: 'skipped',
        reason: 'already-done',
      });
    });
    expect(backfill.exists).toBe(1);
    // A manual run at the same instant is a new run.
    const manual = await store.claimOccurrence(request({ manual: true, trigger: 'manual' }));
    if (manual.status !== 'granted') throw new Error(JSON.stringify(manual));
    await store.finishOccurrence(manual.lease, { outcome: 'success' });
  });

  it('a claim of an occurrence running elsewhere under a live lease reads its record alone, and waits', async () => {
    const running = await store.claimOccurrence(request({ scheduledAt: at + 1_000 }));
    expect(running.status).toBe('granted');
    const watching = await commandsOf(async () => {
      expect(await store.claimOccurrence(request({ scheduledAt: at + 1_000 }))).toMatchObject({
        status: 'wait',
        runningElsewhere: true,
      });
    });
    expect(watching).toEqual({ evalsha: 1, time: 1, hmget: 1 });
  });

  it('a claim of a queued occurrence reads its record, then the whole view', async () => {
    // A job of its own: the occurrence above still holds the key of 'report'.
    const job = { job: 'digest', key: 'digest', overlap: 'buffer-one' } as const;
    const holder = await store.claimOccurrence(request({ ...job, scheduledAt: at + 2_000 }));
    expect(holder.status).toBe('granted');
    const queued = request({ ...job, scheduledAt: at + 3_000 });
    expect(await store.claimOccurrence(queued)).toMatchObject({ status: 'wait', runningElsewhere: false });
    const again = await commandsOf(async () => {
      expect(await store.claimOccurrence(queued)).toMatchObject({ status: 'wait', runningElsewhere: false });
    });
    // The record first (one script), then the view (a second): the lease, the pause, the queue.
    expect(again.evalsha).toBe(2);
    expect(again.get).toBeGreaterThanOrEqual(1);
    expect(again.exists).toBe(1);
    if (holder.status === 'granted') await store.finishOccurrence(holder.lease, { outcome: 'success' });
  });
  it('a bounded occurrence taken over by a claim with concurrency 1 (a config change) leaves the running index when that run finishes', async () => {
    const running = () => client.zrange('reads:{sync}:running:sync', 0, -1);
    const job = { job: 'sync', key: 'sync' } as const;
    const first = await store.claimOccurrence(request({ ...job, concurrency: 2, ttlMs: 100 }));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    expect(await running()).toEqual([String(at)]);
    // Its holder is gone: the lease runs out on the server's clock.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const takeover = await store.claimOccurrence(request(job));
    if (takeover.status !== 'granted') throw new Error(JSON.stringify(takeover));
    expect(takeover.takeover).toBe(true);
    await store.finishOccurrence(takeover.lease, { outcome: 'success' });
    expect(await running()).toEqual([]);
  });
});
