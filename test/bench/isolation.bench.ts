/**
 * What `isolation: 'worker'` costs, measured on the real binary (`resil jobs run <job>`, one
 * process per run, a memory store): the wall time of a run of an empty job in the runner's process
 * against in a worker thread of its own (which loads the config file first), and the peak RSS of
 * a run that holds for 1.5 s, in the process against in a worker. The difference of the medians
 * is the cost of one isolated run, its start-up and its memory. Both for a `resil.config.ts` (from
 * jiti's cache of transpiled files, as after the first start) and a `resil.config.mjs`. Run after
 * `npm run build`: `npm run bench -- isolation`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchOptions } from './harness.ts';

const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const binary = join(repoRoot, 'bin/resil.js');

const config = `import { defineConfig } from ${JSON.stringify(join(repoRoot, 'dist/index.js'))};

const hold = () => new Promise((resolve) => setTimeout(resolve, 1_500));

export default defineConfig({
  timezone: 'UTC',
  jobs: [
    { name: 'in-process', schedule: '0 0 1 1 *', run: async () => {} },
    { name: 'isolated', schedule: '0 0 1 1 *', isolation: 'worker', run: async () => {} },
    { name: 'in-process-hold', schedule: '0 0 1 1 *', run: hold },
    { name: 'isolated-hold', schedule: '0 0 1 1 *', isolation: 'worker', run: hold },
  ],
});
`;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const environment = { ...process.env, LOG_LEVEL: 'silent', REDIS_URL: '' };

function timeRun(configPath: string, job: string): number {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, [binary, '--config', configPath, 'jobs', 'run', job], {
    env: environment,
    stdio: 'ignore',
    timeout: 30_000,
  });
  if (result.status !== 0) throw new Error(`resil jobs run ${job} exited ${result.status}`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/** Peak resident set of the process, MB, sampled every 20 ms from /proc until it exits. */
function peakRss(configPath: string, job: string): Promise<number> {
  return new Promise((resolvePeak, reject) => {
    const child = spawn(process.execPath, [binary, '--config', configPath, 'jobs', 'run', job], {
      env: environment,
      stdio: 'ignore',
    });
    let peak = 0;
    const sample = setInterval(() => {
      try {
        const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
        if (kb !== undefined) peak = Math.max(peak, Number(kb) / 1024);
      } catch {
        // Exited between two samples.
      }
    }, 20);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearInterval(sample);
      if (code === 0) resolvePeak(peak);
      else reject(new Error(`resil jobs run ${job} exited ${code}`));
    });
  });
}

export default async function isolation(options: BenchOptions): Promise<void> {
  if (!existsSync(join(repoRoot, 'dist/config/job-worker.js'))) {
    throw new Error('dist/ is missing: run `npm run build` before this bench.');
  }
  const rounds = options.smoke ? 2 : 15;
  const memoryRounds = options.smoke ? 1 : 5;
  const directory = mkdtempSync(join(tmpdir(), 'resil-bench-isolation-'));
  const times: string[] = [];
  const memory: string[] = [];
  try {
    for (const file of ['resil.config.ts', 'resil.config.mjs']) {
      const configPath = join(directory, file);
      writeFileSync(configPath, config);
      // Warm the file cache and jiti's cache of transpiled files.
      timeRun(configPath, 'in-process');
      timeRun(configPath, 'isolated');
      const inProcess: number[] = [];
      const isolated: number[] = [];
      for (let round = 0; round < rounds; round++) {
        inProcess.push(timeRun(configPath, 'in-process'));
        isolated.push(timeRun(configPath, 'isolated'));
      }
      const [a, b] = [median(inProcess), median(isolated)];
      times.push(`| ${file} | ${a.toFixed(0)} | ${b.toFixed(0)} | +${(b - a).toFixed(0)} |`);

      const rssInProcess: number[] = [];
      const rssIsolated: number[] = [];
      for (let round = 0; round < memoryRounds; round++) {
        rssInProcess.push(await peakRss(configPath, 'in-process-hold'));
        rssIsolated.push(await peakRss(configPath, 'isolated-hold'));
      }
      const [c, d] = [median(rssInProcess), median(rssIsolated)];
      memory.push(`| ${file} | ${c.toFixed(0)} | ${d.toFixed(0)} | +${(d - c).toFixed(0)} |`);
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  console.log('\n## `resil jobs run` of an empty job, wall time of the process\n');
  console.log('| config | in the process, median ms | isolated, median ms | one isolated run costs, ms |');
  console.log('|---|---:|---:|---:|');
  for (const row of times) console.log(row);
  console.log('\n## Peak RSS of a run that holds 1.5 s\n');
  console.log('| config | in the process, median MB | isolated, median MB | one worker costs, MB |');
  console.log('|---|---:|---:|---:|');
  for (const row of memory) console.log(row);
}
