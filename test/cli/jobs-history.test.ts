import { randomBytes, randomUUID } from 'node:crypto';
import { symlinkSync } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimeIn } from '../../src/cli/time-format.ts';
import type { ClaimRequest, OccurrenceLease } from '../../src/ledger/contract.ts';
import { RedisLockStore } from '../../src/stores/redis/index.ts';
import { databaseUrlForTests, uniqueSchemaName } from '../support/postgres.ts';
import { freePort } from '../support/processes.ts';
import { redisUrlForTests } from '../support/redis.ts';
import { createProject, ensureCliBuilt, type Project, repoRoot, runCli, tsConfig } from './cli-support.ts';

beforeAll(() => ensureCliBuilt());

const redisUrl = await redisUrlForTests();
const databaseUrl = await databaseUrlForTests();

const inMemoryNote =
  "note: the config's store is the in-memory MemoryLockStore: it holds this process's leases and runs only; use RedisLockStore, PostgresLockStore or MysqlLockStore to see the fleet's\n";

/** What a failing job throws: long, and with a connection URL whose password must not be shown. */
const failure =
  'cannot reach postgres://report:hunter2@db.internal:5432/reports after 3 attempts, the replica is still catching up';

const jobs = `[
  { name: 'report', schedule: '0 2 * * *', timezone: 'Europe/Berlin', lock: { key: 'report-lock', ttl: '30s' }, run: async () => {} },
  { name: 'unlocked', schedule: '0 * * * *', lock: false, run: async () => {} },
  { name: 'broken', schedule: '0 4 * * *', retry: false, run: async () => { throw new Error(${JSON.stringify(failure)}); } },
]`;

/** A config on Redis at `url`, its client created at import time, as users do. */
function redisConfig(url: string, prefix: string): string {
  return tsConfig(jobs, {
    imports: `import { Redis } from 'ioredis';\nimport { RedisLockStore } from 'resil/redis';\nconst client = new Redis(${JSON.stringify(url)}, { maxRetriesPerRequest: 1 });\nclient.on('error', () => {});`,
    extra: `instance: 'cli-1',\n  timezone: 'UTC',\n  store: new RedisLockStore(client, { prefix: ${JSON.stringify(prefix)}, commandTimeout: '1s' }),`,
  });
}

interface Entry {
  scheduledAt: string;
  outcome: string;
  reason: string | null;
  instance: string | null;
  token: number | null;
  startedAt: string | null;
  endedAt: string | null;
  durationMs: number | null;
  takeovers: number;
  error: string | null;
  trigger: string;
  actor: string | null;
}

const iso = (epochMs: number) => new Date(epochMs).toISOString();

describe('--help', () => {
  it('jobs history --help has its options, exit codes and examples; jobs --help lists it', async () => {
    const help = await runCli(['jobs', 'history', '--help']);
    expect(help.code).toBe(0);
    for (const text of [
      '<name>',
      '--limit <n>',
      '(default: 20)',
      '--json',
      'Exit codes: 0',
      '1 store unreachable',
      'bad --limit',
      'Examples:',
      '$ resil jobs history nightly-report',
    ]) {
      expect(help.stdout).toContain(text);
    }
    const group = await runCli(['jobs', '--help']);
    expect(group.stdout).toMatch(/\n {2}history \[options\] <name> /);
    expect(group.stdout).toContain('$ resil jobs history nightly-report\n');
  });
});

