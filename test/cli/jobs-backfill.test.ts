import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunLedger } from '../../src/ledger/contract.ts';
import { PostgresLockStore } from '../../src/stores/postgres/index.ts';
import { RedisLockStore } from '../../src/stores/redis/index.ts';
import { databaseUrlForTests, uniqueSchemaName } from '../support/postgres.ts';
import { redisUrlForTests } from '../support/redis.ts';
import { createProject, ensureCliBuilt, type Project, repoRoot, runCli, tsConfig } from './cli-support.ts';

// `resil jobs backfill` and `resil jobs run --reason/--force` through the real binary, on Redis and
// PostgreSQL: each occurrence once across concurrent backfills, a rerun that runs nothing, a dry
// run that changes nothing, and the runs recorded with how they started.

beforeAll(() => ensureCliBuilt());

const redisUrl = await redisUrlForTests();
const databaseUrl = await databaseUrlForTests();

const minute = 60_000;

/**
 * `tick` runs every minute and appends its occurrence to $RESIL_TEST_OUT; `slow` holds its lock for
 * $RESIL_TEST_HOLD_MS; `free` has no lock.
 */
const jobs = `[
  { name: 'tick', schedule: '* * * * *', lock: { key: 'tick', ttl: '10s' }, run: async (ctx) => {
    appendFileSync(process.env.RESIL_TEST_OUT, ctx.scheduledAt.toISOString() + '\\n');
  } },
  { name: 'slow', schedule: '0 3 * * *', lock: { key: 'slow', ttl: '10s' }, run: async (ctx) => {
    appendFileSync(process.env.RESIL_TEST_OUT, 'slow ' + process.pid + '\\n');
    await new Promise((resolve) => setTimeout(resolve, Number(process.env.RESIL_TEST_HOLD_MS ?? 0)));
  } },
  { name: 'free', schedule: '0 4 * * *', lock: false, run: async () => {} },
  { name: 'stuck', schedule: '* * * * *', timeout: '500ms', retry: false, run: () => new Promise(() => {}) },
]`;

interface Fixture {
  readonly name: string;
  readonly config: () => string;
  readonly ledger: () => RunLedger;
  readonly setUp: (project: Project) => Promise<void>;
  readonly tearDown: () => Promise<void>;
}

function redisFixture(url: string): Fixture {
  const prefix = `resil-cli-backfill-${randomBytes(4).toString('hex')}:`;
  let client: Redis;
  let store: RedisLockStore;
  return {
    name: 'Redis',
    config: () =>
      tsConfig(jobs, {
        imports: `import { appendFileSync } from 'node:fs';\nimport { Redis } from 'ioredis';\nimport { RedisLockStore } from 'resil/redis';\nconst client = new Redis(${JSON.stringify(url)}, { maxRetriesPerRequest: 1 });`,
        extra: `instance: 'cli-' + process.pid,\n  timezone: 'UTC',\n  store: new RedisLockStore(client, { prefix: ${JSON.stringify(prefix)} }),`,
      }),
    ledger: () => store,
    async setUp() {
      client = new Redis(url);
      store = new RedisLockStore(client, { prefix });
    },
    async tearDown() {
      const keys = (await client?.keys(`${prefix}*`)) ?? [];
      if (keys.length > 0) await client.del(...keys);
      await client?.quit();
    },
  };
}

function postgresFixture(url: string): Fixture {
  const schema = uniqueSchemaName('cli backfill');
  let pool: pg.Pool;
  let store: PostgresLockStore;
  return {
    name: 'PostgreSQL',
    config: () =>
      tsConfig(jobs, {
        imports: `import { appendFileSync } from 'node:fs';\nimport pg from 'pg';\nimport { PostgresLockStore } from 'resil/postgres';\nconst pool = new pg.Pool({ connectionString: ${JSON.stringify(url)} });`,
        extra: `instance: 'cli-' + process.pid,\n  timezone: 'UTC',\n  store: new PostgresLockStore(pool, { schema: ${JSON.stringify(schema)} }),`,
      }),
    ledger: () => store,
    async setUp(project) {
      symlinkSync(`${repoRoot}/node_modules/pg`, project.path('node_modules/pg'), 'dir');
      pool = new pg.Pool({ connectionString: url });
      await pool.query(`CREATE SCHEMA ${schema}`);
      store = new PostgresLockStore(pool, { schema });
    },
    async tearDown() {
      await pool?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool?.end();
    },
  };
}

const iso = (epochMs: number) => new Date(epochMs).toISOString();

