/**
 * Config drift as users meet it in a rolling deploy: the built binary, two real `resil run`
 * processes whose configs give one job different schedules, on Redis and on PostgreSQL;
 * `resil jobs list --json`, the runner's warning and `resil_job_config_drift` show it.
 */
import { symlinkSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instanceHeartbeatMs } from '../../src/scheduler/instance-heartbeat.ts';
import { startDashboard } from '../dashboard/dashboard-process.ts';
import { databaseUrlForTests, uniqueSchemaName } from '../support/postgres.ts';
import { freePort, type SpawnedProcess, spawnProcess, waitUntil } from '../support/processes.ts';
import { redisUrlForTests, uniquePrefix } from '../support/redis.ts';
import {
  binary,
  createProject,
  ensureCliBuilt,
  type Project,
  repoRoot,
  runCli,
  tsConfig,
} from './cli-support.ts';

const redisUrl = await redisUrlForTests();
const databaseUrl = await databaseUrlForTests();
const schema = uniqueSchemaName('drift');

interface Listed {
  name: string;
  drift: Array<{ fingerprint: string; instances: string[]; fields: Record<string, unknown> | null }> | null;
}

const stores = [
  {
    name: 'Redis',
    url: redisUrl,
    store: (url: string) => ({
      imports: `import { Redis } from 'ioredis';\nimport { RedisLockStore } from 'resil/redis';`,
      store: `new RedisLockStore(new Redis(${JSON.stringify(url)}), { prefix: ${JSON.stringify(uniquePrefix('drift'))} })`,
    }),
  },
  {
    name: 'PostgreSQL',
    url: databaseUrl,
    store: (url: string) => ({
      imports: `import pg from 'pg';\nimport { PostgresLockStore } from 'resil/postgres';`,
      store: `new PostgresLockStore(new pg.Pool({ connectionString: ${JSON.stringify(url)} }), { schema: ${JSON.stringify(schema)} })`,
    }),
  },
];

