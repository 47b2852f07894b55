/**
 * The scheduler at scale: 1k / 10k / 100k idle jobs with varied `m h * * *` schedules in
 * Europe/Berlin (none due while measured), each setup a fresh child process started one after
 * another, then measured side by side:
 * - `resil run` (the built binary, the default MemoryLockStore, the config in scale/resil.config.mjs);
 * - croner alone: one `Cron` per job (scale/croner-idle.mjs);
 * - node-cron: one task per job (scale/node-cron-idle.mjs).
 *
 * Per setup: the time from spawn until it says it started (`runner started` for resil), its RSS
 * (the whole process tree) once settled and at its peak, and its CPU while idle over a window.
 * Then `resil jobs list` with 10k jobs against a croner-only listing of the same next runs
 * (scale/croner-list.mjs), fresh processes, interleaved; last, resil's figures against the targets
 * of issue 10 (RSS judged at its peak).
 *
 * Linux only (reads /proc). Run after `npm run build`: `npm run bench -- scale`. BENCH_IDLE_MS sets
 * the idle window (default 60 s), BENCH_SETTLE_MS the wait before measuring (default 20 s);
 * croner alone at 100k jobs holds ~8 GB, so it runs only with BENCH_SCALE_CRONER_100K=1.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BenchOptions, formatNumber, printTable } from './harness.ts';

const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const scaleDirectory = join(repoRoot, 'test/bench/scale');
const binary = join(repoRoot, 'bin/resil.js');
const timezone = 'Europe/Berlin';

interface Setup {
  name: string;
  args: (jobsFile: string) => string[];
  /** The stdout text that says every job is scheduled. */
  startedMarker: string;
}

const setups: Setup[] = [
  {
    name: 'resil run',
    args: () => [binary, 'run', '--config', join(scaleDirectory, 'resil.config.mjs')],
    startedMarker: 'runner started',
  },
  {
    name: 'croner alone',
    args: (jobs) => [join(scaleDirectory, 'croner-idle.mjs'), jobs],
    startedMarker: 'started',
  },
  {
    name: 'node-cron',
    args: (jobs) => [join(scaleDirectory, 'node-cron-idle.mjs'), jobs],
    startedMarker: 'started',
  },
];

/** The local hour in `timezone`, `hoursAhead` from now. */
function hourIn(hoursAhead: number): number {
  const at = new Date(Date.now() + hoursAhead * 3_600_000);
  return Number(
    new Intl.DateTimeFormat('en-GB', { timeZone: timezone, hour: 'numeric', hourCycle: 'h23' }).format(at),
  );
}

/**
 * `count` jobs over the 60 x 22 = 1,320 `m h * * *` schedules outside this hour and the next (so
 * none is due while measured), spread evenly.
 */
function writeJobs(directory: string, count: number): { file: string; distinct: number } {
  const busy = new Set([hourIn(0), hourIn(1)]);
  const hours = Array.from({ length: 24 }, (_, hour) => hour).filter((hour) => !busy.has(hour));
  const schedules = hours.flatMap((hour) =>
    Array.from({ length: 60 }, (_, minute) => `${minute} ${hour} * * *`),
  );
  const jobs = Array.from({ length: count }, (_, i) => ({
    name: `job-${i}`,
    // 7,919 is prime to 1,320: consecutive jobs land on unrelated schedules.
    schedule: schedules[(i * 7_919) % schedules.length]!,
  }));
  const file = join(directory, `jobs-${count}.json`);
  writeFileSync(file, JSON.stringify({ timezone, jobs }));
  return { file, distinct: new Set(jobs.map((job) => job.schedule)).size };
}

function childEnvironment(jobsFile: string): NodeJS.ProcessEnv {
  return { ...process.env, RESIL_BENCH_JOBS: jobsFile, LOG_LEVEL: 'info', NO_COLOR: '1', REDIS_URL: '' };
}

/** A process and its descendants. */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

function statusKilobytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
}

/** CPU time the tree has used, in ms (schedstat's nanoseconds when the kernel keeps them). */
function cpuTimeMs(pids: number[]): number {
  let total = 0;
  for (const pid of pids) {
    try {
      total += Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
    } catch {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += ((Number(fields[11]) + Number(fields[12])) * 1_000) / 100; // utime + stime, 100 Hz
    }
  }
  return total;
}

interface Running {
  setup: Setup;
  child: ChildProcess;
  startMs: number;
}

