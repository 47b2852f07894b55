/**
 * `resil run` as a real process: the built binary (`node bin/resil.js`, after `npm run build`) on a
 * config written to a temp directory. The config's jobs append what they did to a Redis list (their
 * own ledger, with start times by Redis `TIME`), so tests check behaviour from outside the runner.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type SpawnedProcess, spawnProcess } from '../support/processes.ts';

export const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const binary = join(repoRoot, 'bin/resil.js');
export const libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/** The JSON lines of `output`. */
export function jsonLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

let built = false;

/** Builds dist/ once per test file when it is missing or older than the sources it needs. */
export function ensureBuilt(): void {
  if (built) return;
  const outputs = [
    'dist/cli/main.js',
    'dist/scheduler/index.js',
    'dist/stores/redis/index.js',
    'dist/stores/mysql/index.js',
  ].map((file) => join(repoRoot, file));
  const sources = [
    'src/cli/commands/run.ts',
    'src/scheduler/runner.ts',
    'src/scheduler/fire.ts',
    'src/scheduler/store-clock.ts',
    'src/scheduler/occurrence-lease.ts',
    'src/ledger/memory-store.ts',
    'src/ledger/decide.ts',
    'src/stores/redis/store.ts',
    'src/stores/redis/scripts.ts',
    'src/stores/postgres/store.ts',
    'src/stores/postgres/schema.ts',
    'src/stores/mysql/store.ts',
    'src/stores/mysql/ledger.ts',
  ].map((file) => join(repoRoot, file));
  const oldest = Math.min(...outputs.map((file) => (existsSync(file) ? statSync(file).mtimeMs : 0)));
  const newest = Math.max(...sources.map((file) => statSync(file).mtimeMs));
  if (oldest < newest)
    execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore', timeout: 180_000 });
  built = true;
}

/** True when libfaketime can be preloaded (the Debian `faketime` package). */
export function libfaketimeAvailable(): boolean {
  return existsSync(libfaketime);
}

export interface JobFixture {
  name: string;
  schedule: string;
  /** ms the job works (honouring its signal unless `ignoreSignal`). */
  workMs: number;
  ignoreSignal?: boolean;
  lock?: { ttl: number; wait: number };
  startingDeadline?: number;
}

export interface RunFixture {
  readonly directory: string;
  readonly configPath: string;
  /** The Redis list the jobs append `{ phase, scheduledAt, startedAt, at, instance, token }` to. */
  readonly recordKey: string;
  readonly prefix: string;
  remove(): void;
}

/**
 * The start of a fixture `resil.config.mjs`: imports resil from dist/ and ioredis, and opens
 * `client` (for the store) and `recorder` (for the job's own records) on `FIXTURE_REDIS_URL`;
 * `instance` is `FIXTURE_INSTANCE`.
 */
export function fixturePreamble(): string {
  const url = (path: string) => JSON.stringify(pathToFileURL(join(repoRoot, path)).href);
  return `import { createRequire } from 'node:module';
const require = createRequire(${JSON.stringify(join(repoRoot, 'package.json'))});
const { Redis } = require('ioredis');
const { defineConfig } = await import(${url('dist/index.js')});
const { RedisLockStore } = await import(${url('dist/stores/redis/index.js')});

const redisUrl = process.env.FIXTURE_REDIS_URL;
const instance = process.env.FIXTURE_INSTANCE;
const clientOptions = { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 1000, retryStrategy: () => 200 };
const client = new Redis(redisUrl, clientOptions);
client.on('error', () => {});
const recorder = new Redis(redisUrl, clientOptions);
recorder.on('error', () => {});
`;
}