describe.each(stores)('config drift on $name', ({ url, store }) => {
  let project: Project;
  const runs: SpawnedProcess[] = [];

  beforeAll(async () => {
    if (url === undefined) return;
    ensureCliBuilt();
    if (url === databaseUrl) {
      const pool = new pg.Pool({ connectionString: url });
      await pool.query(`CREATE SCHEMA "${schema}"`);
      await pool.end();
    }
    const { imports, store: storeSource } = store(url);
    project = createProject({
      'resil.config.ts': tsConfig(
        `[
    { name: 'report', schedule: process.env.RESIL_TEST_SCHEDULE ?? '0 2 * * *', run: async () => {} },
    { name: 'cleanup', schedule: '0 3 * * *', timeout: '1m', run: async () => {} },
  ]`,
        {
          imports,
          extra: `instance: process.env.RESIL_TEST_INSTANCE ?? 'cli',\n  timezone: 'UTC',\n  store: ${storeSource},`,
        },
      ),
    });
    symlinkSync(`${repoRoot}/node_modules/pg`, project.path('node_modules/pg'), 'dir');
  }, 200_000);
  afterAll(async () => {
    await Promise.all(runs.map((run) => run.stop()));
    if (url !== undefined && url === databaseUrl) {
      const pool = new pg.Pool({ connectionString: url });
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    }
    project?.remove();
  });

  const jobsList = async (): Promise<Listed[]> => {
    const result = await runCli(['jobs', 'list', '--json'], {
      cwd: project.directory,
      env: { NO_COLOR: '1' },
      timeoutMs: 20_000,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    return JSON.parse(result.stdout) as Listed[];
  };
  const startRun = (instance: string, args: string[], schedule?: string) => {
    const env: NodeJS.ProcessEnv = { ...process.env, RESIL_TEST_INSTANCE: instance, NO_COLOR: '1' };
    if (schedule !== undefined) env.RESIL_TEST_SCHEDULE = schedule;
    const run = spawnProcess(process.execPath, [binary, 'run', ...args], {
      cwd: project.directory,
      env,
      name: `resil run (${instance})`,
    });
    runs.push(run);
    return run;
  };
  const driftMetric = async (metricsUrl: string, job: string) => {
    const text = await (await fetch(`${metricsUrl}/metrics`)).text();
    const line = text
      .split('\n')
      .find((each) => each.startsWith(`resil_job_config_drift{job_name="${job}"}`));
    return line === undefined ? undefined : Number(line.split(' ').at(-1));
  };

  it.skipIf(url === undefined)(
    'appears within one heartbeat of an instance starting with another schedule, and is gone when it stops',
    async () => {
      const port = await freePort();
      const metricsUrl = `http://127.0.0.1:${port}`;
      const steady = startRun('old-1', ['--metrics', `127.0.0.1:${port}`]);
      await steady.waitForOutput(/runner started/, 30_000);
      await waitUntil(
        'the first instance listed',
        async () => (await driftMetric(metricsUrl, 'report')) === 0,
        {
          timeoutMs: 10_000,
          intervalMs: 200,
        },
      );
      expect((await jobsList()).map((entry) => [entry.name, entry.drift])).toEqual([
        ['report', null],
        ['cleanup', null],
      ]);

      const changed = startRun('new-1', [], '*/5 * * * *');
      await changed.waitForOutput(/runner started/, 30_000);
      const startedAt = performance.now();
      const listing = (await waitUntil(
        'the drift with both definitions',
        async () => {
          const entries = await jobsList();
          return entries[0]?.drift?.every((variant) => variant.fields !== null) ? entries : undefined;
        },
        { timeoutMs: 3 * instanceHeartbeatMs, intervalMs: 200 },
      )) as Listed[];
      // One heartbeat, plus the time a `jobs list` process takes to start and read.
      expect(performance.now() - startedAt).toBeLessThan(instanceHeartbeatMs + 3_000);
      expect(listing[0]!.drift).toEqual([
        {
          fingerprint: expect.stringMatching(/^[\w-]{8}$/),
          instances: ['new-1'],
          fields: { schedule: '*/5 * * * *' },
        },
        {
          fingerprint: expect.stringMatching(/^[\w-]{8}$/),
          instances: ['old-1'],
          fields: { schedule: '0 2 * * *' },
        },
      ]);
      expect(listing[1]).toMatchObject({ name: 'cleanup', drift: null });

      const table = await runCli(['jobs', 'list'], { cwd: project.directory, env: { NO_COLOR: '1' } });
      expect(table.stdout).toMatch(/\sDRIFT\n/);
      expect(table.stdout).toMatch(/report\s.*2 definitions: schedule\n/);

      // The dashboard reads the same view: the job it marks, and the variants its page lists.
      const dashboard = await startDashboard({ cwd: project.directory });
      runs.push(dashboard.process);
      const overview = (await (await fetch(`${dashboard.origin}/api/overview`)).json()) as { jobs: Listed[] };
      expect(
        overview.jobs.map((job) => [job.name, job.drift?.map((variant) => variant.instances) ?? null]),
      ).toEqual([
        ['report', [['new-1'], ['old-1']]],
        ['cleanup', null],
      ]);
      await dashboard.stop();

      await steady.waitForOutput(
        /"job":"report".*config drift: live instances run different definitions/,
        10_000,
      );
      await waitUntil(
        'resil_job_config_drift 1',
        async () => (await driftMetric(metricsUrl, 'report')) === 1,
        {
          timeoutMs: 2 * instanceHeartbeatMs,
          intervalMs: 200,
        },
      );
      expect(await driftMetric(metricsUrl, 'cleanup')).toBe(0);

      changed.kill('SIGTERM');
      expect((await changed.exited).code).toBe(0);
      // A clean stop leaves the registry at once.
      expect((await jobsList()).map((entry) => entry.drift)).toEqual([null, null]);
      await waitUntil(
        'resil_job_config_drift 0',
        async () => (await driftMetric(metricsUrl, 'report')) === 0,
        {
          timeoutMs: 2 * instanceHeartbeatMs,
          intervalMs: 200,
        },
      );
      await steady.waitForOutput(/"job":"report".*config drift ended/, 10_000);
    },
    90_000,
  );
});