describe.skipIf(!redisUrl)('with a Redis store', () => {
  const prefix = `resil-cli-history-${randomBytes(4).toString('hex')}:`;
  let project: Project;
  let client: Redis;
  let store: RedisLockStore;
  /** The occurrences written straight into the ledger, oldest first. */
  let takenOver: number;
  let failed: number;
  let running: number;
  let skipped: number;
  let runningLease: OccurrenceLease;
  /** When `resil jobs run report`, the newest record, ran. */
  let manual: { startedAt: number; finishedAt: number };

  const claim = (scheduledAt: number, instance: string, ttlMs = 30_000) => {
    const request: ClaimRequest = {
      job: 'report',
      key: 'report-lock',
      scheduledAt,
      owner: `${instance}/${randomUUID()}`,
      instance,
      ttlMs,
      overlap: 'skip',
      startingDeadlineMs: 86_400_000,
    };
    return store.claimOccurrence(request);
  };
  const granted = async (scheduledAt: number, instance: string, ttlMs?: number) => {
    const result = await claim(scheduledAt, instance, ttlMs);
    if (result.status !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(result)}`);
    return result;
  };

  beforeAll(async () => {
    project = createProject({ 'resil.config.ts': redisConfig(redisUrl!, prefix) });
    client = new Redis(redisUrl!);
    store = new RedisLockStore(client, { prefix });

    const now = Math.floor(Date.now() / 1_000) * 1_000;
    [takenOver, failed, running, skipped] = [5, 4, 3, 2].map((hours) => now - hours * 3_600_000) as [
      number,
      number,
      number,
      number,
    ];
    // The newest record, by the real binary (before the running occurrence below holds the lease).
    const startedAt = Date.now();
    const run = await runCli(['jobs', 'run', 'report'], { cwd: project.directory });
    expect(run.code, run.stderr).toBe(0);
    manual = { startedAt, finishedAt: Date.now() };
    // web-1 claims it and stops renewing; web-2 takes it over once the lease has expired.
    await granted(takenOver, 'web-1', 200);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const takeover = await granted(takenOver, 'web-2');
    expect(takeover.takeover).toBe(true);
    await store.finishOccurrence(takeover.lease, { outcome: 'success' });
    const failing = await granted(failed, 'web-2');
    await store.finishOccurrence(failing.lease, { outcome: 'failure', error: 'Error: disk full' });
    runningLease = (await granted(running, 'web-3', 60_000)).lease;
    // The running occurrence holds the lease: the next one is skipped.
    expect(await claim(skipped, 'web-1')).toEqual({ status: 'skipped', reason: 'overlap' });
  });
  afterAll(async () => {
    await store?.finishOccurrence(runningLease, { outcome: 'success' }).catch(() => {});
    const keys = (await client?.keys(`${prefix}*`)) ?? [];
    if (keys.length > 0) await client.del(...keys);
    project?.remove();
    await client?.quit();
  });

  it('--json: every occurrence newest first, instants in ISO 8601 UTC, fields null when unknown', async () => {
    const result = await runCli(['jobs', 'history', 'report', '--json'], {
      cwd: project.directory,
      timeoutMs: 15_000,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    // One-shot: it exits at once although the config opened a Redis connection.
    expect(result.durationMs).toBeLessThan(10_000);
    const entries = JSON.parse(result.stdout) as Entry[];
    expect(entries.map((entry) => entry.outcome)).toEqual([
      'success',
      'skipped',
      'running',
      'failure',
      'success',
    ]);
    const [latest, skip, run, failure, takeover] = entries as [Entry, Entry, Entry, Entry, Entry];

    expect(latest).toMatchObject({
      outcome: 'success',
      reason: null,
      instance: 'cli-1',
      error: null,
      trigger: 'manual',
      actor: expect.stringMatching(/^\S+@\S+$/),
    });
    expect(latest.token).toBeTypeOf('number');
    expect(Date.parse(latest.scheduledAt)).toBeGreaterThanOrEqual(manual.startedAt - 1_000);
    expect(Date.parse(latest.scheduledAt)).toBeLessThanOrEqual(manual.finishedAt + 1_000);
    expect(latest.durationMs).toBe(Date.parse(latest.endedAt!) - Date.parse(latest.startedAt!));
    expect(latest.durationMs).toBeGreaterThanOrEqual(0);

    expect(skip).toEqual({
      scheduledAt: iso(skipped),
      outcome: 'skipped',
      reason: 'overlap',
      instance: 'web-1',
      token: null,
      startedAt: null,
      endedAt: expect.any(String),
      durationMs: null,
      takeovers: 0,
      error: null,
      trigger: 'schedule',
      actor: null,
    });
    expect(run).toMatchObject({
      scheduledAt: iso(running),
      outcome: 'running',
      instance: 'web-3',
      token: runningLease.token,
      endedAt: null,
      durationMs: null,
    });
    expect(run.startedAt).toBe(new Date(run.startedAt!).toISOString());
    expect(failure).toMatchObject({
      scheduledAt: iso(failed),
      outcome: 'failure',
      instance: 'web-2',
      error: 'Error: disk full',
    });
    expect(failure.durationMs).toBeTypeOf('number');
    expect(takeover).toMatchObject({
      scheduledAt: iso(takenOver),
      outcome: 'success',
      instance: 'web-2',
      takeovers: 1,
    });
  });

  it('--limit N shows the newest N', async () => {
    const result = await runCli(['jobs', 'history', 'report', '--limit', '2', '--json'], {
      cwd: project.directory,
    });
    expect(result.code, result.stderr).toBe(0);
    const entries = JSON.parse(result.stdout) as Entry[];
    expect(entries.map((entry) => entry.outcome)).toEqual(['success', 'skipped']);
  });

  it("prints a table with each occurrence in the job's timezone, not this machine's", async () => {
    const result = await runCli(['jobs', 'history', 'report'], {
      cwd: project.directory,
      env: { TZ: 'America/New_York' },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(6);
    expect(lines[0]).toMatch(
      /^OCCURRENCE \(Europe\/Berlin\)\s+OUTCOME\s+INSTANCE\s+TOKEN\s+STARTED\s+DURATION\s+TAKEOVERS\s+TRIGGER\s+ERROR$/,
    );
    const at = (epochMs: number) =>
      formatTimeIn(new Date(epochMs), 'Europe/Berlin').replace(/[+.]/g, (character) => `\\${character}`);
    const stamp = String.raw`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d GMT\+[12]`;
    expect(lines[1]).toMatch(
      new RegExp(`^${stamp}\\s+success\\s+cli-1\\s+\\d+\\s+${stamp}\\s+\\d+ms\\s+manual by \\S+@\\S+$`),
    );
    expect(lines[2]).toMatch(
      new RegExp(`^${at(skipped)}\\s+skipped \\(overlap\\)\\s+web-1\\s+-\\s+-\\s+-\\s+schedule$`),
    );
    expect(lines[3]).toMatch(
      new RegExp(
        `^${at(running)}\\s+running\\s+web-3\\s+${runningLease.token}\\s+${stamp}\\s+-\\s+schedule$`,
      ),
    );
    expect(lines[4]).toMatch(
      new RegExp(
        `^${at(failed)}\\s+failure\\s+web-2\\s+\\d+\\s+${stamp}\\s+\\d+ms\\s+schedule\\s+Error: disk full$`,
      ),
    );
    expect(lines[5]).toMatch(
      new RegExp(`^${at(takenOver)}\\s+success\\s+web-2\\s+\\d+\\s+${stamp}\\s+\\d+ms\\s+1\\s+schedule$`),
    );
    // The columns line up under the header.
    const offset = lines[0]!.indexOf('OUTCOME');
    for (const line of lines.slice(1))
      expect(line.slice(offset)).toMatch(/^(success|skipped|running|failure)/);
  });

  it('says why a lock: false job has no history', async () => {
    const run = await runCli(['jobs', 'run', 'unlocked'], { cwd: project.directory });
    expect(run.code, run.stderr).toBe(0);
    const text = await runCli(['jobs', 'history', 'unlocked'], { cwd: project.directory });
    expect(text).toMatchObject({
      code: 0,
      stdout: "No runs of unlocked in the run ledger: a lock: false job's runs are not recorded in it.\n",
      stderr: '',
    });
    const json = await runCli(['jobs', 'history', 'unlocked', '--json'], { cwd: project.directory });
    expect(json).toMatchObject({ code: 0, stdout: '[]\n' });
  });

  it('shows a failure with its error, redacted by the ledger and cut short in the table', async () => {
    const run = await runCli(['jobs', 'run', 'broken'], { cwd: project.directory });
    expect(run.code).toBe(1);
    const json = await runCli(['jobs', 'history', 'broken', '--json'], { cwd: project.directory });
    expect(json.code, json.stderr).toBe(0);
    const [entry] = JSON.parse(json.stdout) as [Entry];
    expect(entry).toMatchObject({
      outcome: 'failure',
      error: `Error: ${failure.replace('hunter2', '[redacted]')}`,
    });
    const table = await runCli(['jobs', 'history', 'broken'], { cwd: project.directory });
    expect(table.code).toBe(0);
    const row = table.stdout.trimEnd().split('\n')[1]!;
    expect(row).toContain('  Error: cannot reach postgres://report:[redacted]@db.internal:5432/reports');
    expect(row).toMatch(/…$/);
    expect(row).not.toContain('catching up');
    expect(json.stdout + table.stdout).not.toContain('hunter2');
  });

  it('prints "No runs" for a job the ledger has nothing of', async () => {
    const fresh = createProject({ 'resil.config.ts': redisConfig(redisUrl!, `${prefix}fresh:`) });
    try {
      const text = await runCli(['jobs', 'history', 'report'], { cwd: fresh.directory });
      expect(text).toMatchObject({ code: 0, stdout: 'No runs of report in the run ledger.\n', stderr: '' });
      const json = await runCli(['jobs', 'history', 'report', '--json'], { cwd: fresh.directory });
      expect(json).toMatchObject({ code: 0, stdout: '[]\n' });
    } finally {
      fresh.remove();
    }
  });

  it('exits 2 for an unknown job, with the suggestion the other commands make', async () => {
    const result = await runCli(['jobs', 'history', 'reprot'], { cwd: project.directory });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `error: unknown job "reprot"; jobs in this config: report, unlocked, broken (did you mean "report"?)\n  config: ${project.path('resil.config.ts')}\n`,
    );
  });

  it.each(['0', '1001', '-1', '2.5', 'ten', '1e3', ''])('exits 2 for --limit %j', async (limit) => {
    const result = await runCli(['jobs', 'history', 'report', '--limit', limit], { cwd: project.directory });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `error: option '--limit <n>' argument '${limit}' is invalid. Expected a whole number from 1 to 1000.\n(see resil jobs history --help)\n`,
    );
  });

  it('accepts --limit 1000', async () => {
    const result = await runCli(['jobs', 'history', 'report', '--limit', '1000', '--json'], {
      cwd: project.directory,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toHaveLength(5);
  });
});

describe.skipIf(!databaseUrl)('with a PostgreSQL store', () => {
  const schema = uniqueSchemaName('cli history');
  let project: Project;
  let pool: pg.Pool;

  beforeAll(async () => {
    project = createProject({
      'resil.config.ts': tsConfig(jobs, {
        imports: `import pg from 'pg';\nimport { PostgresLockStore } from 'resil/postgres';\nconst pool = new pg.Pool({ connectionString: ${JSON.stringify(databaseUrl)} });`,
        extra: `instance: 'pg-1',\n  store: new PostgresLockStore(pool, { schema: ${JSON.stringify(schema)} }),`,
      }),
    });
    symlinkSync(`${repoRoot}/node_modules/pg`, project.path('node_modules/pg'), 'dir');
    pool = new pg.Pool({ connectionString: databaseUrl });
    await pool.query(`CREATE SCHEMA ${schema}`);
  });
  afterAll(async () => {
    await pool?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool?.end();
    project?.remove();
  });

  it('shows the runs resil jobs run recorded', async () => {
    expect((await runCli(['jobs', 'run', 'report'], { cwd: project.directory })).code).toBe(0);
    expect((await runCli(['jobs', 'run', 'broken'], { cwd: project.directory })).code).toBe(1);
    for (const [name, outcome] of [
      ['report', 'success'],
      ['broken', 'failure'],
    ] as const) {
      const result = await runCli(['jobs', 'history', name, '--json'], { cwd: project.directory });
      expect(result.code, result.stderr).toBe(0);
      const [entry, ...rest] = JSON.parse(result.stdout) as Entry[];
      expect(rest).toEqual([]);
      expect(entry).toMatchObject({ outcome, instance: 'pg-1', reason: null, takeovers: 0 });
      expect(entry!.durationMs).toBeTypeOf('number');
      expect(entry!.token).toBeTypeOf('number');
    }
  });
});

describe('stores that cannot show the fleet', () => {
  it('the in-memory default store: an empty history and the note jobs list prints, exit 0', async () => {
    const project = createProject({
      'resil.config.ts': tsConfig("[{ name: 'a', schedule: '0 1 * * *', run: () => {} }]"),
    });
    try {
      const text = await runCli(['jobs', 'history', 'a'], { cwd: project.directory });
      expect(text).toEqual(
        expect.objectContaining({
          code: 0,
          stdout: 'No runs of a in the run ledger.\n',
          stderr: inMemoryNote,
        }),
      );
      const list = await runCli(['jobs', 'list'], { cwd: project.directory });
      expect(list.stderr).toBe(text.stderr);
      const json = await runCli(['jobs', 'history', 'a', '--json'], { cwd: project.directory });
      expect(json).toEqual(expect.objectContaining({ code: 0, stdout: '[]\n', stderr: '' }));
    } finally {
      project.remove();
    }
  });

  it('a store without a run ledger: a note, exit 0', async () => {
    const project = createProject({
      'resil.config.ts': tsConfig("[{ name: 'a', schedule: '0 1 * * *', run: () => {} }]", {
        extra:
          'store: { acquire: async () => 1, renew: async () => true, release: async () => {}, close: async () => {} },',
      }),
    });
    try {
      const text = await runCli(['jobs', 'history', 'a'], { cwd: project.directory });
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toBe('');
      expect(text.stderr).toBe(
        "note: the config's store keeps no run ledger (it is a LockStore without runHistory()): there is no history to show; RedisLockStore and PostgresLockStore keep one\n",
      );
      const json = await runCli(['jobs', 'history', 'a', '--json'], { cwd: project.directory });
      expect(json).toEqual(expect.objectContaining({ code: 0, stdout: '[]\n', stderr: '' }));
    } finally {
      project.remove();
    }
  });

  it('an unreachable store: exit 1 within the bound, one line with the cause and no credentials', async () => {
    const port = await freePort();
    const project = createProject({
      'resil.config.ts': redisConfig(`redis://admin:hunter2@127.0.0.1:${port}`, 'x:'),
    });
    try {
      const result = await runCli(['jobs', 'history', 'report'], {
        cwd: project.directory,
        timeoutMs: 20_000,
      });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(
        new RegExp(
          `^error: lock store unreachable: .+ \\(cause: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\)\n$`,
        ),
      );
      expect(result.stderr).not.toContain('hunter2');
      expect(result.durationMs).toBeLessThan(15_000);
      // The job is checked before the store is asked.
      const unknown = await runCli(['jobs', 'history', 'nope', '--json'], { cwd: project.directory });
      expect(unknown.code).toBe(2);
    } finally {
      project.remove();
    }
  });
});
