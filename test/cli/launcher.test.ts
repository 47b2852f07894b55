/**
 * `resil run` under npm (`npx resil run`, `npm start`): npm exits on SIGTERM without passing it on,
 * and the runner must then stop gracefully instead of running on orphaned (`resil dashboard` and
 * `resil jobs run` likewise).
 */
import { mkdirSync, symlinkSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { packageManagerLauncher, rememberLauncher, watchLauncher } from '../../src/cli/launcher.ts';
import { spawnProcess, waitUntil } from '../support/processes.ts';
import { createProject, ensureCliBuilt, type Project } from './cli-support.ts';

describe('watchLauncher', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('names npm as the launcher from the variables npm sets, and nothing else', () => {
    expect(packageManagerLauncher({ npm_command: 'exec' })).toBe('npm exec');
    expect(packageManagerLauncher({ npm_lifecycle_event: 'start' })).toBe('npm run start');
    expect(packageManagerLauncher({ PATH: '/usr/bin' })).toBeUndefined();
  });

  it('calls back once when the parent pid changes, only for a package manager launch', () => {
    vi.useFakeTimers();
    let parent = 100;
    const gone: string[] = [];
    const stop = watchLauncher((launcher) => gone.push(launcher), {
      env: { npm_command: 'exec' },
      intervalMs: 1_000,
      parentPid: () => parent,
    });
    vi.advanceTimersByTime(5_000);
    expect(gone).toEqual([]);
    parent = 1;
    vi.advanceTimersByTime(999);
    expect(gone).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(gone).toEqual(['npm exec']);
    parent = 2;
    vi.advanceTimersByTime(10_000);
    expect(gone).toEqual(['npm exec']);
    stop();

    // npm stopped before the watch began (a supervisor stops it as soon as resil says it is ready):
    // compared with the parent the CLI noted as it started (what bin/resil.js passes to main()),
    // not with the one it has now.
    rememberLauncher(100);
    const early: string[] = [];
    watchLauncher((launcher) => early.push(launcher), {
      env: { npm_lifecycle_event: 'start' },
      intervalMs: 1_000,
      parentPid: () => 1,
    });
    vi.advanceTimersByTime(999);
    expect(early).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(early).toEqual(['npm run start']);

    const fromShell: string[] = [];
    watchLauncher((launcher) => fromShell.push(launcher), { env: {}, parentPid: () => parent++ });
    vi.advanceTimersByTime(10_000);
    expect(fromShell).toEqual([]);
  });
});

describe('resil run, dashboard and jobs run started by npm, npm sent SIGTERM', () => {
  let project: Project;

  beforeAll(() => {
    ensureCliBuilt();
    project = createProject(
      {
        'resil.config.mjs': `import { defineConfig } from 'resil';
export default defineConfig({
  instance: 'under-npm',
  jobs: [
    { name: 'tick', schedule: '* * * * * *', run: async () => {} },
    {
      name: 'long',
      schedule: '0 0 1 1 *',
      run: ({ signal }) =>
        new Promise((_, reject) => {
          console.log(JSON.stringify({ pid: process.pid, msg: 'long started' }));
          signal.addEventListener('abort', () => reject(signal.reason));
        }),
    },
  ],
});
`,
      },
      { type: 'module', scripts: { start: 'resil run' } },
    );
    mkdirSync(project.path('node_modules/.bin'));
    symlinkSync('../resil/bin/resil.js', project.path('node_modules/.bin/resil'));
    return () => project.remove();
  }, 200_000);

  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  /**
   * Starts `npm <args>` in the project, waits for the line `ready` from the process npm started,
   * sends npm SIGTERM and waits for that process to be gone; returns the output.
   */
  async function stopThroughNpm(args: string[], ready: RegExp, what: string): Promise<string> {
    const npm = spawnProcess('npm', args, {
      cwd: project.directory,
      env: { ...process.env, NO_COLOR: '1', LOG_LEVEL: 'info' },
      name: 'npm',
    });
    let childPid: number | undefined;
    try {
      const line = await npm.waitForOutput(ready, 30_000);
      childPid = (JSON.parse(line) as { pid: number }).pid;
      expect(childPid).not.toBe(npm.pid);
      npm.kill('SIGTERM');
      await npm.exited;
      // npm exits at once: the child notices within a second and stops as on a signal of its own.
      await waitUntil(`${what} to exit`, () => !alive(childPid!), { timeoutMs: 10_000, intervalMs: 50 });
      return npm.output();
    } finally {
      if (childPid !== undefined && alive(childPid)) process.kill(childPid, 'SIGKILL');
      await npm.stop();
    }
  }

  it.each([
    ['npx resil run', ['exec', '--', 'resil', 'run'], 'npm exec'],
    ['npm start', ['start'], 'npm start'],
  ])(
    '%s: npm exits, the runner logs the graceful stop and is gone within a few seconds',
    async (_, args, launcher) => {
      const output = await stopThroughNpm(args, /"msg":"job succeeded"/, 'the runner');
      expect(output).toContain(`"launcher":"${launcher}","msg":"${launcher} exited: stopping gracefully"`);
      expect(output).toMatch(/"msg":"exiting"/);
    },
    60_000,
  );

  it('npx resil dashboard: npm exits, the dashboard logs its stop and is gone within a few seconds', async () => {
    const output = await stopThroughNpm(
      ['exec', '--', 'resil', 'dashboard', '--port', '0'],
      /"msg":"dashboard on /,
      'the dashboard',
    );
    expect(output).toContain('"launcher":"npm exec","msg":"npm exec exited: stopping the dashboard"');
    expect(output).toMatch(/"msg":"dashboard stopped"/);
  }, 60_000);

  it('npx resil jobs run: npm exits, the job is aborted as on SIGTERM and the command is gone', async () => {
    const output = await stopThroughNpm(
      ['exec', '--', 'resil', 'jobs', 'run', 'long'],
      /"msg":"long started"/,
      'resil jobs run',
    );
    expect(output).toContain('"launcher":"npm exec","msg":"npm exec exited: aborting long"');
    // The job saw its signal abort (it rejects with the reason) and the command said why.
    expect(output).toContain('long: interrupted by the exit of npm exec');
  }, 60_000);
});
