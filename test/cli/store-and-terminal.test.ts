import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, readdirSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLockStore } from '../../src/stores/redis/index.ts';
import { commandExists, freePort } from '../support/processes.ts';
import { redisUrlForTests } from '../support/redis.ts';
import {
  ansiPattern,
  asNobodyWhenPossible,
  binary,
  createProject,
  ensureCliBuilt,
  type Project,
  runCli,
  tsConfig,
} from './cli-support.ts';

beforeAll(() => ensureCliBuilt());

const redisUrl = await redisUrlForTests();

/** A config on Redis at `url`, its client created eagerly at import time like many users do. */
function redisConfig(url: string, prefix: string, jobs: string): string {
  return tsConfig(jobs, {
    imports: `import { Redis } from 'ioredis';\nimport { RedisLockStore } from 'resil/redis';\nconst client = new Redis(${JSON.stringify(url)}, { maxRetriesPerRequest: 1 });\nclient.on('error', () => {});`,
    extra: `store: new RedisLockStore(client, { prefix: ${JSON.stringify(prefix)}, commandTimeout: '1s' }),`,
  });
}

describe.skipIf(!redisUrl)('with a Redis store', () => {
  const prefix = `resil-cli-test-${randomBytes(4).toString('hex')}:`;
  let project: Project;
  let client: Redis;
  let store: RedisLockStore;

  beforeAll(() => {
    project = createProject({
      'resil.config.ts': redisConfig(
        redisUrl!,
        prefix,
        "[{ name: 'report', schedule: '0 2 * * *', lock: { key: 'report-lock' }, run: async (ctx) => { ctx.logger.info('report ran'); } }]",
      ),
    });
    client = new Redis(redisUrl!);
    store = new RedisLockStore(client, { prefix });
  });
  afterAll(async () => {
    project?.remove();
    await client?.quit();
  });

  it('lock status shows the holder while someone holds the lease, and jobs run exits 3', async () => {
    const token = await store.acquire('report-lock', 'other-instance:42', 30_000);
    expect(token).toBeTypeOf('number');
    try {
      const json = await runCli(['lock', 'status', 'report-lock', '--json'], { cwd: project.directory });
      expect(json.code, json.stderr).toBe(0);
      const status = JSON.parse(json.stdout) as Record<string, unknown>;
      expect(status).toMatchObject({ key: 'report-lock', held: true, owner: 'other-instance:42', token });
      const expiresIn = new Date(status.expiresAt as string).getTime() - Date.now();
      expect(expiresIn).toBeGreaterThan(15_000);
      expect(expiresIn).toBeLessThanOrEqual(31_000);

      const text = await runCli(['lock', 'status', 'report-lock'], {
        cwd: project.directory,
        env: { TZ: 'UTC' },
      });
      expect(text.code).toBe(0);
      // The expiry in this machine's zone, labelled with it.
      expect(text.stdout).toMatch(
        /^Lock report-lock: held\n {2}owner {7}other-instance:42\n {2}token {7}\d+\n {2}expires at {2}\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(in \d+s, store clock\)\n$/,
      );

      const run = await runCli(['jobs', 'run', 'report'], { cwd: project.directory });
      expect(run.code, run.stderr).toBe(3);
      // It names the holder: the instance part of its owner id, and its token.
      expect(run.stderr).toBe(
        `report: skipped: its lock is held elsewhere, by other-instance:42 (token ${token})\n`,
      );
      expect(run.stdout).not.toContain('report ran');
    } finally {
      await store.release('report-lock', 'other-instance:42');
    }
  });

  it('once the lease is released: free, the job runs, and jobs list shows its last run', async () => {
    const status = await runCli(['lock', 'status', 'report-lock', '--json'], { cwd: project.directory });
    expect(JSON.parse(status.stdout)).toEqual({ key: 'report-lock', held: false });
    const run = await runCli(['jobs', 'run', 'report'], { cwd: project.directory });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('report ran');

    const list = await runCli(['jobs', 'list', '--json'], { cwd: project.directory });
    expect(list.code, list.stderr).toBe(0);
    const [entry] = JSON.parse(list.stdout) as Array<{ lastRun: Record<string, unknown> }>;
    expect(entry!.lastRun).toMatchObject({ outcome: 'success' });
    expect(entry!.lastRun.token).toBeTypeOf('number');
    const table = await runCli(['jobs', 'list'], { cwd: project.directory });
    expect(table.stdout).toMatch(/report-lock\s+success \d+s ago\n$/);
  });

  it('lock status names the instance whose run holds the lease', async () => {
    const slow = createProject({
      'resil.config.ts': redisConfig(
        redisUrl!,
        prefix,
        "[{ name: 'slow', schedule: '0 2 * * *', run: (ctx) => new Promise((resolve) => setTimeout(resolve, 4_000)) }]",
      ).replace('jobs:', "instance: 'web-1',\n  jobs:"),
    });
    try {
      const running = runCli(['jobs', 'run', 'slow'], { cwd: slow.directory });
      let status: Record<string, unknown> = {};
      for (let tries = 0; tries < 60 && status.held !== true; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const json = await runCli(['lock', 'status', 'slow', '--json'], { cwd: slow.directory });
        status = JSON.parse(json.stdout) as Record<string, unknown>;
      }
      expect(status).toMatchObject({
        held: true,
        instance: 'web-1',
        owner: expect.stringMatching(/^web-1\//),
      });
      const text = await runCli(['lock', 'status', 'slow'], { cwd: slow.directory });
      expect(text.stdout).toMatch(/\n {2}owner {7}web-1\/[0-9a-f-]+\n {2}instance {4}web-1\n/);
      expect((await running).code).toBe(0);
    } finally {
      slow.remove();
    }
  });

  it('one-shot commands exit at once although the config opened a Redis connection', async () => {
    const result = await runCli(['jobs', 'list'], { cwd: project.directory, timeoutMs: 15_000 });
    expect(result.code).toBe(0);
    expect(result.durationMs).toBeLessThan(10_000);
  });
});

describe('an unreachable store', () => {
  it('lock status exits 1 within its bound, without the credentials', async () => {
    const port = await freePort();
    const project = createProject({
      'resil.config.ts': redisConfig(
        `redis://admin:hunter2@127.0.0.1:${port}`,
        'x:',
        "[{ name: 'a', schedule: '* * * * *', run: () => {} }]",
      ),
    });
    try {
      const result = await runCli(['lock', 'status', 'a'], { cwd: project.directory, timeoutMs: 20_000 });
      expect(result.code, result.stderr).toBe(1);
      // With the reason the connection is down, from the client's own error events.
      expect(result.stderr).toMatch(
        new RegExp(
          `^error: lock store unreachable: .+ \\(cause: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\)\n$`,
        ),
      );
      expect(result.stderr).not.toContain('hunter2');
      expect(result.durationMs).toBeLessThan(15_000);

      // Exit 1 as every command with an unreachable store; "skipped" (exit 3) is for a held lock or a pause.
      const run = await runCli(['jobs', 'run', 'a'], { cwd: project.directory, timeoutMs: 20_000 });
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toMatch(
        new RegExp(
          `^a: not run: the lock store is unreachable: .+ \\(cause: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\)\n$`,
        ),
      );
      expect(run.stderr + run.stdout).not.toContain('hunter2');
    } finally {
      project.remove();
    }
  });
});

describe('one-shot commands and open handles', () => {
  it('exit although the config keeps a timer and a server open', async () => {
    const project = createProject({
      'resil.config.ts': tsConfig("[{ name: 'a', schedule: '* * * * *', run: () => {} }]", {
        imports:
          "import { createServer } from 'node:net';\nsetInterval(() => {}, 1_000);\ncreateServer().listen(0, '127.0.0.1');",
      }),
    });
    try {
      for (const args of [
        ['jobs', 'list'],
        ['jobs', 'run', 'a'],
        ['lock', 'status', 'a'],
      ]) {
        const result = await runCli(args, { cwd: project.directory, timeoutMs: 15_000 });
        expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
      }
    } finally {
      project.remove();
    }
  });
});

describe('terminal output', () => {
  let project: Project;
  beforeAll(() => {
    project = createProject({
      'resil.config.ts': tsConfig("[{ name: 'a', schedule: '* * * * *', run: () => {} }]"),
    });
  });
  afterAll(() => project?.remove());

  /** `resil jobs list` with a pseudo-terminal (from `script`) as stdout. */
  const onTerminal = (env: NodeJS.ProcessEnv = {}) =>
    new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const command = `${process.execPath} ${binary} jobs list`;
      const childEnv: NodeJS.ProcessEnv = {
        ...process.env,
        NO_COLOR: undefined,
        FORCE_COLOR: undefined,
        ...env,
      };
      for (const key of Object.keys(childEnv)) if (childEnv[key] === undefined) delete childEnv[key];
      execFile(
        'script',
        ['-qec', command, '/dev/null'],
        { cwd: project.directory, env: childEnv, timeout: 30_000 },
        (error, stdout) =>
          resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout }),
      );
    });

  it.skipIf(!commandExists('script'))('colours the table on a terminal, and not under NO_COLOR', async () => {
    const coloured = await onTerminal();
    expect(coloured.code, coloured.stdout).toBe(0);
    expect(coloured.stdout).toMatch(ansiPattern);
    const plain = await onTerminal({ NO_COLOR: '1' });
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain('NAME');
    expect(plain.stdout).not.toMatch(ansiPattern);
  });

  it.skipIf(!commandExists('script') || !commandExists('timeout'))(
    'resil run logs pretty lines on a terminal, coloured unless NO_COLOR or FORCE_COLOR=0',
    async () => {
      // `resil run` on a pseudo-terminal, stopped with SIGINT after 2 s: enough for the start lines.
      const stopAfter = (env: NodeJS.ProcessEnv) =>
        new Promise<string>((resolve) => {
          const childEnv: NodeJS.ProcessEnv = {
            ...process.env,
            NO_COLOR: undefined,
            FORCE_COLOR: undefined,
            ...env,
          };
          for (const key of Object.keys(childEnv)) if (childEnv[key] === undefined) delete childEnv[key];
          execFile(
            'script',
            ['-qec', `timeout -s INT 2 ${process.execPath} ${binary} run`, '/dev/null'],
            { cwd: project.directory, env: childEnv, timeout: 30_000 },
            (_error, stdout) => resolve(stdout),
          );
        });
      const coloured = await stopAfter({});
      expect(coloured).toContain('runner started');
      expect(coloured).toMatch(ansiPattern);
      for (const env of [{ NO_COLOR: '1' }, { FORCE_COLOR: '0' }]) {
        const plain = await stopAfter(env);
        expect(plain, JSON.stringify(env)).toContain('runner started');
        expect(plain, JSON.stringify(env)).not.toMatch(ansiPattern);
      }
    },
  );

  it('FORCE_COLOR colours a pipe; NO_COLOR wins over it', async () => {
    expect(
      (await runCli(['jobs', 'list'], { cwd: project.directory, env: { FORCE_COLOR: '1' } })).stdout,
    ).toMatch(ansiPattern);
    const both = await runCli(['jobs', 'list'], {
      cwd: project.directory,
      env: { FORCE_COLOR: '1', NO_COLOR: '1' },
    });
    expect(both.stdout).not.toMatch(ansiPattern);
  });
});

describe('a read-only config directory', () => {
  it('loads a TypeScript config without writing anything beside it', async () => {
    const project = createProject({
      'resil.config.ts': tsConfig('[job]', { imports: "import job from './jobs/job.ts';" }),
      'jobs/job.ts':
        "import { defineJob } from 'resil';\nexport default defineJob({ name: 'ro', schedule: '0 1 * * *', run: () => {} });\n",
    });
    const before = readdirSync(project.directory, { recursive: true }).sort();
    for (const path of ['jobs/job.ts', 'resil.config.ts', 'package.json'])
      chmodSync(project.path(path), 0o444);
    chmodSync(project.path('jobs'), 0o555);
    chmodSync(project.directory, 0o555);
    try {
      const result = await runCli(['jobs', 'list', '--json'], {
        cwd: project.directory,
        prefix: asNobodyWhenPossible(),
        env: { HOME: '/nonexistent' },
      });
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject([{ name: 'ro' }]);
      expect(readdirSync(project.directory, { recursive: true }).sort()).toEqual(before);
    } finally {
      chmodSync(project.directory, 0o755);
      chmodSync(project.path('jobs'), 0o755);
      project.remove();
    }
  });
});