/** Writes a `resil.config.mjs` whose jobs record their runs in Redis (URL from `FIXTURE_REDIS_URL`). */
export function writeRunFixture(options: {
  prefix: string;
  jobs: JobFixture[];
  shutdownGraceMs?: number;
}): RunFixture {
  const directory = mkdtempSync(join(tmpdir(), 'resil-run-'));
  const configPath = join(directory, 'resil.config.mjs');
  const recordKey = `${options.prefix}records`;
  writeFileSync(
    configPath,
    `${fixturePreamble()}
async function redisNow() {
  const [seconds, micros] = await recorder.time();
  return Number(seconds) * 1000 + Number(micros) / 1000;
}

async function record(phase, ctx, extra = {}) {
  const entry = { phase, job: ctx.job, scheduledAt: ctx.scheduledAt.getTime(), at: await redisNow(), instance, token: ctx.token, attempt: ctx.attempt, ...extra };
  await recorder.rpush(${JSON.stringify(recordKey)}, JSON.stringify(entry));
}

function work(ms, signal, ignoreSignal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    if (!ignoreSignal) signal.addEventListener('abort', () => { clearTimeout(timer); reject(signal.reason); }, { once: true });
  });
}

const jobs = ${JSON.stringify(options.jobs)}.map((job) => ({
  name: job.name,
  schedule: job.schedule,
  ...(job.lock ? { lock: job.lock } : {}),
  ...(job.startingDeadline ? { startingDeadline: job.startingDeadline } : {}),
  run: async (ctx) => {
    await record('start', ctx);
    ctx.logger.info('job body started');
    await work(job.workMs, ctx.signal, job.ignoreSignal);
    await record('end', ctx);
  },
}));

export default defineConfig({
  store: new RedisLockStore(client, { prefix: ${JSON.stringify(options.prefix)}, commandTimeout: 500 }),
  instance,
  timezone: 'UTC',
  shutdownGrace: ${options.shutdownGraceMs ?? 10_000},
  jobs,
});
`,
  );
  return {
    directory,
    configPath,
    recordKey,
    prefix: options.prefix,
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

export interface RunProcess {
  readonly instance: string;
  readonly process: SpawnedProcess;
  /** The JSON log lines printed so far. */
  lines(): Array<Record<string, unknown>>;
  /** Resolves with the first log line (from line index `from` on) matching `predicate`. */
  waitForLine(
    predicate: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
    what?: string,
    from?: number,
  ): Promise<Record<string, unknown>>;
}

/** Starts `node bin/resil.js --config <fixture> run [args]`, optionally with its clock shifted by libfaketime. */
export function startRun(
  fixture: RunFixture,
  options: { instance: string; redisUrl: string; args?: string[]; clockOffset?: string },
): RunProcess {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    FIXTURE_REDIS_URL: options.redisUrl,
    FIXTURE_INSTANCE: options.instance,
    LOG_LEVEL: 'debug',
    NO_COLOR: '1',
  };
  if (options.clockOffset !== undefined) {
    // Preloaded into node itself: the faketime wrapper would not pass SIGTERM on.
    env.LD_PRELOAD = libfaketime;
    env.FAKETIME = options.clockOffset;
    env.DONT_FAKE_MONOTONIC = '1';
  }
  const spawned = spawnProcess(
    'node',
    [binary, '--config', fixture.configPath, 'run', ...(options.args ?? [])],
    {
      env,
      cwd: fixture.directory,
      name: `resil run (${options.instance})`,
    },
  );
  const lines = () => jsonLines(spawned.output());
  return {
    instance: options.instance,
    process: spawned,
    lines,
    async waitForLine(predicate, timeoutMs = 15_000, what = 'a matching log line', from = 0) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const found = lines().slice(from).find(predicate);
        if (found) return found;
        if (spawned.hasExited())
          throw new Error(`${options.instance} exited before ${what}:\n${spawned.output().slice(-3000)}`);
        if (performance.now() > deadline) {
          throw new Error(
            `${options.instance}: no ${what} within ${timeoutMs} ms:\n${spawned.output().slice(-3000)}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
  };
}

export interface JobRecord {
  phase: 'start' | 'end';
  job: string;
  scheduledAt: number;
  /** Redis TIME when the record was written, ms. */
  at: number;
  instance: string;
  token: number;
  attempt: number;
}
