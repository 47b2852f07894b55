/**
 * `resil jobs pause` and `resil jobs resume` as users run them: the built binary against real
 * Redis, seen by `jobs list`, `jobs run` and two running `resil run` instances.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLockStore } from '../../src/stores/redis/store.ts';
import { freePort } from '../support/processes.ts';
import { deleteKeys, redisUrlForTests, uniquePrefix } from '../support/redis.ts';
import { createProject, ensureCliBuilt, runCli, tsConfig } from './cli-support.ts';
import { ensureBuilt, type JobRecord, type RunFixture, startRun, writeRunFixture } from './run-process.ts';

const redisUrl = await redisUrlForTests();

beforeAll(() => {
  ensureCliBuilt();
  ensureBuilt();
}, 200_000);

describe('--help', () => {
  it('jobs pause, jobs resume and jobs run --help have their options, exit codes and examples', async () => {
    const pause = await runCli(['jobs', 'pause', '--help']);
    expect(pause.code).toBe(0);
    for (const text of [
      '<name>',
      '--reason <text>',
      'Exit codes: 0 paused; 1',
      '2 bad config, unknown job or bad --reason',
    ])
      expect(pause.stdout).toContain(text);
    expect(pause.stdout).toContain('$ resil jobs pause nightly-report --reason');
    const resume = await runCli(['jobs', 'resume', '--help']);
    expect(resume.code).toBe(0);
    for (const text of ['<name>', 'Exit codes: 0 resumed', '$ resil jobs resume nightly-report'])
      expect(resume.stdout).toContain(text);
    const run = await runCli(['jobs', 'run', '--help']);
    expect(run.stdout).toContain('--force');
    expect(run.stdout).toContain('or it is paused (without --force)');
    const jobs = await runCli(['jobs', '--help']);
    expect(jobs.stdout).toMatch(/pause \[options\] <name>/);
    expect(jobs.stdout).toMatch(/resume <name>/);
  });

  it('on the in-memory default store: exit 1, saying a shared store is needed; unknown job or bad --reason exit 2', async () => {
    const project = createProject({
      'resil.config.ts': tsConfig(`[{ name: 'report', schedule: '0 2 * * *', run: async () => {} }]`),
    });
    try {
      for (const command of ['pause', 'resume']) {
        const result = await runCli(['jobs', command, 'report'], { cwd: project.directory });
        expect(result.code, result.stderr).toBe(1);
        expect(result.stdout).toBe('');
        expect(result.stderr).toBe(
          `error: resil jobs ${command} needs a shared store that every resil run reads, RedisLockStore, PostgresLockStore or MysqlLockStore: the config's store is the in-memory MemoryLockStore, which holds this process's runs only\n`,
        );
        const unknown = await runCli(['jobs', command, 'reprot'], { cwd: project.directory });
        expect(unknown.code).toBe(2);
        expect(unknown.stderr).toContain('unknown job "reprot"');
        expect(unknown.stderr).toContain('(did you mean "report"?)');
      }
      // A reason is some text of at most 500 characters, as for jobs run.
      for (const reason of ['  ', 'x'.repeat(501)]) {
        const bad = await runCli(['jobs', 'pause', 'report', '--reason', reason], { cwd: project.directory });
        expect(bad.code).toBe(2);
        expect(bad.stderr).toContain('Expected some text of at most 500 characters.');
      }
    } finally {
      project.remove();
    }
  });
});

describe.skipIf(!redisUrl)('with a Redis store', () => {
  let client: Redis;
  const fixtures: RunFixture[] = [];

  beforeAll(() => {
    client = new Redis(redisUrl!);
  });
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
  /** `resil --config <fixture> ...args` as instance `ops-1`. */
  const cli = (f: RunFixture, args: string[], url = redisUrl!) =>
    runCli(['--config', f.configPath, ...args], {
      cwd: f.directory,
      env: { FIXTURE_REDIS_URL: url, FIXTURE_INSTANCE: 'ops-1', NO_COLOR: '1' },
      timeoutMs: 20_000,
    });
  const records = async (key: string) =>
    (await client.lrange(key, 0, -1)).map((entry) => JSON.parse(entry) as JobRecord);

  it('pause and resume: stored with who, when and why; jobs list shows it; jobs run exits 3 unless --force', async () => {
    const f = fixture({
      prefix: uniquePrefix('jobs-pause'),
      jobs: [
        { name: 'report', schedule: '0 2 1 1 *', workMs: 10 },
        { name: 'other', schedule: '0 3 1 1 *', workMs: 10 },
      ],
    });
    const store = new RedisLockStore(client, { prefix: f.prefix });

    const paused = await cli(f, ['jobs', 'pause', 'report', '--reason', 'database migration']);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toMatch(
      /^paused report by ops-1 at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(.+\), reason: database migration\n/,
    );
    expect(paused.stdout).toContain('until: resil jobs resume report\n');
    const pause = await store.pauseOf('report', { key: 'report' });
    expect(pause).toMatchObject({ by: 'ops-1', reason: 'database migration' });
    expect(Math.abs(pause!.pausedAt - Date.now())).toBeLessThan(5_000);
    expect(await store.pauseOf('other', { key: 'other' })).toBeUndefined();

    const list = await cli(f, ['jobs', 'list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    const entries = JSON.parse(list.stdout) as Array<{ name: string; paused: boolean; pause: unknown }>;
    expect(entries.map(({ name, paused: isPaused }) => [name, isPaused])).toEqual([
      ['report', true],
      ['other', false],
    ]);
    expect(entries[0]!.pause).toEqual({
      by: 'ops-1',
      pausedAt: new Date(pause!.pausedAt).toISOString(),
      reason: 'database migration',
    });
    expect(entries[1]!.pause).toBeNull();
    const table = await cli(f, ['jobs', 'list']);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/LAST RUN\s+PAUSED$/);
    expect(table.stdout).toMatch(/\nreport .* paused by ops-1\n/);
    expect(table.stdout).toMatch(/\nother .* no\n/);

    const refused = await cli(f, ['jobs', 'run', 'report']);
    expect(refused.code, refused.stderr).toBe(3);
    expect(refused.stderr).toMatch(
      /report: skipped: paused by ops-1 at .+, reason: database migration; resume it with resil jobs resume report, or run it anyway with --force\n$/,
    );
    expect(await records(f.recordKey)).toEqual([]);
    const forced = await cli(f, ['jobs', 'run', 'report', '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stderr).toMatch(/report: success, token \d+/);
    expect((await records(f.recordKey)).map((entry) => entry.phase)).toEqual(['start', 'end']);

    const resumed = await cli(f, ['jobs', 'resume', 'report']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/^resumed report \(paused by ops-1 at .+, reason: database migration\)\n/);
    expect(await store.pauseOf('report', { key: 'report' })).toBeUndefined();
    const again = await cli(f, ['jobs', 'resume', 'report']);
    expect(again).toMatchObject({ code: 0, stdout: 'report was not paused: nothing to resume\n' });
    expect(JSON.parse((await cli(f, ['jobs', 'list', '--json'])).stdout)[0].paused).toBe(false);
    const ran = await cli(f, ['jobs', 'run', 'report']);
    expect(ran.code, ran.stderr).toBe(0);

    // A pause without a reason; an unknown job is a usage error, checked before the store.
    const bare = await cli(f, ['jobs', 'pause', 'other']);
    expect(bare.code).toBe(0);
    expect(bare.stdout).toMatch(/^paused other by ops-1 at [^,]+\)\n/);
    const unknown = await cli(f, ['jobs', 'pause', 'nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown job "nope"');
  }, 60_000);

  it('an unreachable store: pause, resume and jobs run of a maybe-paused job exit 1', async () => {
    const f = fixture({
      prefix: uniquePrefix('jobs-pause-down'),
      jobs: [{ name: 'report', schedule: '0 2 1 1 *', workMs: 10 }],
    });
    const url = `redis://127.0.0.1:${await freePort()}`;
    for (const args of [
      ['jobs', 'pause', 'report'],
      ['jobs', 'resume', 'report'],
      ['jobs', 'run', 'report'],
    ]) {
      const result = await cli(f, args, url);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(1);
      expect(result.stderr).toMatch(/unreachable: .+/);
      expect(result.stderr).not.toContain('skipped');
      expect(result.durationMs).toBeLessThan(15_000);
    }
  }, 60_000);

  it('two running instances skip a paused job as paused from the next fire on, without a restart, and run it after resume', async () => {
    const f = fixture({
      prefix: uniquePrefix('jobs-pause-fleet'),
      jobs: [{ name: 'tick', schedule: '* * * * * *', workMs: 20 }],
    });
    const store = new RedisLockStore(client, { prefix: f.prefix });
    const one = startRun(f, { instance: 'one', redisUrl: redisUrl! });
    const two = startRun(f, { instance: 'two', redisUrl: redisUrl! });
    try {
      await one.waitForLine((line) => line.outcome !== undefined, 15_000, 'a first fire');
      await two.waitForLine((line) => line.outcome !== undefined, 15_000, 'a first fire');
      const paused = await cli(f, ['jobs', 'pause', 'tick', '--reason', 'maintenance']);
      expect(paused.code, paused.stderr).toBe(0);
      const pausedAt = (await store.pauseOf('tick', { key: 'tick' }))!.pausedAt;
      const [fromOne, fromTwo] = [one.lines().length, two.lines().length];
      // Both keep firing: every fire is skipped, recorded once as paused, seen as done by the other.
      const isPausedSkip = (line: Record<string, unknown>) => line.reason === 'paused';
      await one.waitForLine(
        (line) => line.outcome === 'skipped' && Date.parse(String(line.scheduledAt)) > pausedAt + 2_000,
        10_000,
        'skips after the pause',
        fromOne,
      );
      await two.waitForLine(
        (line) => line.outcome === 'skipped' && Date.parse(String(line.scheduledAt)) > pausedAt + 2_000,
        10_000,
        'skips after the pause',
        fromTwo,
      );
      const after = (lines: Array<Record<string, unknown>>) =>
        lines.filter(
          (line) => line.job === 'tick' && Date.parse(String(line.scheduledAt)) > pausedAt && line.outcome,
        );
      const fires = [...after(one.lines()), ...after(two.lines())];
      expect(fires.some(isPausedSkip)).toBe(true);
      for (const line of fires) {
        expect(line.outcome).toBe('skipped');
        expect(['paused', 'already-done']).toContain(line.reason);
      }
      expect((await records(f.recordKey)).filter((entry) => entry.scheduledAt > pausedAt)).toEqual([]);
      const history = await store.runHistory('tick', { key: 'tick', limit: 3 });
      expect(history.map((record) => [record.outcome, record.reason])).toEqual([
        ['skipped', 'paused'],
        ['skipped', 'paused'],
        ['skipped', 'paused'],
      ]);

      const resumed = await cli(f, ['jobs', 'resume', 'tick']);
      expect(resumed.code, resumed.stderr).toBe(0);
      const resumedAt = await store.now();
      const ranAgain = (line: Record<string, unknown>) =>
        line.outcome === 'success' && Date.parse(String(line.scheduledAt)) > resumedAt;
      await Promise.any([
        one.waitForLine(ranAgain, 10_000, 'a run after resume', fromOne),
        two.waitForLine(ranAgain, 10_000, 'a run after resume', fromTwo),
      ]);
      expect((await records(f.recordKey)).some((entry) => entry.scheduledAt > resumedAt)).toBe(true);
      expect(one.process.hasExited() || two.process.hasExited()).toBe(false);
    } finally {
      one.process.kill('SIGTERM');
      two.process.kill('SIGTERM');
      await Promise.all([one.process.stop(), two.process.stop()]);
    }
  }, 60_000);
});