describe('--help', () => {
  it('jobs backfill --help has its options, exit codes and examples; jobs run --help has --reason and --force', async () => {
    const help = await runCli(['jobs', 'backfill', '--help']);
    expect(help.code).toBe(0);
    for (const text of [
      '<name>',
      '--from <instant>',
      '--to <instant>',
      '--dry-run',
      '--json',
      '--reason <text>',
      '--max <n>',
      'Exit codes: 0',
      'already-done',
      '$ resil jobs backfill nightly-report --from 2026-12-01 --to 2026-12-04 --dry-run',
    ]) {
      expect(help.stdout).toContain(text);
    }
    expect(help.stdout).toMatch(/\(default:\s+100\)/);
    const run = await runCli(['jobs', 'run', '--help']);
    for (const text of ['--reason <text>', '--force', 'trigger "manual"', 'buffer-one and buffer-all wait']) {
      expect(run.stdout).toContain(text);
    }
    const group = await runCli(['jobs', '--help']);
    expect(group.stdout).toMatch(/\n {2}backfill \[options\] <name> /);
  });
});

describe.skipIf(!redisUrl)('a job that ignores its aborted signal', () => {
  const fixture = redisFixture(redisUrl!);
  let project: Project;
  beforeAll(async () => {
    project = createProject({ 'resil.config.ts': fixture.config() });
    await fixture.setUp(project);
  });
  afterAll(async () => {
    await fixture.tearDown();
    project?.remove();
  });

  it('is given up on 5 s after its timeout, as jobs run does: exit 1, saying so', async () => {
    const to = Math.floor(Date.now() / minute) * minute - minute;
    const result = await runCli(
      ['jobs', 'backfill', 'stuck', '--from', iso(to - 2 * minute), '--to', iso(to)],
      {
        cwd: project.directory,
        env: { RESIL_TEST_OUT: project.path('out.txt') },
        timeoutMs: 30_000,
      },
    );
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain('stuck: gave up: the job ignored its aborted signal for 5 s');
    expect(result.stdout).toContain(
      'stuck ignored its aborted signal (timed out after 500ms) for 5 s: giving up on it',
    );
    expect(result.durationMs).toBeLessThan(20_000);
  });
});

const fixtures = [
  ...(redisUrl ? [redisFixture(redisUrl)] : []),
  ...(databaseUrl ? [postgresFixture(databaseUrl)] : []),
];

