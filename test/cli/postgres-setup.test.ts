/**
 * `resil run --metrics` on a PostgreSQL store that is not set up: a dropped table is created again
 * and the jobs go on; a schema that does not exist is a set-up error, not an outage that passes:
 * each fire is skipped as `store-setup` with an error line saying what to do, and `/readyz` and
 * `resil_store_up` say the store is not usable, until the schema is created.
 */
import { symlinkSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrlForTests, uniqueSchemaName } from '../support/postgres.ts';
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
import { jsonLines } from './run-process.ts';

const databaseUrl = await databaseUrlForTests();

describe.skipIf(!databaseUrl)('resil run on a PostgreSQL store that is not set up', () => {
  let project: Project;
  let pool: pg.Pool;
  const schemas: string[] = [];
  const runs: SpawnedProcess[] = [];

  beforeAll(() => {
    ensureCliBuilt();
    project = createProject({
      'resil.config.ts': tsConfig(
        `[{ name: 'tick', schedule: '* * * * * *', lock: { ttl: '5s' }, run: async () => {} }]`,
        {
          imports: `import pg from 'pg';\nimport { PostgresLockStore } from 'resil/postgres';\nconst pool = new pg.Pool({ connectionString: ${JSON.stringify(databaseUrl)} });`,
          extra: `instance: 'setup-test',\n  timezone: 'UTC',\n  store: new PostgresLockStore(pool, { schema: process.env.RESIL_TEST_SCHEMA }),`,
        },
      ),
    });
    symlinkSync(`${repoRoot}/node_modules/pg`, project.path('node_modules/pg'), 'dir');
    pool = new pg.Pool({ connectionString: databaseUrl });
  }, 200_000);
  afterAll(async () => {
    await Promise.all(runs.map((run) => run.stop()));
    for (const schema of schemas) await pool?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool?.end();
    project?.remove();
  });

  async function start(schema: string): Promise<{ run: SpawnedProcess; base: string }> {
    const port = await freePort();
    const run = spawnProcess(process.execPath, [binary, 'run', '--metrics', String(port)], {
      cwd: project.directory,
      env: { ...process.env, RESIL_TEST_SCHEMA: schema, NO_COLOR: '1' },
      name: `resil run (${schema})`,
    });
    runs.push(run);
    await run.waitForOutput(/runner started/, 30_000);
    return { run, base: `http://127.0.0.1:${port}` };
  }
  const lines = (run: SpawnedProcess) => jsonLines(run.output());
  const readyz = async (base: string) => {
    const answer = await httpGet(`${base}/readyz`, { timeoutMs: 2_000 });
    return { status: answer.status, body: JSON.parse(answer.body) };
  };

  it('one-shot commands on a schema that does not exist exit 1 saying the store is not set up and what to do', async () => {
    const schema = uniqueSchemaName('cli oneshot');
    const cli = (args: string[]) =>
      runCli(args, {
        cwd: project.directory,
        env: { RESIL_TEST_SCHEMA: schema, NO_COLOR: '1' },
        timeoutMs: 20_000,
      });
    const advice = "\\(3F000\\)\\. The store's schema does not exist: create it \\(CREATE SCHEMA\\)";
    const history = await cli(['jobs', 'history', 'tick']);
    expect(history.code, history.stderr).toBe(1);
    expect(history.stderr).toMatch(
      new RegExp(`^error: lock store not set up: PostgreSQL lock store: .+${advice}`),
    );
    const run = await cli(['jobs', 'run', 'tick']);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(`^tick: not run: the lock store is not set up: PostgreSQL lock store: .+${advice}`),
    );
    const forced = await cli(['jobs', 'run', 'tick', '--force']);
    expect(forced.code, forced.stderr).toBe(1);
    expect(forced.stderr).toMatch(new RegExp(`^tick: not run: PostgreSQL lock store: .+${advice}`));
    const status = await cli(['lock', 'status', 'tick']);
    expect(status.code, status.stderr).toBe(1);
    expect(status.stderr).toMatch(
      new RegExp(`^error: lock store not set up: PostgreSQL lock store: .+${advice}`),
    );
  }, 60_000);

  it('a dropped table is created again: the job goes on running, nothing is skipped, /readyz stays 200', async () => {
    const schema = uniqueSchemaName('cli dropped');
    schemas.push(schema);
    await pool.query(`CREATE SCHEMA ${schema}`);
    const { run, base } = await start(schema);
    await run.waitForOutput(/job succeeded/, 15_000);
    await pool.query(`DROP TABLE ${schema}.resil_locks, ${schema}.resil_locks_occurrences`);
    const droppedAt = Date.now();
    await waitUntil(
      'three runs after the drop',
      () =>
        lines(run).filter(
          (line) => line.msg === 'job succeeded' && Date.parse(String(line.time)) > droppedAt + 500,
        ).length >= 3 || undefined,
      { timeoutMs: 15_000, intervalMs: 200 },
    );
    const skipped = lines(run).filter((line) => line.outcome === 'skipped');
    expect(skipped).toEqual([]);
    expect((await readyz(base)).status).toBe(200);
    const tables = await pool.query(
      'SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1',
      [schema],
    );
    expect(tables.rows[0].n).toBe(7);
  }, 60_000);

  it('a schema that does not exist: fires skipped as store-setup with what to do, /readyz 503, resil_store_up 0; creating the schema fixes it', async () => {
    const schema = uniqueSchemaName('cli missing');
    schemas.push(schema);
    const { run, base } = await start(schema);
    const line = JSON.parse(await run.waitForOutput(/"reason":"store-setup"/, 15_000)) as Record<
      string,
      unknown
    >;
    expect(line).toMatchObject({ level: 50, job: 'tick', outcome: 'skipped', reason: 'store-setup' });
    expect(line.msg).toMatch(
      /^fire skipped: the store is not set up: StoreSetupError: PostgreSQL lock store: .+ \(3F000\)\. The store's schema does not exist: create it \(CREATE SCHEMA\)/,
    );
    expect(lines(run).filter((each) => each.reason === 'store-unavailable')).toEqual([]);
    const notReady = (await waitUntil(
      '/readyz 503',
      async () => {
        const answer = await readyz(base);
        return answer.status === 503 ? answer : undefined;
      },
      { timeoutMs: 5_000, intervalMs: 100 },
    )) as { body: { checks: { store: { status: string; reason: string } } } };
    expect(notReady.body.checks.store).toMatchObject({
      status: 'fail',
      reason: expect.stringMatching(/3F000.*CREATE SCHEMA/),
    });
    expect(sampleValue((await scrape(base)).samples, 'resil_store_up')).toBe(0);
    expect(
      sampleValue((await scrape(base)).samples, 'resil_job_skips_total', {
        job_name: 'tick',
        reason: 'store-setup',
      }),
    ).toBeGreaterThan(0);

    await pool.query(`CREATE SCHEMA ${schema}`);
    await waitUntil('/readyz 200', async () => ((await readyz(base)).status === 200 ? true : undefined), {
      timeoutMs: 10_000,
      intervalMs: 200,
    });
    expect(sampleValue((await scrape(base)).samples, 'resil_store_up')).toBe(1);
    const created = Date.now();
    await waitUntil(
      'a run once the schema exists',
      () =>
        lines(run).some((each) => each.msg === 'job succeeded' && Date.parse(String(each.time)) > created) ||
        undefined,
      { timeoutMs: 10_000, intervalMs: 200 },
    );
  }, 60_000);
});
