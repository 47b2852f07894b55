import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ansiPattern,
  binary,
  createProject,
  ensureCliBuilt,
  type Project,
  repoRoot,
  runCli,
  tsConfig,
} from './cli-support.ts';

const jobs = `[
  { name: 'beat', schedule: '*/10 * * * * *', run: async (ctx) => { ctx.logger.info({ token: ctx.token }, 'beat ran'); } },
  { name: 'nightly', schedule: '0 2 * * *', timezone: 'Europe/Paris', lock: { key: 'nightly-lock', ttl: '1m' }, run: async () => {} },
  { name: 'unlocked', schedule: '0 * * * *', lock: false, run: async () => {} },
  { name: 'off', schedule: '0 3 * * *', enabled: false, run: async () => {} },
  { name: 'broken', schedule: '0 4 * * *', retry: { maxRetryAttempts: 1, delay: 10 }, run: async () => { throw new Error('disk full'); } },
]`;

let project: Project;

beforeAll(() => {
  ensureCliBuilt();
  project = createProject({ 'resil.config.ts': tsConfig(jobs, { extra: "timezone: 'UTC'," }) });
});
afterAll(() => project?.remove());

describe('--help and --version', () => {
  it('prints the version from package.json', async () => {
    const { version } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      version: string;
    };
    const result = await runCli(['--version']);
    expect(result).toMatchObject({ code: 0, stdout: `${version}\n` });
  });

  it('lists every command with examples', async () => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    for (const text of [
      'run [options]',
      'jobs',
      'lock',
      '--config <file>',
      'Examples:',
      'resil jobs run nightly-report',
    ]) {
      expect(result.stdout).toContain(text);
    }
  });

  it('shows help with no arguments', async () => {
    const result = await runCli([]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Usage: resil');
  });

  it.each([
    [['jobs'], ['list', 'run', 'Examples:']],
    [['lock'], ['status', 'Examples:']],
    [
      ['jobs', '--help'],
      ['list', 'run', 'Examples:'],
    ],
    [
      ['jobs', 'list', '--help'],
      ['--json', 'Exit codes: 0', 'Examples:'],
    ],
    [
      ['jobs', 'run', '--help'],
      ['<name>', '3 skipped', 'Examples:'],
    ],
    [
      ['lock', 'status', '--help'],
      ['<key>', '--json', '1 store unreachable', 'Examples:'],
    ],
    [
      ['help', 'jobs'],
      ['list', 'run'],
    ],
    [
      ['run', '--help'],
      ['--job', 'Examples:'],
    ],
  ])('%j answers with its options, exit codes and examples', async (args, expected) => {
    const result = await runCli(args);
    expect(result.code).toBe(0);
    for (const text of expected) expect(result.stdout).toContain(text);
  });

  it('every command has --help with exit codes and examples, and --json where it prints data; resil --help lists every exit code', async () => {
    /** The commands a group's help lists (first word of each line under "Commands:"), without help. */
    const commandsOf = (help: string) =>
      [...(help.split('Commands:\n')[1]?.split('\n\n')[0] ?? '').matchAll(/^ {2}(\S+)/gm)]
        .map((match) => match[1]!)
        .filter((name) => name !== 'help');
    const top = (await runCli(['--help'])).stdout;
    for (const code of ['  0 ', '  1 ', '  2 ', '  3 ', '  130 ']) expect(top).toContain(code);
    const printsData = new Set(['jobs list', 'jobs history', 'jobs next', 'lock status', 'instances']);
    const leaves: string[] = [];
    for (const name of commandsOf(top)) {
      const help = (await runCli([name, '--help'])).stdout;
      const subcommands = commandsOf(help);
      if (subcommands.length === 0) leaves.push(name);
      else leaves.push(...subcommands.map((sub) => `${name} ${sub}`));
    }
    expect(leaves).toEqual(
      expect.arrayContaining([...printsData, 'run', 'jobs run', 'jobs pause', 'jobs resume']),
    );
    for (const leaf of leaves) {
      const result = await runCli([...leaf.split(' '), '--help']);
      expect(result.code, leaf).toBe(0);
      expect(result.stdout, leaf).toMatch(/\nExit codes: 0 /);
      expect(result.stdout, leaf).toContain(`Examples:\n  $ resil ${leaf}`);
      if (printsData.has(leaf)) expect(result.stdout, leaf).toContain('--json');
    }
  }, 60_000);

  it('exits 2 on an unknown command or option, with a suggestion', async () => {
    const command = await runCli(['jobs', 'lsit']);
    expect(command.code).toBe(2);
    expect(command.stderr).toBe(
      'error: unknown command \'lsit\'\n(did you mean "list"?)\n(see resil jobs --help)\n',
    );
    const option = await runCli(['jobs', 'list', '--jsno'], { cwd: project.directory });
    expect(option.code).toBe(2);
    expect(option.stderr).toContain('unknown option \'--jsno\'\n(did you mean "--json"?)\n');
  });

  it.each([
    [['run', '--log-level', 'loud'], {}, '--log-level'],
    [['run'], { LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [['jobs', 'run', 'beat'], { LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
  ])('%j with %j: exits 2 naming the bad log level', async (args, env, source) => {
    const result = await runCli(args, { cwd: project.directory, env });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `error: invalid ${source} "loud": use trace, debug, info, warn, error, fatal or silent\n`,
    );
    expect(result.stdout).toBe('');
  });

  it('exits 2 on an unknown top-level command, pointing at --help', async () => {
    const result = await runCli(['frobnicate']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unknown command 'frobnicate'");
    expect(result.stderr).toContain('see resil --help');
  });

  it.each([[['--help']], [['jobs']], [['jobs', 'list']]])(
    '%j exits 0 quietly when its reader has gone away (EPIPE)',
    async (args) => {
      const child = spawn(process.execPath, [binary, ...args], {
        cwd: project.directory,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // Closed before the first write, like `resil --help | head -0`.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code).toBe(0);
      expect(stderr).not.toMatch(/EPIPE|Error|\n\s+at /);
    },
  );

  it('exits 2 when jobs run has no name', async () => {
    const result = await runCli(['jobs', 'run']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("missing required argument 'name'");
  });
});

describe('jobs list', () => {
  it('prints an aligned table without colours off a terminal', async () => {
    // The machine's zone must not leak into NEXT RUN: each job's is shown in its own zone.
    const result = await runCli(['jobs', 'list'], {
      cwd: project.directory,
      env: { TZ: 'America/New_York' },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).not.toMatch(ansiPattern);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(6);
    const header = lines[0]!;
    expect(header).toMatch(/^NAME\s+SCHEDULE\s+TIMEZONE\s+NEXT RUN\s+LOCK KEY\s+LAST RUN$/);
    // Every column starts at the header's offset on every row.
    const offset = header.indexOf('SCHEDULE');
    for (const line of lines.slice(1)) expect(line[offset - 1]).toBe(' ');
    const row = (name: string) => lines.find((line) => line.startsWith(`${name} `))!;
    expect(row('beat')).toMatch(
      /\*\/10 \* \* \* \* \*\s+UTC\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(in \d+s\)\s+beat\s+never$/,
    );
    expect(row('nightly')).toMatch(
      /Europe\/Paris\s+\d{4}-\d\d-\d\d 02:00:00 GMT\+[12] \(in (\d+h( \d+m)?|\d+m( \d+s)?)\)\s+nightly-lock\s+never$/,
    );
    expect(row('unlocked')).toMatch(/\s+none\s+never$/);
    expect(row('off')).toMatch(/\s+disabled\s+off\s+never$/);
  });

  it('notes on stderr that the in-memory store cannot show other processes, except with --json', async () => {
    const note =
      "note: the config's store is the in-memory MemoryLockStore: it holds this process's leases and runs only; use RedisLockStore, PostgresLockStore or MysqlLockStore to see the fleet's\n";
    for (const args of [
      ['jobs', 'list'],
      ['lock', 'status', 'beat'],
    ]) {
      const result = await runCli(args, { cwd: project.directory });
      expect(result.code).toBe(0);
      expect(result.stderr).toBe(note);
    }
    for (const args of [
      ['jobs', 'list', '--json'],
      ['lock', 'status', 'beat', '--json'],
    ]) {
      expect((await runCli(args, { cwd: project.directory })).stderr).toBe('');
    }
  });

  it('prints one JSON array with --json', async () => {
    const result = await runCli(['jobs', 'list', '--json'], { cwd: project.directory });
    expect(result.code).toBe(0);
    const entries = JSON.parse(result.stdout) as Array<Record<string, unknown>>;
    expect(entries.map((entry) => entry.name)).toEqual(['beat', 'nightly', 'unlocked', 'off', 'broken']);
    const [beat, nightly, unlocked, off] = entries;
    expect(beat).toMatchObject({
      schedule: '*/10 * * * * *',
      timezone: 'UTC',
      enabled: true,
      lockKey: 'beat',
      lastRun: null,
    });
    const nextRun = new Date(beat!.nextRun as string);
    expect(beat!.nextRun).toBe(nextRun.toISOString());
    expect(nextRun.getTime() - Date.now()).toBeGreaterThan(-1_000);
    expect(nextRun.getTime() - Date.now()).toBeLessThanOrEqual(10_000);
    expect(nextRun.getUTCSeconds() % 10).toBe(0);
    expect(nightly).toMatchObject({ timezone: 'Europe/Paris', lockKey: 'nightly-lock' });
    // 02:00 in Paris is 00:00 or 01:00 UTC.
    expect([0, 1]).toContain(new Date(nightly!.nextRun as string).getUTCHours());
    expect(unlocked).toMatchObject({ lockKey: null });
    expect(off).toMatchObject({ enabled: false, nextRun: null });
  });

  it('finds the config from a subdirectory of the project', async () => {
    project.write('src/nested/.keep', '');
    const result = await runCli(['jobs', 'list', '--json'], { cwd: project.path('src/nested') });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toHaveLength(5);
  });

  it('takes the config from --config, before or after the command', async () => {
    const other = createProject({
      'ops/my-config.ts': tsConfig("[{ name: 'only', schedule: '0 0 * * *', run: () => {} }]"),
    });
    try {
      for (const args of [
        ['--config', 'ops/my-config.ts', 'jobs', 'list', '--json'],
        ['jobs', 'list', '--json', '-c', other.path('ops/my-config.ts')],
      ]) {
        const result = await runCli(args, { cwd: other.directory });
        expect(result.code, result.stderr).toBe(0);
        expect((JSON.parse(result.stdout) as Array<{ name: string }>).map((job) => job.name)).toEqual([
          'only',
        ]);
      }
    } finally {
      other.remove();
    }
  });
});

describe('jobs run', () => {
  it('exits 0 when the job succeeds, with its log on stdout and the result on stderr', async () => {
    const result = await runCli(['jobs', 'run', 'beat'], { cwd: project.directory });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('"msg":"beat ran"');
    expect(result.stdout).toMatch(/"token":\d+/);
    expect(result.stderr).toMatch(/^beat: success, token \d+, 1 attempt\n$/);
  });

  it('exits 1 when the job fails after its retries', async () => {
    const result = await runCli(['jobs', 'run', 'broken'], { cwd: project.directory });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/broken: failed, token \d+, 2 attempts: Error: disk full/);
  });

  it('exits 2 for a job the config does not define, naming the ones it does', async () => {
    const result = await runCli(['jobs', 'run', 'nope'], { cwd: project.directory });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `error: unknown job "nope"; jobs in this config: beat, nightly, unlocked, off, broken\n  config: ${project.path('resil.config.ts')}\n`,
    );
  });

  it('suggests a close name, in the same words as resil run --job', async () => {
    const jobsRun = await runCli(['jobs', 'run', 'nigthly'], { cwd: project.directory });
    const run = await runCli(['run', '--job', 'nigthly'], { cwd: project.directory });
    for (const result of [jobsRun, run]) {
      expect(result.code).toBe(2);
      expect(result.stderr.split('\n')[0]).toBe(
        'error: unknown job "nigthly"; jobs in this config: beat, nightly, unlocked, off, broken (did you mean "nightly"?)',
      );
    }
  });
});

describe('lock status', () => {
  it('reports a free lock in a block and as JSON', async () => {
    const text = await runCli(['lock', 'status', 'beat'], { cwd: project.directory });
    expect(text).toMatchObject({ code: 0, stdout: 'Lock beat: free (no live lease)\n' });
    const json = await runCli(['lock', 'status', 'beat', '--json'], { cwd: project.directory });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ key: 'beat', held: false });
  });
});
