/**
 * The runner owns the process, the job owns its run: real `resil run` processes on a shared Redis,
 * with jobs whose errors escape their `run` (a rejection nobody awaits, a throw in a timer, a
 * rejection after the run ended) next to a healthy every-second job. Each bad run is a recorded
 * failure with its cause, the healthy job keeps firing, and no instance exits. What cannot be
 * pinned on a job (a throw in a timer of the config file) and a job's `process.exit(0)` stop the
 * runner gracefully with exit code 1. With `isolation: 'worker'`, a job's `process.exit(0)`, its
 * memory exhaustion and its blocked event loop fail its run only.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLockStore } from '../../src/stores/redis/store.ts';
import { runCli } from '../cli/cli-support.ts';
import { ensureBuilt, fixturePreamble, type RunProcess, startRun } from '../cli/run-process.ts';
import { waitUntil } from '../support/processes.ts';
import { deleteKeys, redisUrlForTests, uniquePrefix } from '../support/redis.ts';

const redisUrl = await redisUrlForTests();

interface Fixture {
  readonly directory: string;
  readonly configPath: string;
  readonly prefix: string;
  readonly recordKey: string;
  remove(): void;
}

interface HistoryEntry {
  scheduledAt: string;
  outcome: string;
  instance: string | null;
  error: string | null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A config with the healthy job `tick` (records each run in Redis), `jobs` (source text) and `extra` top-level code. */
