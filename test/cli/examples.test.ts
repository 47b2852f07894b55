import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deleteKeys, redisUrlForTests } from '../support/redis.ts';
import { ensureCliBuilt, repoRoot, runCli } from './cli-support.ts';

const redisUrl = await redisUrlForTests();

async function withClient<T>(use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(redisUrl!);
  try {
    return await use(client);
  } finally {
    client.disconnect();
  }
}

beforeAll(() => ensureCliBuilt());

describe("the repository's example config (resil.config.ts + jobs/)", () => {
  it('lists the example jobs, the heartbeat due within seconds', async () => {
    const result = await runCli(['jobs', 'list', '--json'], { cwd: repoRoot, env: { REDIS_URL: '' } });
    expect(result.code, result.stderr).toBe(0);
    const jobs = JSON.parse(result.stdout) as Array<{ name: string; nextRun: string; lockKey: string }>;
    expect(jobs.map((job) => job.name)).toEqual(['heartbeat', 'cache-rebuild', 'nightly-report']);
    expect(new Date(jobs[0]!.nextRun).getTime() - Date.now()).toBeLessThanOrEqual(5_000);
  });

  it('runs the nightly report now, writing it through the fence', async () => {
    const result = await runCli(['jobs', 'run', 'nightly-report'], { cwd: repoRoot, env: { REDIS_URL: '' } });
    expect(result.code, result.stderr).toBe(0);
    const where = /"where":"([^"]+)"/.exec(result.stdout)?.[1];
    expect(where).toBeDefined();
    const report = JSON.parse(readFileSync(where!, 'utf8')) as { scheduledAt: string; attempt: number };
    expect(report.attempt).toBe(1);
    expect(Date.now() - new Date(report.scheduledAt).getTime()).toBeLessThan(30_000);
  });

  it('runs the heartbeat now, each field once in its line', async () => {
    const result = await runCli(['jobs', 'run', 'heartbeat'], { cwd: repoRoot, env: { REDIS_URL: '' } });
    expect(result.code, result.stderr).toBe(0);
    const line = result.stdout.split('\n').find((text) => text.includes('"msg":"heartbeat"'));
    expect(line).toBeDefined();
    expect(line!.match(/"scheduledAt":/g)).toHaveLength(1);
    expect(line!.match(/"job":/g)).toHaveLength(1);
  });

  it('runs the cache rebuild now', async () => {
    const result = await runCli(['jobs', 'run', 'cache-rebuild'], { cwd: repoRoot, env: { REDIS_URL: '' } });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('"msg":"cache rebuilt"');
  });
});

describe.skipIf(!redisUrl)('the example config on Redis (REDIS_URL set)', () => {
  // The examples' own keys (jobs/store.ts), this job's only: its lease, token, fence and value.
  const jobKeys = 'resil-examples:{nightly-report}:';
  beforeEach(() => withClient((client) => deleteKeys(client, jobKeys)));
  afterEach(() => withClient((client) => deleteKeys(client, jobKeys)));

  it('writes the nightly report through RedisLockStore#fencedSet, under the fence of the run token', async () => {
    const result = await runCli(['jobs', 'run', 'nightly-report'], {
      cwd: repoRoot,
      env: { REDIS_URL: redisUrl! },
    });
    expect(result.code, result.stderr).toBe(0);
    const where = /"where":"redis ([^"]+)"/.exec(result.stdout)?.[1];
    expect(where).toBe('resil-examples:{nightly-report}:value:latest.json');
    const token = Number(/"token":(\d+)/.exec(result.stdout)?.[1]);
    await withClient(async (client) => {
      const report = JSON.parse((await client.get(where!)) ?? 'null') as { attempt: number } | null;
      expect(report?.attempt).toBe(1);
      // The fence keeps the newest token that wrote: this run's.
      expect(Number(await client.get(`${jobKeys}fence`))).toBe(token);
    });
  });
});
