/**
 * PostgresLockStore wakes waiters on release: a release runs pg_notify on the store's channel, and
 * the store LISTENs on one pool client only while someone waits, holding an advisory lock per key
 * waited on (this test's schema's own lock class), which pg_locks shows.
 */
import pg from 'pg';
import { PostgresLockStore } from 'resil/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveTables } from '../../../src/stores/postgres/schema.ts';
import { databaseUrlForTests, uniqueSchemaName, waiterLockBackends } from '../../support/postgres.ts';
import { waitUntil } from '../../support/processes.ts';
import { heldUntilReleased, itWakesWaitersOnRelease, lockOn } from '../../support/release-wake-ups.ts';

const databaseUrl = await databaseUrlForTests();
const schema = uniqueSchemaName('wake');
const ttl = 30_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!databaseUrl)('PostgresLockStore release notifications', () => {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 5, connectionTimeoutMillis: 5_000 });
  const { releaseChannel, waiterLockClass } = resolveTables({ schema });

  beforeAll(async () => {
    await pool.query(`CREATE SCHEMA ${schema}`);
    await new PostgresLockStore(pool, { schema }).ensureTables();
  });
  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  /** The backends holding this schema's waiter locks: the store's listening client, while someone waits. */
  const listeningBackends = () => waiterLockBackends(pool, waiterLockClass);
  const listeners = async () => (await listeningBackends()).length;

  /** Advisory locks held on this schema's waiter lock class: one per key waited on. */
  const waiterLocks = async () =>
    Number(
      (
        await pool.query<{ count: string }>(
          "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::int::oid AND objsubid = 2",
          [waiterLockClass],
        )
      ).rows[0]!.count,
    );

  itWakesWaitersOnRelease(() => new PostgresLockStore(pool, { schema }));

  it('listens on one pool client only while someone waits: none before, one for 8 waiters, closed after', async () => {
    const store = new PostgresLockStore(pool, { schema });
    const lock = lockOn(store, 'shared');
    expect(await listeners()).toBe(0);
    const holder = heldUntilReleased();
    const holding = lock.execute(holder.hold);
    await waitUntil('the holder to hold', async () => (await store.inspect('shared')) !== undefined);
    const waiters = Array.from({ length: 8 }, () => lock.execute(() => sleep(5)));
    await waitUntil('the waiters to listen', async () => (await listeners()) === 1);
    await waitUntil('the key to be marked as waited on', async () => (await waiterLocks()) === 1);
    await sleep(100);
    expect(await listeners()).toBe(1);
    expect(await waiterLocks()).toBe(1);
    holder.release();
    await Promise.all([holding, ...waiters]);
    await waitUntil('the client to stop listening', async () => (await listeners()) === 0);
    // Closed, not returned to the pool: its session, LISTEN and waiter locks are gone with it.
    await waitUntil('the client to leave the pool', () => pool.idleCount === pool.totalCount);
    expect(await waiterLocks()).toBe(0);
    await store.close();
  });

  it('a release nobody waits for sends no NOTIFY; one with a waiter on its key does', async () => {
    const store = new PostgresLockStore(pool, { schema });
    const spy = await pool.connect();
    const heard: string[] = [];
    spy.on('notification', (message) => heard.push(message.payload ?? ''));
    try {
      await spy.query(`LISTEN "${releaseChannel}"`);
      await store.acquire('unwatched', 'a', ttl);
      await store.release('unwatched', 'a');
      await store.acquire('watched', 'a', ttl);
      const unsubscribe = store.onRelease('watched', () => {});
      await waitUntil('the key to be marked as waited on', async () => (await waiterLocks()) === 1);
      await store.release('watched', 'a');
      await waitUntil('the NOTIFY of the watched key', () => heard.includes('watched'));
      // Notifications arrive in commit order: the unwatched release, earlier, would be first.
      expect(heard).toEqual(['watched']);
      unsubscribe();
    } finally {
      await spy.query('UNLISTEN *');
      spy.release();
      await store.close();
    }
  });

  it('a pool of one connection never listens: its waiters poll, and the store keeps its one connection', async () => {
    const single = new pg.Pool({ connectionString: databaseUrl, max: 1, connectionTimeoutMillis: 5_000 });
    try {
      const store = new PostgresLockStore(single, { schema });
      const lock = lockOn(store, 'single');
      const holder = heldUntilReleased();
      const holding = lock.execute(holder.hold);
      await waitUntil('the holder to hold', async () => (await store.inspect('single')) !== undefined);
      const waiting = lock.execute(() => 'second');
      await sleep(200);
      expect(await listeners()).toBe(0);
      holder.release();
      await holding;
      expect(await waiting).toBe('second');
    } finally {
      await single.end();
    }
  });

  it('close() closes the client while a waiter waits; the waiter acquires by polling', async () => {
    const store = new PostgresLockStore(pool, { schema });
    const lock = lockOn(store, 'closed');
    const holder = heldUntilReleased();
    const holding = lock.execute(holder.hold);
    await waitUntil('the holder to hold', async () => (await store.inspect('closed')) !== undefined);
    const waiting = lock.execute(() => 'second');
    await waitUntil('the waiter to listen', async () => (await listeners()) === 1);
    await store.close();
    await waitUntil('the client to stop listening', async () => (await listeners()) === 0);
    holder.release();
    await holding;
    expect(await waiting).toBe('second');
    expect(await lock.execute(() => 'after close')).toBe('after close');
    expect(await listeners()).toBe(0);
  });
});