describe.each(fixtures)('on $name', (fixture) => {
  let project: Project;
  /** Whole minutes: the range of five past occurrences every case uses. */
  let from: number;
  let to: number;
  const out = () => project.path('out.txt');
  const lines = () => (existsSync(out()) ? readFileSync(out(), 'utf8').trimEnd().split('\n') : []);
  const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    runCli(args, { cwd: project.directory, env: { RESIL_TEST_OUT: out(), ...env }, timeoutMs: 30_000 });

  beforeAll(async () => {
    project = createProject({ 'resil.config.ts': fixture.config() });
    await fixture.setUp(project);
    to = Math.floor(Date.now() / minute) * minute - 2 * minute;
    from = to - 5 * minute;
  });
  afterAll(async () => {
    await fixture.tearDown();
    project?.remove();
  });

  it('refuses bad input with exit 2, running nothing', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--from', 'yesterday', '--to', iso(to)], /--from <instant>' argument 'yesterday' is invalid/],
      [['--from', iso(to), '--to', iso(from)], /must be before --to/],
      [['--from', iso(from), '--to', iso(Date.now() + 5 * minute)], /is in the future/],
      [['--from', iso(from), '--to', iso(to), '--max', '4'], /holds more than --max 4 occurrences of tick/],
      [
        ['--from', iso(Date.now() - 8 * 86_400_000), '--to', iso(to)],
        /older than the run ledger keeps records/,
      ],
      [['--from', iso(from), '--to', iso(to), '--reason', ' '], /--reason <text>' argument ' ' is invalid/],
    ];
    for (const [args, error] of cases) {
      const result = await cli(['jobs', 'backfill', 'tick', ...args]);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(error);
    }
    const unlocked = await cli(['jobs', 'backfill', 'free', '--from', iso(from), '--to', iso(to)]);
    expect(unlocked.code).toBe(2);
    expect(unlocked.stderr).toContain('free has lock: false');
    expect(lines()).toEqual([]);
  });

  it('a dry run lists each occurrence and what would happen, and changes nothing', async () => {
    // The oldest occurrence was skipped as missed (a fleet was down): a backfill runs it.
    const missed = await fixture.ledger().claimOccurrence({
      job: 'tick',
      key: 'tick',
      scheduledAt: from,
      owner: `x/${randomUUID()}`,
      instance: 'down',
      ttlMs: 10_000,
      overlap: 'skip',
      startingDeadlineMs: 1_000,
    });
    expect(missed).toEqual({ status: 'skipped', reason: 'missed' });
    const dry = await cli([
      'jobs',
      'backfill',
      'tick',
      '--from',
      iso(from),
      '--to',
      iso(to),
      '--dry-run',
      '--json',
    ]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toEqual(
      [0, 1, 2, 3, 4].map((n) => ({ scheduledAt: iso(from + n * minute), action: 'run' })),
    );
    const table = await cli(['jobs', 'backfill', 'tick', '--from', iso(from), '--to', iso(to), '--dry-run']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^OCCURRENCE \(UTC\)\s+UTC\s+ACTION$/);
    expect(table.stderr).toContain('dry run: 5 of 5 would run; nothing was changed');
    expect(lines()).toEqual([]);
    const history = await fixture.ledger().runHistory('tick', { key: 'tick', limit: 100 });
    expect(history.map((record) => record.outcome)).toEqual(['skipped']);
  });

  it('two backfills of one range at once run each occurrence once; a rerun runs nothing', async () => {
    const args = [
      'jobs',
      'backfill',
      'tick',
      '--from',
      iso(from),
      '--to',
      iso(to),
      '--reason',
      'outage of the night',
    ];
    const [first, second] = await Promise.all([cli(args), cli([...args, '--json'])]);
    expect(first.code, first.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(0);
    const expected = [0, 1, 2, 3, 4].map((n) => iso(from + n * minute));
    expect(lines().sort()).toEqual(expected);
    // Between them, every occurrence ran once and was already done once.
    const outcomes = (
      JSON.parse(second.stdout) as Array<{ scheduledAt: string; outcome: string; reason: string | null }>
    ).map((entry) => entry.outcome === 'success' || entry.reason === 'already-done');
    expect(outcomes).toEqual([true, true, true, true, true]);
    expect(first.stderr).toMatch(/tick: backfill of \[.*\): \d ran, \d already done\n$/);

    const history = await cli(['jobs', 'history', 'tick', '--json']);
    const entries = JSON.parse(history.stdout) as Array<Record<string, unknown>>;
    expect(entries).toHaveLength(5);
    for (const entry of entries) {
      expect(entry).toMatchObject({
        outcome: 'success',
        trigger: 'backfill',
        actor: expect.stringMatching(/^\S+@\S+$/),
        reason: 'outage of the night',
      });
    }

    const rerun = await cli(args);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toContain('0 ran, 5 already done');
    expect(lines()).toHaveLength(5);
    const dry = await cli([
      'jobs',
      'backfill',
      'tick',
      '--from',
      iso(from),
      '--to',
      iso(to),
      '--dry-run',
      '--json',
    ]);
    expect((JSON.parse(dry.stdout) as Array<{ action: string }>).map((entry) => entry.action)).toEqual(
      Array(5).fill('already-done'),
    );
  });

  it('jobs run records who ran it and why; --force runs beside a running occurrence, without it exit 3', async () => {
    const hold = { RESIL_TEST_HOLD_MS: '4000' };
    const holding = cli(['jobs', 'run', 'slow', '--reason', 'first'], hold);
    // Until the first run has its lease.
    for (let waited = 0; !lines().some((line) => line.startsWith('slow')) && waited < 15_000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const refused = await cli(['jobs', 'run', 'slow']);
    expect(refused.code, refused.stderr).toBe(3);
    expect(refused.stderr).toContain('slow: skipped: its lock is held elsewhere');
    const forced = await cli(['jobs', 'run', 'slow', '--force', '--reason', 'hotfix']);
    expect(forced.code, forced.stderr).toBe(0);
    expect((await holding).code).toBe(0);
    expect(lines().filter((line) => line.startsWith('slow'))).toHaveLength(2);
    const history = await cli(['jobs', 'history', 'slow', '--json']);
    const entries = JSON.parse(history.stdout) as Array<Record<string, unknown>>;
    // The refused run left no record.
    expect(entries.map((entry) => entry.reason)).toEqual(['hotfix', 'first']);
    for (const entry of entries) {
      expect(entry).toMatchObject({
        outcome: 'success',
        trigger: 'manual',
        actor: expect.stringContaining('@'),
      });
    }
    const table = await cli(['jobs', 'history', 'slow']);
    expect(table.stdout).toMatch(/manual by \S+@\S+: "hotfix"/);
  });
});