/** Spawns the setup and resolves once it printed its started marker. */
function startSetup(setup: Setup, jobsFile: string): Promise<Running> {
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, setup.args(jobsFile), {
    cwd: repoRoot,
    env: childEnvironment(jobsFile),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      // Only the start of the output matters; later lines are dropped unread.
      if (seen.length < 4_096) seen += chunk.toString();
      if (seen.includes(setup.startedMarker)) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve({ setup, child, startMs: performance.now() - spawnedAt });
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code, signal) =>
      reject(
        new Error(`${setup.name} exited (${code ?? signal}) before it started:\n${stderr.slice(0, 2_000)}`),
      ),
    );
  });
}

function stopSetup(running: Running): Promise<void> {
  return new Promise((resolve) => {
    if (running.child.exitCode !== null || running.child.signalCode !== null) return resolve();
    running.child.once('exit', () => resolve());
    running.child.kill('SIGKILL');
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface IdleRow {
  name: string;
  startMs: number;
  rssMb: number;
  peakRssMb: number;
  idleCpuPercent: number;
  processes: number;
}

async function measureIdle(
  jobsFile: string,
  options: { settleMs: number; idleMs: number; skip: Set<string> },
): Promise<IdleRow[]> {
  const running: Running[] = [];
  try {
    // One after another: each start has the machine to itself.
    for (const setup of setups) {
      if (!options.skip.has(setup.name)) running.push(await startSetup(setup, jobsFile));
    }
    await sleep(options.settleMs);
    const trees = running.map((each) => processTree(each.child.pid!));
    const rssMb = trees.map(
      (pids) => pids.reduce((sum, pid) => sum + statusKilobytes(pid, 'VmRSS'), 0) / 1_024,
    );
    const peakRssMb = trees.map(
      (pids) => pids.reduce((sum, pid) => sum + statusKilobytes(pid, 'VmHWM'), 0) / 1_024,
    );
    // Side by side: load on the machine during the window hits every setup alike.
    const cpuBefore = trees.map(cpuTimeMs);
    const windowStarted = performance.now();
    await sleep(options.idleMs);
    const windowMs = performance.now() - windowStarted;
    const cpuAfter = trees.map(cpuTimeMs);
    return running.map((each, i) => ({
      name: each.setup.name,
      startMs: each.startMs,
      rssMb: rssMb[i]!,
      peakRssMb: peakRssMb[i]!,
      idleCpuPercent: ((cpuAfter[i]! - cpuBefore[i]!) / windowMs) * 100,
      processes: trees[i]!.length,
    }));
  } finally {
    await Promise.all(running.map(stopSetup));
  }
}

function ratio(value: number, baseline: number | undefined): string {
  if (baseline === undefined || !(baseline > 0)) return '-';
  return `${(value / baseline).toFixed(2)}x`;
}

function printIdle(
  count: number,
  distinct: number,
  rows: IdleRow[],
  options: { idleMs: number; smoke: boolean },
): void {
  const resil = rows.find((row) => row.name === 'resil run');
  const body = rows.map((row) => [
    row.name,
    formatNumber(row.startMs),
    formatNumber(row.rssMb),
    formatNumber(row.peakRssMb),
    row.idleCpuPercent.toFixed(3),
    String(row.processes),
  ]);
  for (const baseline of rows.filter((row) => row !== resil)) {
    if (resil === undefined) break;
    body.push([
      `resil run / ${baseline.name}`,
      ratio(resil.startMs, baseline.startMs),
      ratio(resil.rssMb, baseline.rssMb),
      ratio(resil.peakRssMb, baseline.peakRssMb),
      ratio(resil.idleCpuPercent, baseline.idleCpuPercent),
      '',
    ]);
  }
  printTable(
    `${count.toLocaleString('en-US')} idle jobs (${distinct.toLocaleString('en-US')} distinct schedules, ${timezone}), idle CPU over ${options.idleMs / 1_000} s${options.smoke ? '; smoke run: figures are meaningless' : ''}`,
    ['setup', 'start ms', 'RSS MB', 'peak RSS MB', 'idle CPU %', 'processes'],
    body,
  );
}

function timeCommand(args: string[], jobsFile: string): number {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, {
    cwd: repoRoot,
    env: childEnvironment(jobsFile),
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 120_000,
  });
  if (result.status !== 0) throw new Error(`${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Median wall time of each listing; returns resil's as a multiple of croner-only's. */
function measureList(count: number, jobsFile: string, rounds: number): number {
  const cases = [
    { name: 'croner-only listing', args: [join(scaleDirectory, 'croner-list.mjs'), jobsFile] },
    {
      name: 'resil jobs list',
      args: [binary, 'jobs', 'list', '--config', join(scaleDirectory, 'resil.config.mjs')],
    },
  ];
  for (const { args } of cases) timeCommand(args, jobsFile); // warm the file cache
  const samples = cases.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    for (const [i, { args }] of cases.entries()) samples[i]!.push(timeCommand(args, jobsFile));
  }
  const medians = samples.map(median);
  printTable(
    `listing ${count.toLocaleString('en-US')} jobs' next runs, fresh process each, median of ${rounds}`,
    ['command', 'median ms', 'vs croner-only'],
    cases.map(({ name }, i) => [name, formatNumber(medians[i]!), ratio(medians[i]!, medians[0])]),
  );
  return medians[1]! / medians[0]!;
}

/** The targets of issue 10, each as `ok` or `MISSED` with the figure it was judged on. */
function printTargets(idle: Map<number, IdleRow | undefined>, listRatio: number): void {
  const lines: string[] = [];
  const judge = (what: string, figure: string, met: boolean) =>
    lines.push(`- ${what}: ${figure} ${met ? 'ok' : 'MISSED'}`);
  const tenK = idle.get(10_000);
  if (tenK !== undefined) {
    judge(
      '10k jobs, RSS <= 100 MB',
      `${formatNumber(tenK.rssMb)} MB (peak ${formatNumber(tenK.peakRssMb)} MB)`,
      tenK.peakRssMb <= 100,
    );
    judge('10k jobs, idle CPU <= 0.2 %', `${tenK.idleCpuPercent.toFixed(3)} %`, tenK.idleCpuPercent <= 0.2);
    judge("10k jobs, 'runner started' <= 2 s", `${formatNumber(tenK.startMs)} ms`, tenK.startMs <= 2_000);
  }
  const hundredK = idle.get(100_000);
  if (hundredK !== undefined) {
    judge(
      '100k jobs, RSS <= 400 MB',
      `${formatNumber(hundredK.rssMb)} MB (peak ${formatNumber(hundredK.peakRssMb)} MB)`,
      hundredK.peakRssMb <= 400,
    );
  }
  judge('jobs list within 1.5x of croner-only', `${listRatio.toFixed(2)}x`, listRatio <= 1.5);
  console.log(`\n### targets (resil run)\n\n${lines.join('\n')}\n`);
}

export default async function scale(options: BenchOptions): Promise<void> {
  if (process.platform !== 'linux') {
    console.log('(scale bench skipped: it reads /proc, Linux only)');
    return;
  }
  if (!existsSync(join(repoRoot, 'dist/cli/main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` before this bench.');
  }
  const sizes = options.smoke ? [1_000] : [1_000, 10_000, 100_000];
  const settleMs = options.smoke ? 200 : Number(process.env.BENCH_SETTLE_MS) || 20_000;
  const idleMs = options.smoke ? 1_000 : Number(process.env.BENCH_IDLE_MS) || 60_000;
  const directory = mkdtempSync(join(tmpdir(), 'resil-bench-scale-'));
  const resilRows = new Map<number, IdleRow | undefined>();
  try {
    for (const count of sizes) {
      const { file, distinct } = writeJobs(directory, count);
      const skip = new Set<string>();
      if (count >= 100_000 && !process.env.BENCH_SCALE_CRONER_100K) {
        skip.add('croner alone');
        console.log(
          '(croner alone at 100,000 jobs skipped: ~80 KB per job, ~8 GB; BENCH_SCALE_CRONER_100K=1 runs it)',
        );
      }
      const rows = await measureIdle(file, { settleMs, idleMs, skip });
      printIdle(count, distinct, rows, { idleMs, smoke: options.smoke });
      resilRows.set(
        count,
        rows.find((row) => row.name === 'resil run'),
      );
    }
    const listCount = options.smoke ? 1_000 : 10_000;
    const listRatio = measureList(listCount, writeJobs(directory, listCount).file, options.smoke ? 1 : 5);
    // Smoke figures judge nothing (1k jobs, a 1 s window).
    if (!options.smoke) printTargets(resilRows, listRatio);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
