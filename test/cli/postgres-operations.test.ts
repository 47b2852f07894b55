/**
 * The fleet commands on PostgreSQL as users run them: the built binary, a `resil.config.ts` on
 * `PostgresLockStore`, and real `resil run` processes (one under libfaketime +2 s). The same
 * commands on Redis are in jobs-pause.test.ts and instances.test.ts.
 */
import { symlinkSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrlForTests, uniqueSchemaName } from '../support/postgres.ts';
import { type SpawnedProcess, spawnProcess, waitUntil } from '../support/processes.ts';
import {
  binary,
  createProject,
  ensureCliBuilt,
  type Project,
  repoRoot,
  runCli,
  tsConfig,
} from './cli-support.ts';
import { libfaketime, libfaketimeAvailable } from './run-process.ts';

const databaseUrl = await databaseUrlForTests();

interface HistoryEntry {
  scheduledAt: string;
  outcome: string;
  reason: string | null;
  instance: string | null;
}

interface ListedInstance {
  instance: string;
  pid: number;
  jobs: number;
  clockOffsetMs: number;
  lastSeenAt: string;
}

describe.skipIf(!databaseUrl)('jobs pause / resume and instances on a PostgreSQL store', () => {
  const schema = uniqueSchemaName('cli operations');
  let project: Project;
  let pool: pg.Pool;
  const runs: SpawnedProcess[] = [];

  beforeAll(async () => {
    ensureCliBuilt();
    project = createProject({
      'resil.config.ts': tsConfig(
        `[
    { name: 'tick', schedule: '* * * * * *', lock: { ttl: '5s' }, run: async () => {} },
    { name: 'report', schedule: '0 2 1 1 *', run: async () => {} },
  ]`,
        {
          imports: `import pg from 'pg';\nimport { PostgresLockStore } from 'resil/postgres';\nconst pool = new pg.Pool({ connectionString: ${JSON.stringify(databaseUrl)} });`,
          extra: `instance: process.env.RESIL_TEST_INSTANCE ?? 'ops-1',\n  timezone: 'UTC',\n  store: new PostgresLockStore(pool, { schema: ${JSON.stringify(schema)} }),`,
        },
      ),
    });
    symlinkSync(`${repoRoot}/node_modules/pg`, project.path('node_modules/pg'), 'dir');
    pool = new pg.Pool({ connectionString: databaseUrl });
    await pool.query(`CREATE SCHEMA ${schema}`);
  }, 200_000);
  afterAll(async () => {
    await Promise.all(runs.map((run) => run.stop()));
    await pool?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
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
  /** A real `resil run` of the project, as `instance`, its clock shifted by `clockOffset` when given. */
  const startRun = (instance: string, clockOffset?: string) => {
    const env: NodeJS.ProcessEnv = { ...process.env, RESIL_TEST_INSTANCE: instance, NO_COLOR: '1' };
    if (clockOffset !== undefined) {
      env.LD_PRELOAD = libfaketime;
      env.FAKETIME = clockOffset;
      env.DONT_FAKE_MONOTONIC = '1';
    }
    const run = spawnProcess(process.execPath, [binary, 'run', '--job', 'tick'], {
      cwd: project.directory,
      env,
      name: `resil run (${instance})`,
    });
    runs.push(run);
    return run;
  };

  it('pause, resume, jobs list and jobs run on the store; a running instance skips as paused and runs again after resume', async () => {
    const run = startRun('runner-1');
    await run.waitForOutput(/runner started/, 30_000);
    const ranOnce = async (after: number) =>
      (await json<HistoryEntry[]>(['jobs', 'history', 'tick', '--json'])).find(
        (entry) => entry.outcome === 'success' && Date.parse(entry.scheduledAt) > after,
      );
    await waitUntil('a first run recorded', () => ranOnce(0), { timeoutMs: 15_000, intervalMs: 400 });

    const paused = await cli(['jobs', 'pause', 'tick', '--reason', 'vacuum full']);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toMatch(/^paused tick by ops-1 at .+, reason: vacuum full\n/);
    const listed = await json<
      Array<{ name: string; paused: boolean; pause: { by: string; reason: string } | null }>
    >(['jobs', 'list', '--json']);
    expect(listed.map((job) => [job.name, job.paused, job.pause?.reason ?? null])).toEqual([
      ['tick', true, 'vacuum full'],
      ['report', false, null],
    ]);
    const pausedAt = Date.now();
    // From its next fire on, without a restart, the running instance records paused skips only.
    const skips = (await waitUntil(
      'three paused skips',
      async () => {
        const history = await json<HistoryEntry[]>(['jobs', 'history', 'tick', '--limit', '3', '--json']);
        return history.length === 3 &&
          history.every((entry) => Date.parse(entry.scheduledAt) > pausedAt + 1_000)
          ? history
          : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 400 },
    )) as HistoryEntry[];
    expect(skips.map((entry) => [entry.outcome, entry.reason, entry.instance])).toEqual([
      ['skipped', 'paused', 'runner-1'],
      ['skipped', 'paused', 'runner-1'],
      ['skipped', 'paused', 'runner-1'],
    ]);

    const refused = await cli(['jobs', 'run', 'tick']);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/tick: skipped: paused by ops-1 .+ run it anyway with --force\n$/);
    const forced = await cli(['jobs', 'run', 'tick', '--force']);
    expect(forced.code, forced.stderr).toBe(0);

    const resumed = await cli(['jobs', 'resume', 'tick']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/^resumed tick \(paused by ops-1 at .+, reason: vacuum full\)\n/);
    const resumedAt = Date.now();
    await waitUntil('a run after resume', () => ranOnce(resumedAt + 1_000), {
      timeoutMs: 15_000,
      intervalMs: 400,
    });
    expect((await json<Array<{ paused: boolean }>>(['jobs', 'list', '--json']))[0]!.paused).toBe(false);
    expect(run.hasExited()).toBe(false);
  }, 90_000);

  it.skipIf(!libfaketimeAvailable())(
    'instances lists two running instances with their offsets (+2 s clock: near -2000 ms); a clean stop removes one',
    async () => {
      const steady = startRun('steady');
      const ahead = startRun('ahead', '+2s');
      await Promise.all([steady, ahead].map((run) => run.waitForOutput(/runner started/, 30_000)));
      const both = (await waitUntil(
        'both instances listed',
        async () => {
          const entries = await json<ListedInstance[]>(['instances', '--json']);
          const named = entries.filter((entry) => ['ahead', 'steady'].includes(entry.instance));
          return named.length === 2 ? named : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 400 },
      )) as ListedInstance[];
      const [aheadEntry, steadyEntry] = both;
      expect(aheadEntry!.instance).toBe('ahead');
      expect(aheadEntry!.pid).toBe(ahead.pid);
      expect(aheadEntry!.clockOffsetMs).toBeGreaterThan(-2_500);
      expect(aheadEntry!.clockOffsetMs).toBeLessThan(-1_500);
      expect(Math.abs(steadyEntry!.clockOffsetMs)).toBeLessThan(500);
      expect(steadyEntry!.jobs).toBe(1);
      const table = await cli(['instances']);
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/\nahead\s.*\s-(1[5-9]|2[0-4])\d\d\s/);

      ahead.kill('SIGTERM');
      expect((await ahead.exited).code).toBe(0);
      const left = await json<ListedInstance[]>(['instances', '--json']);
      expect(left.map((entry) => entry.instance)).not.toContain('ahead');
      expect(left.map((entry) => entry.instance)).toContain('steady');
    },
    90_000,
  );
});
