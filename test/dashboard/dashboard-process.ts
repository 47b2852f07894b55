/**
 * `resil dashboard` as a real process (the built binary), and a fleet for it to show: a fixture
 * config on a Redis prefix whose jobs succeed, fail and overlap, for `startRun()` of
 * test/cli/run-process.ts to run.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binary } from '../cli/cli-support.ts';
import { fixturePreamble, jsonLines, type RunFixture } from '../cli/run-process.ts';
import { type SpawnedProcess, spawnProcess } from '../support/processes.ts';

/** A job of the dashboard fixture. */
export interface DashboardJobFixture {
  name: string;
  schedule: string;
  /** ms the job works, honouring its signal. */
  workMs: number;
  /** Fails the occurrences whose `scheduledAt / 1000` is a multiple of this. */
  failEvery?: number;
  timezone?: string;
  lock?: false;
}

/** The fleet of the browser tests and the screenshots. */
export const dashboardJobs: DashboardJobFixture[] = [
  { name: 'tick', schedule: '* * * * * *', workMs: 20 },
  { name: 'sync-prices', schedule: '*/2 * * * * *', workMs: 150, failEvery: 3 },
  { name: 'cache-rebuild', schedule: '*/3 * * * * *', workMs: 4_000 },
  { name: 'nightly-report', schedule: '0 2 * * *', workMs: 300, timezone: 'Europe/Berlin' },
  { name: 'weekly-cleanup', schedule: '30 6 * * 1', workMs: 10 },
];

/**
 * Writes a `resil.config.mjs` on Redis (`FIXTURE_REDIS_URL`, instance `FIXTURE_INSTANCE`) with
 * `jobs`; a failing occurrence throws `upstream answered 503 Service Unavailable`.
 */
export function writeDashboardFixture(options: { prefix: string; jobs?: DashboardJobFixture[] }): RunFixture {
  const directory = mkdtempSync(join(tmpdir(), 'resil-dashboard-'));
  const configPath = join(directory, 'resil.config.mjs');
  writeFileSync(
    configPath,
    `${fixturePreamble()}
function work(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(timer); reject(signal.reason); }, { once: true });
  });
}

const jobs = ${JSON.stringify(options.jobs ?? dashboardJobs)}.map((job) => ({
  name: job.name,
  schedule: job.schedule,
  ...(job.timezone ? { timezone: job.timezone } : {}),
  ...(job.lock === false ? { lock: false } : {}),
  run: async (ctx) => {
    await work(job.workMs, ctx.signal);
    if (job.failEvery && (ctx.scheduledAt.getTime() / 1000) % job.failEvery === 0) {
      throw new Error('upstream answered 503 Service Unavailable');
    }
  },
}));

export default defineConfig({
  store: new RedisLockStore(client, { prefix: ${JSON.stringify(options.prefix)}, commandTimeout: 500 }),
  instance,
  timezone: 'UTC',
  shutdownGrace: 500,
  jobs,
});
`,
  );
  return {
    directory,
    configPath,
    recordKey: `${options.prefix}records`,
    prefix: options.prefix,
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

export interface DashboardProcess {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string;
  readonly origin: string;
  readonly process: SpawnedProcess;
  /** The JSON log lines printed so far. */
  lines(): Array<Record<string, unknown>>;
  stop(): Promise<void>;
}

/**
 * Starts `node bin/resil.js [--config <configPath>] dashboard --port 0 [args]` in `cwd` and waits
 * for its `dashboard on <url>` line.
 */
export async function startDashboard(options: {
  cwd: string;
  configPath?: string;
  args?: string[];
  env?: NodeJS.ProcessEnv;
}): Promise<DashboardProcess> {
  const config = options.configPath === undefined ? [] : ['--config', options.configPath];
  const spawned = spawnProcess(
    process.execPath,
    [binary, ...config, 'dashboard', '--port', '0', ...(options.args ?? [])],
    {
      cwd: options.cwd,
      env: { ...process.env, NO_COLOR: '1', LOG_LEVEL: 'info', ...options.env },
      name: 'resil dashboard',
    },
  );
  await spawned.waitForOutput(/"msg":"dashboard on /, 20_000);
  const listening = jsonLines(spawned.output()).find((line) => typeof line.href === 'string')!;
  const url = String(listening.href);
  return {
    url,
    origin: new URL(url).origin,
    process: spawned,
    lines: () => jsonLines(spawned.output()),
    stop: () => spawned.stop(),
  };
}
