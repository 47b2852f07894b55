/**
 * `resil jobs run` when the job's signal aborts (its timeout, Ctrl-C): the command never hangs on
 * a job that ignores its signal, and an interruption exits 130, not "failed".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SpawnedProcess, spawnProcess } from '../support/processes.ts';
import { binary, createProject, ensureCliBuilt, type Project, runCli, tsConfig } from './cli-support.ts';

const jobs = `[
  { name: 'stuck', schedule: '0 2 * * *', timeout: '500ms', retry: false, run: () => new Promise(() => {}) },
  { name: 'deaf', schedule: '0 2 * * *', retry: false, run: () => new Promise(() => {}) },
  { name: 'polite', schedule: '0 2 * * *', run: (ctx) => new Promise((_, reject) => {
      ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
    }) },
]`;

let project: Project;
beforeAll(() => {
  ensureCliBuilt();
  project = createProject({ 'resil.config.ts': tsConfig(jobs, { extra: "instance: 'cli-test'," }) });
});
afterAll(() => project?.remove());

const spawned: SpawnedProcess[] = [];
afterAll(async () => {
  await Promise.all(spawned.map((process) => process.stop()));
});

function start(job: string): SpawnedProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'debug' };
  delete env.NO_COLOR;
  delete env.FORCE_COLOR;
  const child = spawnProcess(process.execPath, [binary, 'jobs', 'run', job], {
    env,
    cwd: project.directory,
    name: `resil jobs run ${job}`,
  });
  spawned.push(child);
  return child;
}

function jsonLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('jobs run with a job that ignores its signal', () => {
  it('logs the timeout when it fires, gives up 5 s later naming the job, and exits 1', async () => {
    const result = await runCli(['jobs', 'run', 'stuck'], {
      cwd: project.directory,
      timeoutMs: 20_000,
      env: { LOG_LEVEL: 'debug' },
    });
    expect(result.code, result.stderr).toBe(1);
    expect(result.durationMs).toBeLessThan(12_000);
    const lines = jsonLines(result.stdout);
    expect(lines.find((line) => line.msg === 'job started')).toMatchObject({
      job: 'stuck',
      instance: 'cli-test',
      level: 20,
    });
    expect(lines.find((line) => line.msg === 'attempt timed out: its signal is aborted')).toMatchObject({
      job: 'stuck',
      timeoutMs: 500,
    });
    const gaveUp = lines.find((line) => line.level === 50);
    expect(gaveUp?.msg).toContain('stuck ignored its aborted signal (timed out after 500ms) for 5 s');
    expect(gaveUp).toMatchObject({ job: 'stuck', instance: 'cli-test' });
    expect(result.stderr).toBe('stuck: gave up: the job ignored its aborted signal for 5 s\n');
  });

  it('after Ctrl-C: says how to force, gives up after 5 s and exits 130', async () => {
    const child = start('deaf');
    await child.waitForOutput(/"msg":"job started"/, 15_000);
    const signalledAt = performance.now();
    child.kill('SIGINT');
    await child.waitForOutput(/aborting deaf\.\.\. press Ctrl-C again to force/, 2_000);
    const exit = await child.exited;
    expect(exit.code, child.output()).toBe(130);
    const waited = performance.now() - signalledAt;
    expect(waited).toBeGreaterThan(4_500);
    expect(waited).toBeLessThan(9_000);
    expect(child.output()).toContain('deaf ignored its aborted signal (SIGINT) for 5 s');
  });

  it('a second Ctrl-C exits 130 at once', async () => {
    const child = start('deaf');
    await child.waitForOutput(/"msg":"job started"/, 15_000);
    child.kill('SIGINT');
    await child.waitForOutput(/aborting deaf/, 2_000);
    const signalledAt = performance.now();
    child.kill('SIGINT');
    const exit = await child.exited;
    expect(exit.code).toBe(130);
    expect(performance.now() - signalledAt).toBeLessThan(2_000);
    expect(child.output()).toContain('deaf: forced exit');
  });
});

describe('jobs run interrupted', () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)(
    '%s: a job that honours its signal settles, exit %i, no stack in the log',
    async (signal, code) => {
      const child = start('polite');
      await child.waitForOutput(/"msg":"job started"/, 15_000);
      child.kill(signal);
      const exit = await child.exited;
      expect(exit.code, child.output()).toBe(code);
      const output = child.output();
      expect(output).toContain(`polite: interrupted by ${signal}`);
      expect(output).not.toContain('failed');
      expect(output).not.toMatch(/"stack"|\n\s+at /);
      expect(jsonLines(output).find((line) => line.msg === 'job aborted')).toMatchObject({
        job: 'polite',
        error: `interrupted by ${signal}`,
      });
    },
  );
});
