/**
 * RedisLockStore under faults, with real processes: a private redis-server that is stopped,
 * paused and restarted empty, and holder processes (fixtures/holder.ts, running the lock strategy)
 * that are killed or frozen while they hold a lease.
 */
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { Redis } from 'ioredis';
import {
  getLockToken,
  isStoreUnavailableError,
  type ResiliencePipeline,
  ResiliencePipelineBuilder,
  StoreUnavailableError,
} from 'resil';
import { RedisLockStore } from 'resil/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type SpawnedProcess, spawnProcess, waitUntil } from '../../support/processes.ts';
import { privateRedisUnavailableReason, type RedisServer, startRedisServer } from '../../support/redis.ts';
import { heldUntilReleased, lockOn } from '../../support/release-wake-ups.ts';

const commandTimeout = 300;
/** Slack on top of a bound, for a loaded CI machine. */
const slack = 400;

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

function spawnFixture(name: string, env: Record<string, string>): SpawnedProcess {
  return spawnProcess(process.execPath, ['--import', 'tsx', fixture(name)], {
    env: { ...process.env, ...env },
    name,
  });
}

interface HolderEvent {
  event: string;
  pid: number;
  token?: number;
  code?: string;
  ok?: boolean;
}

async function nextEvent(holder: SpawnedProcess, event: string, timeoutMs = 10_000): Promise<HolderEvent> {
  const line = await holder.waitForOutput(new RegExp(`^\\{"event":"${event}"`), timeoutMs);
  return JSON.parse(line) as HolderEvent;
}

async function settleTimed<T>(pipeline: ResiliencePipeline<unknown>, callback: () => T) {
  const startedAt = performance.now();
  const outcome = await pipeline.settle(callback);
  return { outcome, elapsed: performance.now() - startedAt };
}

