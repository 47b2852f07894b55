/**
 * RedisLockStore wakes waiters on release: a release publishes on the key's channel, and the
 * store subscribes through a connection of its own only while someone waits. On a private
 * redis-server, so that CLIENT LIST shows exactly the store's connections.
 */
import { Redis } from 'ioredis';
import { RedisLockStore } from 'resil/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../support/processes.ts';
import { privateRedisUnavailableReason, type RedisServer, startRedisServer } from '../../support/redis.ts';
import { heldUntilReleased, itWakesWaitersOnRelease, lockOn } from '../../support/release-wake-ups.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(privateRedisUnavailableReason())('RedisLockStore release notifications', () => {
  let server: RedisServer;
  let client: Redis;
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

  /** Connections in subscriber mode (the store's own), by CLIENT LIST. */
  const subscribers = async () =>
    ((await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string).split('\n').filter(Boolean).length;

  itWakesWaitersOnRelease((name) => new RedisLockStore(client, { prefix: name }));

  it('listens on one connection of its own only while someone waits: none before, one for 8 waiters, none after', async () => {
    const store = new RedisLockStore(client, { prefix: 'connection:' });
    const lock = lockOn(store, 'shared');
    expect(await subscribers()).toBe(0);
    const holder = heldUntilReleased();
    const holding = lock.execute(holder.hold);
    await waitUntil('the holder to hold', async () => (await store.inspect('shared')) !== undefined);
    expect(await subscribers()).toBe(0);
    const waiters = Array.from({ length: 8 }, () => lock.execute(() => sleep(5)));
    await waitUntil('the waiters to subscribe', async () => (await subscribers()) === 1);
    await sleep(100);
    expect(await subscribers()).toBe(1);
    holder.release();
    await Promise.all([holding, ...waiters]);
    await waitUntil('the connection to close', async () => (await subscribers()) === 0, { timeoutMs: 5_000 });
    await store.close();
  });

  it('releaseNotifications: false opens no connection: waiters poll', async () => {
    const store = new RedisLockStore(client, { prefix: 'polling:', releaseNotifications: false });
    const lock = lockOn(store, 'polled');
    const holder = heldUntilReleased();
    const holding = lock.execute(holder.hold);
    await waitUntil('the holder to hold', async () => (await store.inspect('polled')) !== undefined);
    const waiting = lock.execute(() => 'second');
    await sleep(200);
    expect(await subscribers()).toBe(0);
    holder.release();
    await holding;
    expect(await waiting).toBe('second');
  });

  it('close() closes its connection while a waiter waits; the waiter acquires by polling', async () => {
    const store = new RedisLockStore(client, { prefix: 'closing:' });
    const lock = lockOn(store, 'closed');
    const holder = heldUntilReleased();
    const holding = lock.execute(holder.hold);
    await waitUntil('the holder to hold', async () => (await store.inspect('closed')) !== undefined);
    const waiting = lock.execute(() => 'second');
    await waitUntil('the waiter to subscribe', async () => (await subscribers()) === 1);
    await store.close();
    await waitUntil('the connection to close', async () => (await subscribers()) === 0, { timeoutMs: 5_000 });
    holder.release();
    await holding;
    expect(await waiting).toBe('second');
    expect(await subscribers()).toBe(0);
    // A closed store still locks, through the client it was given; it opens nothing any more.
    expect(await lock.execute(() => 'after close')).toBe('after close');
  });
});
