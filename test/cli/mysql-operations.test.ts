/**
 * The CLI end to end on MySQL (MariaDB) as users run it: the built binary, a `resil.config.ts` on
 * `MysqlLockStore`, a real `resil run --metrics`, and every command that reads or steers the
 * fleet: jobs list / next / history / run / pause / resume, lock status, instances, the
 * dashboard's API. The same commands on Redis and PostgreSQL are in the other test/cli files.
 */
import { symlinkSync } from 'node:fs';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard } from '../dashboard/dashboard-process.ts';
import { dropMysqlTables, mysqlUrlForTests, uniqueTableName } from '../support/mysql.ts';
import { freePort, type SpawnedProcess, spawnProcess, waitUntil } from '../support/processes.ts';
import {
  binary,
  createProject,
  ensureCliBuilt,
  type Project,
  repoRoot,
  runCli,
  tsConfig,
} from './cli-support.ts';
import { httpGet, sampleValue, scrape } from './metrics-support.ts';

const mysqlUrl = await mysqlUrlForTests();

interface HistoryEntry {
  scheduledAt: string;
  outcome: string;
  reason: string | null;
  instance: string | null;
  token: number | null;
}

describe.skipIf(!mysqlUrl)('the resil CLI on a MySQL store', () => {
  const table = uniqueTableName('cli');
  let project: Project;
  let pool: mysql.Pool;
  const runs: SpawnedProcess[] = [];

  beforeAll(() => {
    ensureCliBuilt();
    project = createProject({
      'resil.config.ts': tsConfig(
        `[
    { name: 'tick', schedule: '* * * * * *', lock: { ttl: '5s' }, run: async () => {} },
    { name: 'slow', schedule: '0 2 1 1 *', lock: { ttl: '10s' }, run: async () => new Promise((resolve) => setTimeout(resolve, 2_500)) },
  ]`,
        {
          imports: `import mysql from 'mysql2/promise';\nimport { MysqlLockStore } from 'resil/mysql';\nconst pool = mysql.createPool({ uri: ${JSON.stringify(mysqlUrl)} });`,
          extra: `instance: process.env.RESIL_TEST_INSTANCE ?? 'ops-1',\n  timezone: 'UTC',\n  store: new MysqlLockStore(pool, { table: ${JSON.stringify(table)} }),`,
        },
      ),
    });
    symlinkSync(`${repoRoot}/node_modules/mysql2`, project.path('node_modules/mysql2'), 'dir');
    pool = mysql.createPool({ uri: mysqlUrl, connectionLimit: 2 });
  }, 200_000);
  afterAll(async () => {
    await Promise.all(runs.map((run) => run.stop()));
    if (pool) await dropMysqlTables(pool, table);
    await pool?.end();
    project?.remove();
  });

  const cli = (args: string[]) =>
    runCli(args, { cwd: project.directory, env: { NO_COLOR: '1' }, timeoutMs: 20_000 });
  const json = async <T>(args: string[]): Promise<T> => {
    const result = await cli(args);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as T;
  };

  it('resil run --metrics is ready on the store and runs the job; history, list, next, run, lock status, pause, resume and instances read and steer it', async () => {
    const port = await freePort();
    const run = spawnProcess(process.execPath, [binary, 'run', '--job', 'tick', '--metrics', String(port)], {
      cwd: project.directory,
      env: { ...process.env, RESIL_TEST_INSTANCE: 'runner-1', NO_COLOR: '1' },
      name: 'resil run (runner-1)',
    });
    runs.push(run);
    await run.waitForOutput(/runner started/, 30_000);
    const base = `http://127.0.0.1:${port}`;
    await waitUntil(
      '/readyz 200',
      async () => (await httpGet(`${base}/readyz`)).status === 200 || undefined,
      {
        timeoutMs: 10_000,
        intervalMs: 100,
      },
    );
    expect(sampleValue((await scrape(base)).samples, 'resil_store_up')).toBe(1);

    const history = (await waitUntil(
      'a run recorded',
      async () => {
        const entries = await json<HistoryEntry[]>(['jobs', 'history', 'tick', '--json']);
        return entries.some((entry) => entry.outcome === 'success') ? entries : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 300 },
    )) as HistoryEntry[];
    const latest = history.find((entry) => entry.outcome === 'success')!;
    expect(latest).toMatchObject({ instance: 'runner-1' });
    expect(Number.isSafeInteger(latest.token)).toBe(true);

    const listed = await json<Array<{ name: string; nextRun: string; lockKey: string; paused: boolean }>>([
      'jobs',
      'list',
      '--json',
    ]);
    expect(listed.map((job) => [job.name, job.lockKey, job.paused])).toEqual([
      ['tick', 'tick', false],
      ['slow', 'slow', false],
    ]);
    expect(Date.parse(listed[0]!.nextRun) - Date.now()).toBeLessThan(2_000);
    expect(await json<string[]>(['jobs', 'next', 'slow', '-n', '2', '--json'])).toEqual([
      expect.stringMatching(/^\d{4}-01-01T02:00:00\.000Z$/),
      expect.stringMatching(/^\d{4}-01-01T02:00:00\.000Z$/),
    ]);

    // A manual run holds its lease while it works: lock status shows it from another process.
    const manual = spawnProcess(process.execPath, [binary, 'jobs', 'run', 'slow'], {
      cwd: project.directory,
      env: { ...process.env, NO_COLOR: '1' },
      name: 'resil jobs run slow',
    });
    runs.push(manual);
    const held = (await waitUntil(
      'the manual run to hold its lease',
      async () => {
        const status = await json<{ held: boolean; owner?: string; token?: number; expiresAt?: string }>([
          'lock',
          'status',
          'slow',
          '--json',
        ]);
        return status.held ? status : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 200 },
    )) as { owner: string; token: number; expiresAt: string };
    expect(held.owner).toMatch(/^ops-1\//);
    expect(Date.parse(held.expiresAt) - Date.now()).toBeGreaterThan(6_000);
    expect(await manual.exited).toEqual({ code: 0, signal: null });
    expect(await json<{ held: boolean }>(['lock', 'status', 'slow', '--json'])).toMatchObject({
      held: false,
    });
    const [manualRun] = await json<HistoryEntry[]>(['jobs', 'history', 'slow', '--json']);
    expect(manualRun).toMatchObject({ outcome: 'success', instance: 'ops-1', token: held.token });

    const paused = await cli(['jobs', 'pause', 'tick', '--reason', 'maintenance']);
    expect(paused.code, paused.stderr).toBe(0);
    const pausedAt = Date.now();
    const skips = (await waitUntil(
      'two paused skips',
      async () => {
        const entries = await json<HistoryEntry[]>(['jobs', 'history', 'tick', '--limit', '2', '--json']);
        return entries.length === 2 &&
          entries.every((entry) => Date.parse(entry.scheduledAt) > pausedAt + 1_000)
          ? entries
          : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 300 },
    )) as HistoryEntry[];
    expect(skips.map((entry) => [entry.outcome, entry.reason])).toEqual([
      ['skipped', 'paused'],
      ['skipped', 'paused'],
    ]);
    expect((await json<Array<{ paused: boolean }>>(['jobs', 'list', '--json']))[0]!.paused).toBe(true);
    expect((await cli(['jobs', 'resume', 'tick'])).code).toBe(0);
    const resumedAt = Date.now();
    await waitUntil(
      'a run after resume',
      async () =>
        (await json<HistoryEntry[]>(['jobs', 'history', 'tick', '--json'])).some(
          (entry) => entry.outcome === 'success' && Date.parse(entry.scheduledAt) > resumedAt + 1_000,
        ) || undefined,
      { timeoutMs: 15_000, intervalMs: 300 },
    );

    const instances = await json<Array<{ instance: string; pid: number; jobs: number }>>([
      'instances',
      '--json',
    ]);
    expect(instances).toEqual([expect.objectContaining({ instance: 'runner-1', pid: run.pid, jobs: 1 })]);

    const dashboard = await startDashboard({ cwd: project.directory });
    runs.push(dashboard.process);
    const overview = JSON.parse((await httpGet(`${dashboard.url}api/overview`)).body);
    expect(overview.store).toMatchObject({
      name: 'MysqlLockStore',
      shared: true,
      runLedger: true,
      pauses: true,
      instances: true,
      error: null,
    });
    expect(overview.instances.map((each: { instance: string }) => each.instance)).toEqual(['runner-1']);
    const detail = JSON.parse((await httpGet(`${dashboard.url}api/jobs/tick`)).body);
    expect(detail.history.some((entry: HistoryEntry) => entry.outcome === 'success')).toBe(true);
    await dashboard.stop();

    run.kill('SIGTERM');
    expect((await run.exited).code).toBe(0);
    expect(await json<unknown[]>(['instances', '--json'])).toEqual([]);
  }, 120_000);
});
