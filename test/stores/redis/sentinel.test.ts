/**
 * Failover with real processes: a master, a replica and a sentinel. The master is frozen
 * (SIGSTOP), the sentinel promotes the replica, and an ioredis client with `failoverDetector: true`
 * follows it: locking moves to the new master within a bound, without restarting anything.
 */
import { Redis } from 'ioredis';
import { RedisLockStore } from 'resil/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../support/processes.ts';
import {
  privateRedisUnavailableReason,
  type RedisSentinel,
  type RedisServer,
  startRedisSentinel,
  startRedisServer,
} from '../../support/redis.ts';

const downAfterMs = 1_000;
const commandTimeout = 500;
/** Sentinel notices within downAfterMs, promotes in about a second; ioredis then reconnects. */
const failoverBound = 10_000;

describe.skipIf(privateRedisUnavailableReason(['redis-server', 'redis-cli', 'redis-sentinel']))(
  'RedisLockStore with Sentinel',
  () => {
    let master: RedisServer;
    let replica: RedisServer;
    let sentinel: RedisSentinel;
    let client: Redis;
    let sentinelClient: Redis;

    beforeAll(async () => {
      master = await startRedisServer();
      replica = await startRedisServer({ args: ['--replicaof', '127.0.0.1', String(master.port)] });
      // A replica in sync before the sentinel starts is in the master's first INFO reply, so the
      // sentinel knows it at once instead of at its next 10 s INFO poll.
      const replicaClient = new Redis(replica.url);
      await waitUntil('the replica to sync', async () =>
        (await replicaClient.info('replication')).includes('master_link_status:up'),
      );
      replicaClient.disconnect();
      sentinel = await startRedisSentinel({ masterPort: master.port, downAfterMs, failoverTimeoutMs: 3_000 });
      sentinelClient = new Redis({ port: sentinel.port, host: '127.0.0.1' });
      await waitUntil(
        'the sentinel to know the replica in sync',
        async () => {
          const replicas = (await sentinelClient.call(
            'SENTINEL',
            'REPLICAS',
            sentinel.masterName,
          )) as string[][];
          return replicas.some((fields) => {
            const info = Object.fromEntries(pairs(fields));
            return Number(info.port) === replica.port && info['master-link-status'] === 'ok';
          });
        },
        { timeoutMs: 15_000, intervalMs: 100 },
      );
      // What the Sentinel example of docs/redis.md sets: the sentinels, the master's name and the detector.
      client = new Redis({
        sentinels: [{ host: '127.0.0.1', port: sentinel.port }],
        name: sentinel.masterName,
        failoverDetector: true,
        retryStrategy: () => 100,
      });
    }, 30_000);

    afterAll(async () => {
      master?.kill('SIGCONT');
      client?.disconnect();
      sentinelClient?.disconnect();
      await sentinel?.stop();
      await replica?.stop();
      await master?.stop();
    });

    it('moves locking to the promoted replica within a bound when the master freezes, keeping a WAIT-replicated lease', async () => {
      const durable = new RedisLockStore(client, {
        prefix: 'sentinel:',
        commandTimeout,
        waitForReplicas: 1,
        replicaTimeout: 300,
      });
      const store = new RedisLockStore(client, { prefix: 'sentinel:', commandTimeout });
      const before = (await durable.acquire('nightly', 'old-holder', 60_000))!;
      expect(before).toBeGreaterThan(0);
      expect(connectedPort(client)).toBe(master.port);

      master.kill('SIGSTOP');
      const frozenAt = performance.now();
      const failures: string[] = [];
      let attempt = 0;
      const token = await waitUntil(
        'locking to work on the new master',
        async () => {
          attempt++;
          try {
            return await store.acquire(`after-${attempt}`, 'new-holder', 10_000);
          } catch (error) {
            failures.push((error as { code?: string }).code ?? String(error));
            throw error;
          }
        },
        { timeoutMs: failoverBound + 5_000, intervalMs: 50 },
      );
      const movedAfter = performance.now() - frozenAt;

      expect(connectedPort(client)).toBe(replica.port);
      expect(movedAfter).toBeLessThan(failoverBound);
      // While the master was frozen, each attempt failed within the bound, with the lock's error.
      expect(new Set(failures)).toEqual(new Set(['STORE_UNAVAILABLE']));
      // A fresh key on the new master: its counter is seeded from the clock, above the old tokens.
      expect(token).toBeGreaterThan(before);
      // The lease acquired with waitForReplicas: 1 survived the failover.
      expect(await store.inspect('nightly')).toMatchObject({ owner: 'old-holder', token: before });
      expect(await store.acquire('nightly', 'someone-else', 10_000)).toBeUndefined();
      console.info(
        `Sentinel failover: locking moved to the new master ${Math.round(movedAfter)} ms after the freeze.`,
      );
    }, 30_000);
  },
);

function connectedPort(client: Redis): number | undefined {
  return (client as unknown as { stream?: { remotePort?: number } }).stream?.remotePort;
}

function* pairs(fields: string[]): Generator<[string, string]> {
  for (let index = 0; index + 1 < fields.length; index += 2) yield [fields[index]!, fields[index + 1]!];
}