describe.skipIf(privateRedisUnavailableReason())('RedisLockStore under faults', () => {
  let server: RedisServer;
  let client: Redis;
  let admin: Redis;
  let store: RedisLockStore;

  beforeAll(async () => {
    server = await startRedisServer();
    // Reconnect quickly so the "Redis is back" tests do not wait on ioredis' default backoff (up to 2 s).
    client = new Redis(server.url, { retryStrategy: () => 50 });
    admin = new Redis(server.url, { retryStrategy: () => 50 });
    store = new RedisLockStore(client, { prefix: 'faults:', commandTimeout });
  });
  afterAll(async () => {
    client?.disconnect();
    admin?.disconnect();
    await server?.stop();
  });

  it('Redis stopped: the lock fails within commandTimeout with StoreUnavailableError and the callback does not run; Redis restarted empty: locking resumes in the same process with higher tokens', async () => {
    let calls = 0;
    const pipeline = new ResiliencePipelineBuilder().addLock({ key: () => 'job', ttl: 5_000, store }).build();
    const tokens: number[] = [];
    const callback = () => {
      calls++;
      tokens.push(getLockToken()!);
    };
    expect((await pipeline.settle(callback)).ok).toBe(true);

    await server.stop();
    try {
      const down = await settleTimed(pipeline, callback);
      expect(down.outcome.ok).toBe(false);
      expect(isStoreUnavailableError(down.outcome.error)).toBe(true);
      expect(down.elapsed).toBeLessThan(commandTimeout + slack);
      expect(calls).toBe(1);
    } finally {
      // Same port, no persistence: every lease and token counter is gone.
      server = await startRedisServer({ port: server.port });
    }
    await waitUntil('locking to resume', async () => (await pipeline.settle(callback)).ok, {
      timeoutMs: 5_000,
      intervalMs: 50,
    });
    expect(calls).toBe(2);
    expect(tokens[1]).toBeGreaterThan(tokens[0]!);
  });

  it('Redis down: commands wait for the connection within the bound and are dropped, not queued to run later', async () => {
    await server.stop();
    try {
      // Until ioredis sees the socket close it still says 'ready' (a command then times out instead).
      await waitUntil('the client to notice', () => client.status !== 'ready', { timeoutMs: 5_000 });
      await expect(store.acquire('queued', 'late-owner', 60_000)).rejects.toThrow(/not ready.*was not sent/);
    } finally {
      server = await startRedisServer({ port: server.port });
    }
    await waitUntil('the client to reconnect', () => client.status === 'ready', { timeoutMs: 5_000 });
    await waitUntil('the admin client to reconnect', () => admin.status === 'ready', { timeoutMs: 5_000 });
    // Had the acquire sat in ioredis' offline queue, it would have run on reconnect.
    expect(await admin.exists('faults:{queued}:lease', 'faults:{queued}:token')).toBe(0);
    expect(await store.acquire('queued', 'owner', 1_000)).toBeGreaterThan(0);
  });

  it('Redis frozen (SIGSTOP): a command fails within the bound; an acquire Redis runs after waking is given back', async () => {
    await waitUntil('the client to be ready', () => client.status === 'ready', { timeoutMs: 5_000 });
    expect(await store.acquire('warm', 'owner', 1_000)).toBeGreaterThan(0); // scripts loaded
    server.kill('SIGSTOP');
    try {
      const startedAt = performance.now();
      const error = await store.acquire('frozen', 'late-owner', 60_000).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toBe(
        `Redis did not answer acquire for "frozen" within ${commandTimeout} ms.`,
      );
      expect(performance.now() - startedAt).toBeLessThan(commandTimeout + slack);
    } finally {
      server.kill('SIGCONT');
    }
    // The acquire did run once Redis woke (its token counter exists), and the release sent after
    // the timeout ran behind it: the key is free, not held for 60 s by an owner who gave up.
    await waitUntil(
      'the late acquire to run',
      async () => (await admin.exists('faults:{frozen}:token')) === 1,
      {
        timeoutMs: 5_000,
      },
    );
    expect(await store.inspect('frozen')).toBeUndefined();
    expect(await store.acquire('frozen', 'next-owner', 1_000)).toBeGreaterThan(0);
  });

  it('Redis frozen (SIGSTOP) under a batch of 16 acquires: each fails within the bound naming the batch, and every late acquire is given back', async () => {
    await waitUntil('the client to be ready', () => client.status === 'ready', { timeoutMs: 5_000 });
    const keys = Array.from({ length: 16 }, (_, index) => `frozen-batch-${index}`);
    // Scripts loaded, single and batched.
    await Promise.all(keys.map((key) => store.acquire(key, 'warm', 1_000)));
    await Promise.all(keys.map((key) => store.release(key, 'warm')));
    const counters = () =>
      Promise.all(keys.map(async (key) => Number(await admin.get(`faults:{${key}}:token`))));
    const before = await counters();
    server.kill('SIGSTOP');
    let errors: unknown[];
    try {
      const startedAt = performance.now();
      errors = await Promise.all(
        keys.map((key) => store.acquire(key, 'late-owner', 60_000).catch((caught: unknown) => caught)),
      );
      expect(performance.now() - startedAt).toBeLessThan(commandTimeout + slack);
    } finally {
      server.kill('SIGCONT');
    }
    for (const error of errors) {
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toBe(
        `Redis did not answer acquire for "frozen-batch-0", "frozen-batch-1", "frozen-batch-2" and 13 more within ${commandTimeout} ms.`,
      );
    }
    // The batch ran once Redis woke, and the releases sent after the timeout ran behind it.
    await waitUntil(
      'every late lease to be given back',
      async () =>
        (await Promise.all(keys.map((key) => store.inspect(key)))).every((lease) => lease === undefined),
      { timeoutMs: 5_000 },
    );
    // They did run: each key issued one more token.
    expect(await counters()).toEqual(before.map((token) => token + 1));
    expect(await store.acquire(keys[0]!, 'next-owner', 1_000)).toBeGreaterThan(0);
  });

  it('a closed client fails at once, a lazyConnect client connects on first use', async () => {
    const closed = new Redis(server.url);
    await closed.quit();
    const startedAt = performance.now();
    await expect(new RedisLockStore(closed).acquire('k', 'o', 1_000)).rejects.toThrow(/connection is closed/);
    expect(performance.now() - startedAt).toBeLessThan(50);

    const lazy = new Redis(server.url, { lazyConnect: true });
    try {
      expect(await new RedisLockStore(lazy, { prefix: 'lazy:' }).acquire('k', 'o', 1_000)).toBeGreaterThan(0);
    } finally {
      lazy.disconnect();
    }
  });

  describe('credentials', () => {
    const password = 'S3cret-Passw0rd';

    function expectNoPassword(error: unknown) {
      expect(isStoreUnavailableError(error)).toBe(true);
      const rendered = [
        String(error),
        (error as Error).stack ?? '',
        inspect(error, { depth: Number.POSITIVE_INFINITY }),
        JSON.stringify(error),
      ].join('\n');
      expect(rendered).not.toContain(password);
    }

    it('never appear in errors: unreachable server with a password in the URL', async () => {
      const port = await freePort();
      const unreachable = new Redis(`redis://app:${password}@127.0.0.1:${port}`, { retryStrategy: () => 50 });
      unreachable.on('error', () => {});
      try {
        const error = await new RedisLockStore(unreachable, { commandTimeout: 200 })
          .acquire('k', 'o', 1_000)
          .catch((caught: unknown) => caught);
        expectNoPassword(error);
      } finally {
        unreachable.disconnect();
      }
    });

    it('never appear in errors: a server that refuses the password', async () => {
      const guarded = await startRedisServer({ args: ['--requirepass', 'the-right-one'] });
      const refused = new Redis(`redis://:${password}@127.0.0.1:${guarded.port}`, {
        retryStrategy: () => 50,
      });
      const events: string[] = [];
      refused.on('error', (error) => events.push(inspect(error)));
      try {
        const error = await new RedisLockStore(refused, { commandTimeout: 200 })
          .acquire('k', 'o', 1_000)
          .catch((caught: unknown) => caught);
        expectNoPassword(error);
        expect(events.join('\n')).toMatch(/WRONGPASS/);
        expect(events.join('\n')).not.toContain(password);
      } finally {
        refused.disconnect();
        await guarded.stop();
      }
    });
  });
});

