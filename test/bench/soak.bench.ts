/**
 * A soak: 20 every-second jobs on 2 `resil run` instances sharing a private Redis, for
 * BENCH_SOAK_MS (default 6 min). Every 30 s: Redis's `used_memory`, the run ledger's records (the
 * `:occ:` hashes' fields, but the counter `v` and the current occurrence `c`), and each instance's RSS. A job keeps the records still inside its starting
 * deadline (1 min) and the latest `ledgerRecordLimit` (100) besides, so Redis's memory stops
 * growing after about 160 s, and so should the instances'.
 *
 * `npm run bench -- soak` (after `npm run build`); the smoke run lasts 20 s. Linux only (reads /proc).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { type SpawnedProcess, spawnProcess } from '../support/processes.ts';
import { startRedisServer } from '../support/redis.ts';
import { type BenchOptions, printTable } from './harness.ts';

const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const binary = join(repoRoot, 'bin/resil.js');
const jobs = 20;
const instances = 2;

function rssMegabytes(pid: number): number {
  try {
    const kilobytes = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kilobytes === undefined ? Number.NaN : Number(kilobytes) / 1024;
  } catch {
    return Number.NaN;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export default async function (options: BenchOptions): Promise<void> {
  const durationMs = options.smoke ? 20_000 : Number(process.env.BENCH_SOAK_MS ?? 360_000);
  const sampleEveryMs = options.smoke ? 5_000 : 30_000;
  const server = await startRedisServer();
  const admin = new Redis(server.url);
  const directory = mkdtempSync(join(repoRoot, '.bench-soak-'));
  const runs: SpawnedProcess[] = [];
  try {
    writeFileSync(
      join(directory, 'resil.config.ts'),
      `import { defineConfig } from 'resil';
import { RedisLockStore } from 'resil/redis';
import { Redis } from 'ioredis';
const store = new RedisLockStore(new Redis(process.env.B_STORE_URL), { prefix: 'soak:' });
export default defineConfig({
  store,
  jobs: Array.from({ length: ${jobs} }, (_, index) => ({ name: 'every-second-' + index, schedule: '* * * * * *', run: async () => {} })),
});
`,
    );
    for (let index = 0; index < instances; index++) {
      runs.push(
        spawnProcess(process.execPath, [binary, 'run', '--log-level', 'warn'], {
          cwd: directory,
          name: `resil run #${index}`,
          env: { ...process.env, B_STORE_URL: server.url, NO_COLOR: '1', HOSTNAME: `soak-${index}` },
        }),
      );
    }
    // Started once both have registered in the store's instance registry.
    const deadline = performance.now() + 30_000;
    while ((await admin.hlen('soak:{instances}:registry')) < instances) {
      if (performance.now() > deadline) throw new Error('the instances did not start within 30 s');
      await sleep(100);
    }
    const started = performance.now();
    const rows: Array<Array<string | number>> = [];
    for (;;) {
      await sleep(sampleEveryMs);
      const elapsed = performance.now() - started;
      const memory = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1] ?? Number.NaN);
      let records = 0;
      for (const key of await admin.keys('soak:*:occ:*')) {
        records += (await admin.hkeys(key)).filter((field) => field !== 'v' && field !== 'c').length;
      }
      rows.push([
        `${Math.round(elapsed / 1000)} s`,
        (memory / 1024 / 1024).toFixed(2),
        records,
        (records / jobs).toFixed(0),
        runs.map((run) => rssMegabytes(run.pid).toFixed(0)).join(', '),
      ]);
      if (elapsed + sampleEveryMs > durationMs) break;
    }
    printTable(
      `${jobs} every-second jobs on ${instances} instances, one Redis`,
      ['after', 'Redis used_memory MB', 'ledger records', 'records per job', 'RSS MB per instance'],
      rows,
    );
  } finally {
    await Promise.all(runs.map((run) => run.stop(5_000)));
    admin.disconnect();
    await server.stop();
    rmSync(directory, { recursive: true, force: true });
  }
}
