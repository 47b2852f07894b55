/**
 * A job's `chaos` option through the real binary: `resil jobs run` of a job whose every attempt a
 * chaos fault fails, and a config with a bad chaos option.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, ensureCliBuilt, type Project, runCli, tsConfig } from './cli-support.ts';

let project: Project;

beforeAll(() => {
  ensureCliBuilt();
  project = createProject({
    'resil.config.ts': tsConfig(`[
    {
      name: 'rehearsed',
      schedule: '0 2 * * *',
      retry: { maxRetryAttempts: 1, delay: 0 },
      chaos: { fault: { injectionRate: 1, fault: new Error('chaos: database unavailable') } },
      run: async (ctx) => ctx.logger.info('rehearsed ran'),
    },
  ]`),
    'bad/resil.config.ts': tsConfig(`[
    {
      name: 'bad',
      schedule: '0 2 * * *',
      chaos: { latency: { injectionRate: 1.5, latency: -1 }, fualt: {} },
      run: async () => {},
    } as never,
  ]`),
  });
});

afterAll(() => project.remove());

describe('a job with chaos, through resil', () => {
  it('jobs run: each attempt fails with the injected fault, logged as a chaos injection; the job never runs', async () => {
    const result = await runCli(['jobs', 'run', 'rehearsed'], { cwd: project.directory });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(
      /rehearsed: failed, token \d+, 2 attempts: Error: chaos: database unavailable/,
    );
    const lines = result.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const injections = lines.filter((line) => line.chaos === 'fault');
    expect(injections.map((line) => [line.attempt, line.level, line.msg])).toEqual([
      [1, 40, "chaos: injected a fault into this attempt (the job's chaos option)"],
      [2, 40, "chaos: injected a fault into this attempt (the job's chaos option)"],
    ]);
    expect(lines.some((line) => line.msg === 'rehearsed ran')).toBe(false);
  });

  it('a bad chaos option is a config error: exit 2, one line per problem', async () => {
    const result = await runCli(['jobs', 'list'], { cwd: project.path('bad') });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(
      'job "bad": option "chaos.fualt": unknown option (did you mean "chaos.fault"?)',
    );
    expect(result.stderr).toContain(
      'job "bad": option "chaos.latency.injectionRate": expected a number from 0 to 1, got 1.5',
    );
    expect(result.stderr).toContain('job "bad": option "chaos.latency.latency": expected a duration');
  });
});