describe
  .skipIf(privateRedisUnavailableReason())
  .concurrent('RedisLockStore with processes that crash or freeze', () => {
    let server: RedisServer;
    let admin: Redis;
    beforeAll(async () => {
      server = await startRedisServer();
      admin = new Redis(server.url);
    });
    afterAll(async () => {
      admin?.disconnect();
      await server?.stop();
    });

    // Long enough that a holder starved by a loaded machine still renews in time.
    const ttl = 3_000;
    const holderEnv = (key: string, extra: Record<string, string> = {}) => ({
      REDIS_URL: server.url,
      PREFIX: 'holders:',
      LOCK_KEY: key,
      TTL_MS: String(ttl),
      ...extra,
    });

    it('kill -9 of the holder: a waiting process acquires within ttl (+ one poll) with a higher token', async () => {
      const first = spawnFixture('holder.ts', holderEnv('crash', { MODE: 'hold' }));
      const second = spawnFixture(
        'holder.ts',
        holderEnv('crash', { MODE: 'write', WAIT_MS: '10000', START_WHEN_HELD: '1' }),
      );
      try {
        const held = await nextEvent(first, 'acquired');
        await nextEvent(second, 'started');
        // The second one polls while the first holds and renews.
        await new Promise((resolve) => setTimeout(resolve, ttl));
        expect(second.output()).not.toContain('"acquired"');

        const killedAt = performance.now();
        first.kill('SIGKILL');
        const taken = await nextEvent(second, 'acquired', ttl + 5_000);
        const waited = performance.now() - killedAt;
        // The lease runs out within ttl of the last renewal; the waiter polls at most every 1 s.
        expect(waited).toBeLessThan(ttl + 1_000 + slack);
        expect(taken.token).toBeGreaterThan(held.token!);
        expect(await nextEvent(second, 'fenced')).toMatchObject({ ok: true });
        expect(await nextEvent(second, 'done')).toMatchObject({ ok: true });
        expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
      } finally {
        await Promise.all([first.stop(), second.stop()]);
      }
    });

    it('SIGSTOP of the holder past ttl: another process acquires, the woken holder is aborted with LOCK_LOST and its fenced write is refused', async () => {
      const paused = spawnFixture('holder.ts', holderEnv('pause', { MODE: 'hold' }));
      try {
        const held = await nextEvent(paused, 'acquired');
        paused.kill('SIGSTOP');
        const pausedAt = performance.now();

        const successor = new RedisLockStore(admin, { prefix: 'holders:' });
        const token = await waitUntil(
          'the paused lease to expire',
          () => successor.acquire('pause', 'successor', 10_000),
          {
            timeoutMs: ttl + 3_000,
            intervalMs: 20,
          },
        );
        expect(performance.now() - pausedAt).toBeLessThan(ttl + slack);
        expect(token).toBeGreaterThan(held.token!);
        await successor.fencedSet('pause', token!, 'value', 'written by the successor');

        paused.kill('SIGCONT');
        expect(await nextEvent(paused, 'aborted')).toMatchObject({ code: 'LOCK_LOST' });
        expect(await nextEvent(paused, 'fenced')).toMatchObject({ ok: false, code: 'STALE_TOKEN' });
        expect(await successor.fencedGet('pause', 'value')).toBe('written by the successor');
        expect(await successor.inspect('pause')).toMatchObject({ owner: 'successor', token });
        await nextEvent(paused, 'done');
      } finally {
        paused.kill('SIGCONT');
        await paused.stop();
      }
    });

    it("a client without an 'error' listener neither crashes the process nor prints its password", async () => {
      const port = await freePort();
      const password = 'S3cret-Passw0rd';
      const child = spawnFixture('unreachable-client.ts', {
        REDIS_URL: `redis://app:${password}@127.0.0.1:${port}`,
      });
      const exit = await child.exited;
      const output = child.output();
      expect(exit).toEqual({ code: 0, signal: null });
      expect(output.match(/"code":"STORE_UNAVAILABLE"/g)).toHaveLength(3);
      expect(output).toContain('{"done":true}');
      expect(output).toContain('[ioredis] Unhandled error event'); // ioredis reports it, does not throw
      expect(output).not.toContain(password);
    });
  });

