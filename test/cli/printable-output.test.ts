/**
 * Text from the store (a job's error, a pause reason) reaches the terminal with its control
 * characters shown, not obeyed: `printable()` on every command's output, and the real binary.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { printable } from '../../src/cli/output.ts';
import { deleteKeys, redisUrlForTests, uniquePrefix } from '../support/redis.ts';
import { ansiPattern, createProject, ensureCliBuilt, runCli } from './cli-support.ts';
import { fixturePreamble } from './run-process.ts';

const esc = String.fromCharCode(27);
const bel = String.fromCharCode(7);

describe('printable', () => {
  it.each([
    ['plain text', 'disk full', 'disk full'],
    ['a newline stays', 'one\ntwo\n', 'one\ntwo\n'],
    ['clear screen', `a${esc}[2Jb`, 'a\\u001b[2Jb'],
    ['OSC window title', `${esc}]0;owned${bel}`, '\\u001b]0;owned\\u0007'],
    ['carriage return, tab, NUL, backspace', 'a\rb\tc\u0000d\u0008', 'a\\u000db\\u0009c\\u0000d\\u0008'],
    ['DEL and C1 (CSI, OSC)', 'a\u007fb\u009b2Jc\u009d', 'a\\u007fb\\u009b2Jc\\u009d'],
    [
      "the styles' own colours stay",
      `${esc}[31merror:${esc}[39m ${esc}[1mx${esc}[22m`,
      `${esc}[31merror:${esc}[39m ${esc}[1mx${esc}[22m`,
    ],
    ['other SGR sequences are shown', `${esc}[8mhidden${esc}[0m`, '\\u001b[8mhidden\\u001b[0m'],
    ['unicode text stays', 'café ✓ 日本', 'café ✓ 日本'],
  ])('%s', (_, input, expected) => {
    expect(printable(input)).toBe(expected);
  });
});

const redisUrl = await redisUrlForTests();

describe.skipIf(!redisUrl)('the resil binary on a Redis store', () => {
  const prefix = uniquePrefix('printable');
  let client: Redis;
  const project = createProject({
    'resil.config.mjs': `${fixturePreamble()}
export default defineConfig({
  store: new RedisLockStore(client, { prefix: ${JSON.stringify(prefix)}, commandTimeout: 1000 }),
  instance,
  timezone: 'UTC',
  jobs: [{
    name: 'report',
    schedule: '0 2 1 1 *',
    run: async () => { throw new Error(${JSON.stringify(`disk${esc}[2J full${esc}]0;owned${bel}`)}); },
  }],
});
`,
  });
  const cli = (args: string[], env: NodeJS.ProcessEnv = { NO_COLOR: '1' }) =>
    runCli(['--config', project.path('resil.config.mjs'), ...args], {
      cwd: project.directory,
      env: { FIXTURE_REDIS_URL: redisUrl!, FIXTURE_INSTANCE: 'ops-1', ...env },
      timeoutMs: 20_000,
    });

  beforeAll(() => {
    ensureCliBuilt();
    client = new Redis(redisUrl!);
  }, 200_000);
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
    project.remove();
  });

  it('jobs run, jobs history, jobs pause and resume print control characters escaped; --json is unchanged', async () => {
    const run = await cli(['jobs', 'run', 'report']);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain('report: failed, token');
    expect(run.stderr).toContain('disk\\u001b[2J full\\u001b]0;owned\\u0007');

    const history = await cli(['jobs', 'history', 'report']);
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toContain('disk\\u001b[2J full\\u001b]0;owned\\u0007');
    const coloured = await cli(['jobs', 'history', 'report'], { FORCE_COLOR: '1' });
    expect(coloured.stdout).toMatch(ansiPattern);
    expect(coloured.stdout).toContain('\\u001b[2J');
    expect(coloured.stdout).not.toContain(`${esc}[2J`);
    const json = await cli(['jobs', 'history', 'report', '--json']);
    expect(JSON.parse(json.stdout)[0].error).toBe(`Error: disk${esc}[2J full${esc}]0;owned${bel}`);

    const paused = await cli(['jobs', 'pause', 'report', '--reason', `migration${esc}]0;title${bel}`]);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toContain('reason: migration\\u001b]0;title\\u0007\n');
    const refused = await cli(['jobs', 'run', 'report']);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('reason: migration\\u001b]0;title\\u0007;');
    const resumed = await cli(['jobs', 'resume', 'report']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('reason: migration\\u001b]0;title\\u0007)');

    for (const result of [run, history, json, paused, refused, resumed]) {
      expect(result.stdout + result.stderr).not.toContain(esc);
      expect(result.stdout + result.stderr).not.toContain(bel);
    }
  }, 90_000);
});