function writeFixture(name: string, jobs: string, extra = '', shutdownGraceMs = 3_000): Fixture {
  const prefix = uniquePrefix(name);
  const directory = mkdtempSync(join(tmpdir(), 'resil-faults-'));
  const configPath = join(directory, 'resil.config.mjs');
  const recordKey = `${prefix}records`;
  writeFileSync(
    configPath,
    `${fixturePreamble()}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
${extra}
export default defineConfig({
  store: new RedisLockStore(client, { prefix: ${JSON.stringify(prefix)}, commandTimeout: 500 }),
  instance,
  timezone: 'UTC',
  shutdownGrace: ${shutdownGraceMs},
  jobs: [
    {
      name: 'tick',
      schedule: '* * * * * *',
      lock: { ttl: 2_000 },
      run: async (ctx) => {
        const [seconds, micros] = await recorder.time();
        await recorder.rpush(${JSON.stringify(recordKey)}, JSON.stringify({ scheduledAt: ctx.scheduledAt.getTime(), instance, at: Number(seconds) * 1000 + Number(micros) / 1000 }));
      },
    },
    ${jobs}
  ],
});
`,
  );
  return {
    directory,
    configPath,
    prefix,
    recordKey,
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

describe.skipIf(!redisUrl)('contained job faults (resil run, real processes, Redis)', () => {
  let client: Redis;
  const fixtures: Fixture[] = [];
  const runs: RunProcess[] = [];

  beforeAll(() => {
    ensureBuilt();
    client = new Redis(redisUrl!);
  }, 200_000);
  afterAll(async () => {
    await Promise.all(runs.map((run) => run.process.stop()));
    for (const fixture of fixtures) {
      await deleteKeys(client, fixture.prefix);
      fixture.remove();
    }
    await client.quit();
  });

  const fixture = (...args: Parameters<typeof writeFixture>) => {
    const created = writeFixture(...args);
    fixtures.push(created);
    return created;
  };
  const start = (f: Fixture, instance: string) => {
    const run = startRun(f, { instance, redisUrl: redisUrl! });
    runs.push(run);
    return run;
  };
  const history = async (f: Fixture, job: string) => {
    const result = await runCli(['--config', f.configPath, 'jobs', 'history', job, '--json'], {
      cwd: f.directory,
      env: { FIXTURE_REDIS_URL: redisUrl!, FIXTURE_INSTANCE: 'cli' },
    });
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as HistoryEntry[];
  };

  it('2 instances: stray rejections and timer throws fail their runs with the cause, the healthy job fires every second, nobody exits', async () => {
    const f = fixture(
      'faults-stray',
      `{
      name: 'stray-rejection',
      schedule: '* * * * * *',
      run: async () => {
        void Promise.reject(new Error('nobody awaited this'));
        await sleep(300);
      },
    },
    {
      name: 'timer-throw',
      schedule: '* * * * * *',
      run: async () => {
        setTimeout(() => {
          throw new Error('thrown in a timer');
        }, 20);
        await sleep(300);
      },
    },
    {
      name: 'late-rejection',
      schedule: '* * * * * *',
      run: async () => {
        setTimeout(() => void Promise.reject(new Error('after the run')), 100);
      },
    },`,
    );
    const one = start(f, 'one');
    const two = start(f, 'two');
    await Promise.all(
      [one, two].map((run) => run.waitForLine((line) => String(line.msg).startsWith('runner started'))),
    );
    const startedAt = Date.now();
    await sleep(4_500);
    expect(one.process.hasExited(), one.process.output().slice(-2000)).toBe(false);
    expect(two.process.hasExited(), two.process.output().slice(-2000)).toBe(false);

    // The healthy job: one run per second, across the fleet, none missing between the first and the last.
    const ticks = (await client.lrange(f.recordKey, 0, -1)).map(
      (entry) => JSON.parse(entry) as { scheduledAt: number; at: number },
    );
    const instants = [...new Set(ticks.map((tick) => tick.scheduledAt))].sort((a, b) => a - b);
    expect(instants.length).toBeGreaterThanOrEqual(4);
    expect(instants.length).toBe(ticks.length); // once each
    expect(instants.at(-1)! - instants[0]!).toBe((instants.length - 1) * 1_000);
    expect(instants[0]!).toBeLessThan(startedAt + 1_500);
    for (const tick of ticks) expect(tick.at - tick.scheduledAt).toBeLessThan(500);

    const lines = [...one.lines(), ...two.lines()];
    for (const [job, cause] of [
      ['stray-rejection', "an unhandled rejection escaped the job's run: nobody awaited this"],
      ['timer-throw', "an uncaught exception escaped the job's run: thrown in a timer"],
    ] as const) {
      const failures = (await history(f, job)).filter((entry) => entry.outcome === 'failure');
      expect(failures.length, job).toBeGreaterThanOrEqual(3);
      for (const failure of failures) expect(failure.error).toBe(`StrayJobError: ${cause}`);
      expect((await history(f, job)).filter((entry) => entry.outcome === 'success')).toEqual([]);
      // One line per bad run: its failure, naming the job, the occurrence and the error.
      const failed = lines.filter((line) => line.job === job && line.outcome === 'failure');
      expect(failed.length).toBeGreaterThanOrEqual(failures.length - 2);
      expect(failed[0]).toMatchObject({
        msg: 'job failed',
        scheduledAt: expect.any(String),
        err: { type: 'StrayJobError', message: cause, code: 'STRAY_JOB_ERROR' },
      });
    }
    // After its run ended, a stray rejection cannot change the recorded success: one warn line each.
    const late = await history(f, 'late-rejection');
    expect(late.filter((entry) => entry.outcome === 'success').length).toBeGreaterThanOrEqual(3);
    expect(late.filter((entry) => entry.outcome === 'failure')).toEqual([]);
    const lateLines = lines.filter((line) => line.job === 'late-rejection' && line.origin !== undefined);
    expect(lateLines.length).toBeGreaterThanOrEqual(3);
    expect(lateLines[0]).toMatchObject({
      level: 40,
      origin: 'unhandled-rejection',
      scheduledAt: expect.any(String),
      err: { message: 'after the run' },
    });
    // No raw stack on the output: every line is a log line.
    for (const run of [one, two]) {
      const raw = run.process
        .output()
        .split('\n')
        .filter((line) => line !== '' && !line.startsWith('{'));
      expect(raw).toEqual([]);
    }

    one.process.kill('SIGTERM');
    two.process.kill('SIGTERM');
    expect(await one.process.exited).toEqual({ code: 0, signal: null });
    expect(await two.process.exited).toEqual({ code: 0, signal: null });
  }, 40_000);

  it("a job's process.exit(0) is logged with its name, fails its run and stops the runner with exit 1", async () => {
    const f = fixture(
      'faults-exit',
      `{
      name: 'quitter',
      schedule: '* * * * * *',
      run: async () => {
        await sleep(50);
        process.exit(0);
      },
    },`,
    );
    const run = start(f, 'one');
    const exit = await run.process.exited;
    expect(exit).toEqual({ code: 1, signal: null });
    const lines = run.lines();
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 50,
        job: 'quitter',
        code: 0,
        msg: 'job quitter called process.exit(0): its run fails and the runner stops (exit 1)',
      }),
    );
    expect(lines).toContainEqual(
      expect.objectContaining({
        job: 'quitter',
        outcome: 'failure',
        err: expect.objectContaining({ code: 'JOB_EXIT' }),
      }),
    );
    expect(lines.at(-1)).toMatchObject({ msg: 'exiting', code: 1 });
    const [latest] = await history(f, 'quitter');
    expect(latest).toMatchObject({ outcome: 'failure', instance: 'one' });
    expect(latest!.error).toContain('JobExitError: the job called process.exit(0)');
    const store = new RedisLockStore(client, { prefix: f.prefix });
    expect(await store.inspect('tick')).toBeUndefined();
    expect(await store.inspect('quitter')).toBeUndefined();
  }, 30_000);

  it('an uncaught exception outside any job (a timer of the config file) is logged and stops the runner gracefully, exit 1', async () => {
    const f = fixture(
      'faults-outside',
      `{
      name: 'slow',
      schedule: '* * * * * *',
      lock: { ttl: 5_000 },
      run: async () => {
        await sleep(700);
      },
    },`,
      `setTimeout(() => {
  throw new Error('outside every job');
}, 2_300);`,
    );
    const run = start(f, 'one');
    const exit = await run.process.exited;
    expect(exit).toEqual({ code: 1, signal: null });
    const lines = run.lines();
    const fatal = lines.findIndex((line) => line.level === 60);
    expect(lines[fatal]).toMatchObject({
      origin: 'uncaught-exception',
      err: { message: 'outside every job' },
      msg: 'an uncaught exception outside any job: the process state is unknown, stopping gracefully (exit 1)',
    });
    // Gracefully: the running job finished, nothing fired after, the leases are free.
    expect(lines.slice(fatal).filter((line) => line.msg === 'job started')).toEqual([]);
    expect(lines.at(-1)).toMatchObject({ msg: 'exiting', code: 1 });
    const store = new RedisLockStore(client, { prefix: f.prefix });
    expect(await store.inspect('slow')).toBeUndefined();
    expect(await store.inspect('tick')).toBeUndefined();
    expect((await history(f, 'slow')).filter((entry) => entry.outcome === 'running')).toEqual([]);
  }, 30_000);

  it('process.exit(0) from code in no job (a timer of the config file) exits 1, saying so', async () => {
    const f = fixture('faults-config-exit', '', `setTimeout(() => process.exit(0), 1_500);`);
    const run = start(f, 'one');
    expect(await run.process.exited).toEqual({ code: 1, signal: null });
    expect(run.lines().at(-1)).toMatchObject({
      level: 50,
      code: 1,
      msg: 'process.exit(0) called outside any job while jobs ran: exiting 1',
    });
  }, 30_000);

  it("isolation 'worker', 2 instances: process.exit(0), a memory limit and a blocked event loop fail their runs only; a timeout, a lost lease and shutdown terminate a blocked worker", async () => {
    const f = fixture(
      'faults-worker',
      `{
      name: 'isolated-ok',
      schedule: '* * * * * *',
      isolation: 'worker',
      run: async (ctx) => {
        ctx.logger.info({ inWorker: !(await import('node:worker_threads')).isMainThread, token: ctx.token, signalAborted: ctx.signal.aborted }, 'isolated run');
      },
    },
    {
      name: 'quitter',
      schedule: '*/2 * * * * *',
      isolation: 'worker',
      run: async () => {
        await sleep(20);
        process.exit(0);
      },
    },
    {
      name: 'hog',
      schedule: '*/2 * * * * *',
      isolation: 'worker',
      resourceLimits: { maxOldGenerationSizeMb: 16 },
      run: async (ctx) => {
        // The worker loaded the config anew: its connection is a fresh one.
        if (recorder.status !== 'ready') await new Promise((resolve) => recorder.once('ready', resolve));
        await recorder.rpush(${JSON.stringify('RECORDS')}, JSON.stringify({ job: ctx.job, scheduledAt: ctx.scheduledAt.getTime() }));
        const heap = [];
        for (;;) heap.push(new Array(100_000).fill(Math.random()));
      },
    },
    {
      name: 'blocker',
      schedule: '*/2 * * * * *',
      isolation: 'worker',
      timeout: '1s',
      run: () => {
        const until = Date.now() + 10_000;
        while (Date.now() < until);
      },
    },
    {
      name: 'cancelled',
      schedule: '*/2 * * * * *',
      isolation: 'worker',
      overlap: 'cancel-other',
      lock: { ttl: 1_500 },
      run: () => {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20_000);
      },
    },
    {
      name: 'stuck',
      schedule: '*/10 * * * * *',
      isolation: 'worker',
      lock: { ttl: 30_000 },
      run: () => {
        // Blocked without burning a core: a sleeping thread's event loop is as stuck as a busy one's.
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20_000);
      },
    },`,
      '',
      1_000,
    );
    const allocations = `${f.prefix}allocations`;
    writeFileSync(
      f.configPath,
      readFileSync(f.configPath, 'utf8').replace('"RECORDS"', JSON.stringify(allocations)),
    );
    const one = start(f, 'one');
    const two = start(f, 'two');
    await Promise.all(
      [one, two].map((run) => run.waitForLine((line) => String(line.msg).startsWith('runner started'))),
    );
    await sleep(5_500);
    expect(one.process.hasExited(), one.process.output().slice(-2000)).toBe(false);
    expect(two.process.hasExited(), two.process.output().slice(-2000)).toBe(false);

    const ticks = (await client.lrange(f.recordKey, 0, -1)).map(
      (entry) => JSON.parse(entry) as { scheduledAt: number; at: number },
    );
    const instants = [...new Set(ticks.map((tick) => tick.scheduledAt))].sort((a, b) => a - b);
    expect(instants.length).toBeGreaterThanOrEqual(5);
    expect(instants.length).toBe(ticks.length);
    expect(instants.at(-1)! - instants[0]!).toBe((instants.length - 1) * 1_000);
    for (const tick of ticks) expect(tick.at - tick.scheduledAt).toBeLessThan(500);

    const lines = [...one.lines(), ...two.lines()];
    // A job written inline in the config runs in a worker thread, its log lines on the runner's logger.
    const isolated = lines.filter((line) => line.msg === 'isolated run');
    expect(isolated.length).toBeGreaterThanOrEqual(3);
    expect(isolated[0]).toMatchObject({
      job: 'isolated-ok',
      inWorker: true,
      signalAborted: false,
      attempt: 1,
    });
    const okRuns = await history(f, 'isolated-ok');
    expect(okRuns.filter((entry) => entry.outcome === 'success').length).toBeGreaterThanOrEqual(3);
    expect(okRuns.filter((entry) => entry.outcome === 'failure')).toEqual([]);
    const first = lines.find(
      (line) => line.msg === 'isolated run' && line.scheduledAt === isolated[0]!.scheduledAt,
    );
    const succeeded = lines.find(
      (line) =>
        line.job === 'isolated-ok' && line.outcome === 'success' && line.scheduledAt === first!.scheduledAt,
    );
    expect(first!.token).toBe(succeeded!.token);

    const failuresOf = async (job: string, count: number, error: RegExp) => {
      const entries = await history(f, job);
      expect(
        entries.filter((entry) => entry.outcome === 'success'),
        job,
      ).toEqual([]);
      const failures = entries.filter((entry) => entry.outcome === 'failure');
      expect(failures.length, job).toBeGreaterThanOrEqual(count);
      for (const failure of failures) expect(failure.error, job).toMatch(error);
    };
    await failuresOf(
      'quitter',
      2,
      /^JobWorkerError: the job's worker exited with code 0 before its run settled/,
    );
    await failuresOf('hog', 2, /^JobWorkerError: the job's worker crashed: .*memory limit/);
    // The hog got as far as allocating: the limit stopped the job, not the loading of the config.
    expect(await client.llen(allocations)).toBeGreaterThanOrEqual(2);
    // Busy for 10 s with a 1 s timeout: terminated a second after its signal aborted.
    await failuresOf('blocker', 1, /^TimeoutRejectedError/);
    const blocked = lines.filter((line) => line.job === 'blocker' && line.outcome === 'failure');
    expect(blocked.length).toBeGreaterThanOrEqual(1);
    for (const line of blocked) expect(line.durationMs as number).toBeLessThan(3_000);

    // Blocked for 20 s, each run is cancelled by the next occurrence (cancel-other): its lease is
    // lost at the next renewal, its signal aborts, its worker is terminated a second later.
    const cancelled = lines.filter((line) => line.job === 'cancelled' && line.outcome === 'failure');
    expect(cancelled.length).toBeGreaterThanOrEqual(1);
    for (const line of cancelled) {
      expect(line.err).toMatchObject({ type: 'LockLostError' });
      expect(line.durationMs as number).toBeLessThan(5_000);
    }

    // Shutdown while `stuck` blocks its worker for 20 s: after the 1 s grace its signal aborts, its
    // worker is terminated a second later, the run is a failure and its lease is free.
    // It fires every 10 s: wait for a run of it to be going on.
    const stuckHolder = await waitUntil(
      'a running occurrence of stuck',
      async () => (await history(f, 'stuck')).find((entry) => entry.outcome === 'running'),
      { timeoutMs: 12_000, intervalMs: 200 },
    );
    const stoppedAt = performance.now();
    one.process.kill('SIGTERM');
    two.process.kill('SIGTERM');
    expect(await one.process.exited).toEqual({ code: 0, signal: null });
    expect(await two.process.exited).toEqual({ code: 0, signal: null });
    expect(performance.now() - stoppedAt).toBeLessThan(5_000);
    const stuck = (await history(f, 'stuck')).find((entry) => entry.scheduledAt === stuckHolder!.scheduledAt);
    expect(stuck).toMatchObject({ outcome: 'failure', error: expect.stringMatching(/^ShutdownError/) });
    expect(await new RedisLockStore(client, { prefix: f.prefix }).inspect('stuck')).toBeUndefined();
  }, 60_000);

  it('resil jobs run: a stray rejection fails the run (exit 1), a process.exit(0) fails it and names the job (exit 1)', async () => {
    const f = fixture(
      'faults-jobs-run',
      `{
      name: 'stray',
      schedule: '0 0 1 1 *',
      run: async () => {
        void Promise.reject(new Error('nobody awaited this'));
        await sleep(2_000);
      },
    },
    {
      name: 'quitter',
      schedule: '0 0 1 1 *',
      run: () => process.exit(0),
    },`,
    );
    const options = { cwd: f.directory, env: { FIXTURE_REDIS_URL: redisUrl!, FIXTURE_INSTANCE: 'cli' } };
    const stray = await runCli(['--config', f.configPath, 'jobs', 'run', 'stray'], options);
    expect(stray.code, stray.stderr).toBe(1);
    expect(stray.stderr).toMatch(
      /^stray: failed, token \d+, 1 attempt: StrayJobError: an unhandled rejection escaped the job's run: nobody awaited this\n$/,
    );
    // At once, not after the job's 2 s.
    expect(stray.durationMs).toBeLessThan(1_800 + 1_000);
    const quitter = await runCli(['--config', f.configPath, 'jobs', 'run', 'quitter'], options);
    expect(quitter.code, quitter.stderr).toBe(1);
    expect(quitter.stdout).toContain(
      '"msg":"job quitter called process.exit(0): its run fails and the runner stops (exit 1)"',
    );
    expect(quitter.stderr).toMatch(
      /^quitter: failed, token \d+, 1 attempt: JobExitError: the job called process\.exit\(0\)/,
    );
  }, 30_000);
});