describe.skipIf(privateRedisUnavailableReason())(
  'RedisLockStore wake-ups when the subscriber connection dies',
  () => {
    let server: RedisServer;
    let admin: Redis;
    beforeAll(async () => {
      server = await startRedisServer();
      admin = new Redis(server.url);
    });
    afterAll(async () => {
      admin?.disconnect();
      await server?.stop();
    });

    const subscribers = async () =>
      ((await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string).split('\n').filter(Boolean).length;

    /** A holder on `key` until the returned `release()`, and a waiter behind it that records when it ran. */
    async function holderAndWaiter(store: RedisLockStore, key: string) {
      const lock = lockOn(store, key, '20s');
      const holder = heldUntilReleased();
      const holding = lock.execute(holder.hold);
      await waitUntil('the holder to hold', async () => (await store.inspect(key)) !== undefined);
      let ranAt = 0;
      const waiting = lock.execute(() => {
        ranAt = performance.now();
      });
      await waitUntil('the waiter to subscribe', async () => (await subscribers()) === 1);
      return {
        async releaseAndAwaitWaiter(): Promise<number> {
          const releasedAt = performance.now();
          holder.release();
          await holding;
          await waiting;
          return ranAt - releasedAt;
        },
      };
    }

    it('killed (CLIENT KILL TYPE pubsub) and never back: the release notification is lost, and the waiter still acquires by polling', async () => {
      // A client that never reconnects; the store's own connection is its duplicate, so neither does that one.
      const client = new Redis(server.url, { retryStrategy: () => null });
      try {
        const store = new RedisLockStore(client, { prefix: 'lost-wake:' });
        const scene = await holderAndWaiter(store, 'job');
        expect(await admin.client('KILL', 'TYPE', 'pubsub')).toBe(1);
        await waitUntil('the subscriber to be gone', async () => (await subscribers()) === 0);
        const waited = await scene.releaseAndAwaitWaiter();
        // Nobody was subscribed when the release published: only a poll (at most 1 s apart) found the key free.
        expect(await subscribers()).toBe(0);
        expect(waited).toBeLessThan(1_000 + slack);
        // A later wait opens a connection of its own again, and is woken by it.
        const again = await holderAndWaiter(store, 'job-2');
        expect(await again.releaseAndAwaitWaiter()).toBeLessThan(1_000 + slack);
        await store.close();
      } finally {
        client.disconnect();
      }
    });

    it('killed and reconnected by ioredis: the waiter is subscribed again and still acquires', async () => {
      const client = new Redis(server.url, { retryStrategy: () => 50 });
      try {
        const store = new RedisLockStore(client, { prefix: 'reconnect-wake:' });
        const scene = await holderAndWaiter(store, 'job');
        expect(await admin.client('KILL', 'TYPE', 'pubsub')).toBe(1);
        await waitUntil('the subscriber to come back', async () => (await subscribers()) === 1, {
          timeoutMs: 5_000,
        });
        expect(await scene.releaseAndAwaitWaiter()).toBeLessThan(1_000 + slack);
        await store.close();
        await waitUntil('the connection to close', async () => (await subscribers()) === 0);
      } finally {
        client.disconnect();
      }
    });
  },
);
