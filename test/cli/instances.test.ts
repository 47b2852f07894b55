import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, waitUntil } from '../support/processes.ts';
import { deleteKeys, redisUrlForTests, uniquePrefix } from '../support/redis.ts';
import { createProject, ensureCliBuilt, runCli, tsConfig } from './cli-support.ts';
import {
  ensureBuilt,
  libfaketimeAvailable,
  type RunFixture,
  type RunProcess,
  startRun,
  writeRunFixture,
} from './run-process.ts';

const redisUrl = await redisUrlForTests();

interface Listed {
  instance: string;
  host: string;
  pid: number;
  version: string;
  startedAt: string;
  jobs: number;
  clockOffsetMs: number;
  lastSeenAt: string;
}

describe('resil instances', () => {
  beforeAll(() => ensureCliBuilt(), 200_000);

  it('on the in-memory store: exit 1, saying it needs a shared store', async () => {
    const project = createProject({
      'resil.config.ts': tsConfig("[{ name: 'tick', schedule: '* * * * *', run: async () => {} }]"),
    });
    try {
      const result = await runCli(['instances', '--json'], { cwd: project.directory });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/resil instances needs a shared store .*MemoryLockStore/);
    } finally {
      project.remove();
    }
  });

  it('--help names the columns, the offset sign, the exit codes and examples', async () => {
    const result = await runCli(['instances', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/store minus instance: -2000 means the instance's clock is 2 s ahead/);
    expect(result.stdout).toMatch(/Exit codes: 0 listed/);
    expect(result.stdout).toMatch(/\$ resil instances --json/);
    expect((await runCli(['--help'])).stdout).toMatch(/instances \[options\]/);
  });
});

describe.skipIf(!redisUrl)('resil instances with two resil run processes on Redis', () => {
  let client: Redis;
  let fixture: RunFixture;
  const runs: RunProcess[] = [];

  beforeAll(() => {
    ensureBuilt();
    ensureCliBuilt();
    client = new Redis(redisUrl!);
    fixture = writeRunFixture({
      prefix: uniquePrefix('instances'),
      jobs: [
        { name: 'tick', schedule: '*/30 * * * * *', workMs: 10 },
        { name: 'tock', schedule: '15 * * * * *', workMs: 10 },
      ],
    });
  }, 200_000);
  afterAll(async () => {
    for (const run of runs) await run.process.stop();
    await deleteKeys(client, fixture.prefix);
    fixture.remove();
    await client.quit();
  });

  const instances = async (args: string[] = ['--json'], url = redisUrl!) =>
    runCli(['--config', fixture.configPath, 'instances', ...args], {
      cwd: fixture.directory,
      env: { FIXTURE_REDIS_URL: url, FIXTURE_INSTANCE: 'cli' },
    });
  const listed = async () => {
    const result = await instances();
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    return JSON.parse(result.stdout) as Listed[];
  };

  it.skipIf(!libfaketimeAvailable())(
    'lists both with their clock offsets (the +2 s one near -2000 ms); the one stopped cleanly is gone',
    async () => {
      const steady = startRun(fixture, { instance: 'steady', redisUrl: redisUrl! });
      const ahead = startRun(fixture, { instance: 'ahead', redisUrl: redisUrl!, clockOffset: '+2s' });
      runs.push(steady, ahead);
      for (const run of [steady, ahead]) {
        await run.waitForLine((line) => String(line.msg).startsWith('runner started'), 20_000, 'the start');
      }
      const both = (await waitUntil('both instances listed', async () => {
        const entries = await listed();
        return entries.length === 2 ? entries : undefined;
      })) as Listed[];
      expect(both.map((entry) => entry.instance)).toEqual(['ahead', 'steady']);
      const [aheadEntry, steadyEntry] = both as [Listed, Listed];
      expect(aheadEntry.clockOffsetMs).toBeGreaterThan(-2_500);
      expect(aheadEntry.clockOffsetMs).toBeLessThan(-1_500);
      expect(Math.abs(steadyEntry.clockOffsetMs)).toBeLessThan(500);
      for (const entry of both) {
        expect(entry).toMatchObject({ jobs: 2, version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
        expect(entry.pid).toBeGreaterThan(0);
        expect(Math.abs(Date.parse(entry.lastSeenAt) - Date.now())).toBeLessThan(10_000);
        expect(Math.abs(Date.parse(entry.startedAt) - Date.now())).toBeLessThan(60_000);
      }
      expect(aheadEntry.pid).toBe(ahead.process.pid);

      const table = await instances([]);
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(
        /INSTANCE\s+HOST\s+PID\s+VERSION\s+STARTED\s+JOBS\s+CLOCK OFFSET \(MS\)\s+LAST SEEN/,
      );
      expect(table.stdout).toMatch(/ahead\s.*\s-(1[5-9]|2[0-4])\d\d\s/);

      ahead.process.kill('SIGTERM');
      expect((await ahead.process.exited).code).toBe(0);
      expect((await listed()).map((entry) => entry.instance)).toEqual(['steady']);
    },
    90_000,
  );

  it('store unreachable: exit 1 with the reason', async () => {
    const result = await instances(['--json'], `redis://127.0.0.1:${await freePort()}`);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/lock store unreachable: .*ECONNREFUSED/);
  }, 30_000);
});
