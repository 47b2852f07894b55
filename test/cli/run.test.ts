/**
 * `resil run` as users run it: the built binary, a config on disk, Redis as the store, signals
 * sent to the process. Jobs write their own records to Redis; the runner's logs are JSON lines.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLockStore } from '../../src/stores/redis/store.ts';
import { deleteKeys, redisUrlForTests, startRedisServer, uniquePrefix } from '../support/redis.ts';
import { ensureBuilt, type JobRecord, type RunFixture, startRun, writeRunFixture } from './run-process.ts';

const redisUrl = await redisUrlForTests();

describe.skipIf(!redisUrl)('resil run (real process)', () => {
  let client: Redis;
  const fixtures: RunFixture[] = [];

  beforeAll(() => {
    ensureBuilt();
    client = new Redis(redisUrl!);
  }, 200_000);
  afterAll(async () => {
    for (const fixture of fixtures) {
      await deleteKeys(client, fixture.prefix);
      fixture.remove();
    }
    await client.quit();
  });

  const fixture = (...args: Parameters<typeof writeRunFixture>) => {
    const created = writeRunFixture(...args);
    fixtures.push(created);
    return created;
  };
  const records = async (key: string) =>
    (await client.lrange(key, 0, -1)).map((entry) => JSON.parse(entry) as JobRecord);

  it('SIGTERM mid-run: the running job finishes, the lease is released, exit 0', async () => {
    const f = fixture({
      prefix: uniquePrefix('run-sigterm'),
      jobs: [{ name: 'slow', schedule: '*/2 * * * * *', workMs: 1_200 }],
    });
    const run = startRun(f, { instance: 'one', redisUrl: redisUrl! });
    await run.waitForLine((line) => line.msg === 'job body started', 10_000, 'a job start');
    run.process.kill('SIGTERM');
    const exit = await run.process.exited;

    expect(exit).toEqual({ code: 0, signal: null });
    const lines = run.lines();
    const signalAt = lines.findIndex((line) => line.msg?.toString().startsWith('signal received'));
    const finished = lines.findIndex((line) => line.outcome === 'success');
    expect(signalAt).toBeGreaterThanOrEqual(0);
    expect(finished).toBeGreaterThan(signalAt);
    expect(lines[signalAt]).toMatchObject({ instance: 'one', signal: 'SIGTERM' });
    expect(lines.at(-1)).toMatchObject({ msg: 'exiting', instance: 'one' });
    // Nothing fired after the signal.
    expect(lines.slice(signalAt).filter((line) => line.msg === 'job body started')).toHaveLength(0);
    const [start, end] = await records(f.recordKey);
    expect(start).toMatchObject({ phase: 'start', instance: 'one' });
    expect(end).toMatchObject({ phase: 'end', scheduledAt: start!.scheduledAt });
    const store = new RedisLockStore(client, { prefix: f.prefix });
    expect(await store.inspect('slow')).toBeUndefined();
    expect(await store.lastCompleted('slow')).toBe(start!.scheduledAt);
  });

  it('SIGTERM past the grace period: the job signal aborts, the lease is released, exit 0', async () => {
    const f = fixture({
      prefix: uniquePrefix('run-grace'),
      shutdownGraceMs: 300,
      jobs: [{ name: 'long', schedule: '*/2 * * * * *', workMs: 20_000, lock: { ttl: 30_000, wait: 0 } }],
    });
    const run = startRun(f, { instance: 'one', redisUrl: redisUrl! });
    await run.waitForLine((line) => line.msg === 'job body started', 10_000, 'a job start');
    const store = new RedisLockStore(client, { prefix: f.prefix });
    expect(await store.inspect('long')).toBeDefined();
    const signalledAt = performance.now();
    run.process.kill('SIGTERM');
    const exit = await run.process.exited;

    expect(exit).toEqual({ code: 0, signal: null });
    expect(performance.now() - signalledAt).toBeLessThan(5_000);
    const lines = run.lines();
    expect(lines.some((line) => line.msg === 'grace period over: aborting the signals of running jobs')).toBe(
      true,
    );
    // An abort on purpose: its reason, not a stack from inside resil.
    const failure = lines.find((line) => line.outcome === 'failure');
    expect(failure).toMatchObject({
      job: 'long',
      msg: 'job aborted',
      error: 'The job runner is stopping: the grace period ran out.',
    });
    expect(failure).not.toHaveProperty('err');
    // Released at once, not left to expire after its 30 s ttl.
    expect(await store.inspect('long')).toBeUndefined();
  });

  it('a second signal exits at once', async () => {
    const f = fixture({
      prefix: uniquePrefix('run-twice'),
      shutdownGraceMs: 30_000,
      jobs: [{ name: 'stubborn', schedule: '*/2 * * * * *', workMs: 20_000, ignoreSignal: true }],
    });
    const run = startRun(f, { instance: 'one', redisUrl: redisUrl! });
    await run.waitForLine((line) => line.msg === 'job body started', 10_000, 'a job start');
    run.process.kill('SIGTERM');
    await run.waitForLine((line) => line.msg === 'stopping: no new fires, waiting for running jobs');
    const signalledAt = performance.now();
    run.process.kill('SIGINT');
    const exit = await run.process.exited;
    expect(exit.code).toBe(130);
    expect(performance.now() - signalledAt).toBeLessThan(2_000);
    expect(run.lines().some((line) => line.msg === 'second signal: exiting at once')).toBe(true);
  });

  it('exits 2 for an unknown --job, naming the jobs the config has', async () => {
    const f = fixture({
      prefix: uniquePrefix('run-unknown'),
      jobs: [{ name: 'tick', schedule: '* * * * * *', workMs: 1 }],
    });
    const run = startRun(f, { instance: 'one', redisUrl: redisUrl!, args: ['--job', 'tock'] });
    const exit = await run.process.exited;
    expect(exit.code).toBe(2);
    expect(run.process.output()).toContain(
      'error: unknown job "tock"; jobs in this config: tick (did you mean "tick"?)',
    );
  });

  it('says a refused password once, plainly (WRONGPASS), not per fire, and never prints the password', async () => {
    const server = await startRedisServer({ args: ['--requirepass', 'right-secret'] });
    const url = new URL(server.url);
    url.password = 'wrong-secret';
    const f = fixture({
      prefix: uniquePrefix('run-wrongpass'),
      // A fire asks the store again until its starting deadline: 1 s lets each give up quickly.
      jobs: [{ name: 'tick', schedule: '* * * * * *', workMs: 20, startingDeadline: 1_000 }],
    });
    const run = startRun(f, { instance: 'one', redisUrl: url.href });
    try {
      const first = run.lines().length;
      await run.waitForLine((line) => line.reason === 'store-unavailable', 10_000, 'a skipped fire', first);
      // A few more fires, all failing for the same reason.
      await run.waitForLine(
        () => run.lines().filter((line) => line.reason === 'store-unavailable').length >= 3,
        10_000,
        'three skipped fires',
      );
      run.process.kill('SIGTERM');
      expect((await run.process.exited).code).toBe(0);
      const told = run.lines().filter((line) => String(line.msg).startsWith('the store fails:'));
      expect(told).toHaveLength(1);
      expect(told[0]).toMatchObject({ level: 50 });
      expect(String(told[0]!.msg)).toContain('WRONGPASS');
      expect(run.process.output()).not.toContain('wrong-secret');
    } finally {
      await run.process.stop();
      await server.stop();
    }
  }, 30_000);

  it('stays up through a Redis outage: fires log store-unavailable, then resume after the restart', async () => {
    const server = await startRedisServer();
    const f = fixture({
      prefix: uniquePrefix('run-outage'),
      // A fire asks the store again until its starting deadline: past 1 s of outage, it gives up.
      jobs: [{ name: 'tick', schedule: '* * * * * *', workMs: 20, startingDeadline: 1_000 }],
    });
    const run = startRun(f, { instance: 'one', redisUrl: server.url });
    try {
      await run.waitForLine((line) => line.outcome === 'success', 10_000, 'a first success');
      await server.stop();
      const downAt = run.lines().length;
      await run.waitForLine(
        (line) => line.reason === 'store-unavailable',
        10_000,
        'a store-unavailable fire',
        downAt,
      );
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(run.process.hasExited()).toBe(false);
      const restarted = await startRedisServer({ port: server.port });
      try {
        const upAt = run.lines().length;
        await run.waitForLine(
          (line) => line.outcome === 'success',
          15_000,
          'a success after the restart',
          upAt,
        );
        run.process.kill('SIGTERM');
        expect((await run.process.exited).code).toBe(0);
        const fires = run.lines().filter((line) => typeof line.outcome === 'string');
        const unavailable = fires.filter((line) => line.reason === 'store-unavailable');
        expect(unavailable.length).toBeGreaterThanOrEqual(2);
        // Every fire during the outage was logged, with the job and its occurrence, and no credentials.
        for (const line of unavailable)
          expect(line).toMatchObject({ job: 'tick', outcome: 'skipped', scheduledAt: expect.any(String) });
        // Tokens keep increasing across a restart that lost every key (seeded from the server clock).
        const tokens = fires.filter((line) => line.outcome === 'success').map((line) => line.token as number);
        expect(tokens.at(-1)).toBeGreaterThan(tokens[0]!);
      } finally {
        await restarted.stop();
      }
    } finally {
      await run.process.stop();
      await server.stop();
    }
  }, 45_000);
});
