/**
 * A burst: N jobs due at the same instant (`0 0 * * *` for N tenants, say) on K `resil run`
 * instances sharing one store, on Redis and on PostgreSQL, each a private server started here.
 * Per store: occurrences run (each job appends a line to a file), duplicates, occurrences lost,
 * start lateness after the instant (p50 / p99 / max), store commands per occurrence for the whole
 * fleet (Redis: INFO commandstats, every command a script runs included; PostgreSQL: committed
 * transactions, one per statement), and each instance's peak RSS. The instances start, settle,
 * then the instant comes; the window after it is BENCH_BURST_WINDOW_MS (default 30 s).
 *
 * `npm run bench -- burst` (after `npm run build`): N = 10,000 and K = 3, or BENCH_BURST_JOBS and
 * BENCH_BURST_INSTANCES; BENCH_BURST_STORES=redis (or postgres) for one store; BENCH_BURST_DETAIL=1
 * prints Redis's calls per command; BENCH_BURST_NIGHTS=2 makes the jobs due again one window later
 * (a second night: each instance then knows the ledgers it wrote); BENCH_BURST_NODE_ARGS gives node arguments to each instance (a
 * CPU profile: `--cpu-prof --cpu-prof-dir=<dir>`). The smoke run: 200 jobs on 2 instances. Linux
 * only (reads /proc).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { startPostgresServer } from '../support/postgres.ts';
import { type SpawnedProcess, spawnProcess } from '../support/processes.ts';
import { startRedisServer } from '../support/redis.ts';
import { type BenchOptions, formatNumber, printTable } from './harness.ts';

const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const binary = join(repoRoot, 'bin/resil.js');

/** What the same burst gave before claims were batched and retried (10,000 jobs, 3 instances, Redis). */
const before = {
  runs: '3,736 of 10,000',
  late: '3.4 s / 4.0 s / 4.0 s',
  commands: '36.8',
  rss: '340-355 MB',
};

interface StoreSetup {
  readonly name: 'redis' | 'postgres';
  /** The config's store, from the URL in `B_STORE_URL`. */
  readonly storeSource: string;
  start(): Promise<{ url: string; commands(): Promise<number>; stop(): Promise<void> }>;
}

const stores: StoreSetup[] = [
  {
    name: 'redis',
    storeSource: `import { Redis } from 'ioredis';
import { RedisLockStore } from 'resil/redis';
const store = new RedisLockStore(new Redis(process.env.B_STORE_URL), { prefix: 'burst:' });`,
    async start() {
      const server = await startRedisServer();
      const admin = new Redis(server.url);
      return {
        url: server.url,
        async commands() {
          const stats = await admin.info('commandstats');
          let total = 0;
          for (const match of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
            total += Number(match[2]);
            if (process.env.BENCH_BURST_DETAIL) console.log(`  ${match[1]}: ${match[2]}`);
          }
          return total;
        },
        async stop() {
          admin.disconnect();
          await server.stop();
        },
      };
    },
  },
  {
    name: 'postgres',
    storeSource: `import pg from 'pg';
import { PostgresLockStore } from 'resil/postgres';
const store = new PostgresLockStore(new pg.Pool({ connectionString: process.env.B_STORE_URL }));`,
    async start() {
      const server = await startPostgresServer();
      const admin = new pg.Pool({ connectionString: server.url, max: 1 });
      // The server's shutdown ends the idle connection with an error the bench has no use for.
      admin.on('error', () => {});
      return {
        url: server.url,
        async commands() {
          const { rows } = await admin.query<{ transactions: string }>(
            'SELECT xact_commit + xact_rollback AS transactions FROM pg_stat_database WHERE datname = current_database()',
          );
          return Number(rows[0]!.transactions);
        },
        async stop() {
          await admin.end();
          await server.stop();
        },
      };
    },
  },
];

function rssMegabytes(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kilobytes = /^VmRSS:\s+(\d+)/m.exec(status)?.[1];
    return kilobytes === undefined ? 0 : Number(kilobytes) / 1024;
  } catch {
    return 0;
  }
}

/** BENCH_BURST_NODE_ARGS: node's own arguments for each instance, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`. */
const nodeArguments = process.env.BENCH_BURST_NODE_ARGS?.split(' ').filter(Boolean) ?? [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function quantile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
}

/**
 * BENCH_BURST_DETAIL: each instance's log lines by message (a fire's by outcome and reason), and
 * every warning or error message, counted: what an instance did besides running jobs.
 */
function printLogSummary(runs: readonly SpawnedProcess[]): void {
  for (const [index, run] of runs.entries()) {
    const counts = new Map<string, number>();
    for (const line of run.output().split('\n')) {
      if (!line.startsWith('{')) continue;
      let entry: { level?: number; msg?: string; outcome?: string; reason?: string };
      try {
        entry = JSON.parse(line);
      } catch {
        continue;
      }
      const what =
        entry.outcome === undefined
          ? `${(entry.level ?? 0) >= 40 ? 'WARN ' : ''}${entry.msg}`
          : `fire: ${entry.outcome}${entry.reason ? ` (${entry.reason})` : ''}`;
      counts.set(what, (counts.get(what) ?? 0) + 1);
    }
    console.log(`  instance ${index}:`);
    for (const [what, count] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`    ${count} ${what}`);
  }
}

/** What one instant of a burst gave. */
interface InstantResult {
  runs: number;
  distinct: number;
  duplicates: number;
  lost: number;
  late: number[];
  commandsPerOccurrence: number;
}

/**
 * The burst, over `nights` instants `windowMs` apart (each job due at every one: 2 is a second
 * night, when each instance knows the ledgers it wrote at the first): one result per instant, and
 * each instance's peak RSS over all of them.
 */
async function burst(
  setup: StoreSetup,
  jobs: number,
  instances: number,
  windowMs: number,
  nights: number,
): Promise<{ instants: InstantResult[]; peakRss: number[] }> {
  const server = await setup.start();
  const directory = mkdtempSync(join(repoRoot, '.bench-burst-'));
  /** How long each job's run lasts after it records its start. */
  const jobMs = Number(process.env.BENCH_BURST_JOB_MS ?? 0);
  const records = join(directory, 'records.jsonl');
  const runs: SpawnedProcess[] = [];
  try {
    // Each instance loads the config and settles before the instant; 10,000 jobs take a few s.
    const leadMs = 5_000 + jobs * 1.2;
    let instant = new Date(Math.ceil((Date.now() + leadMs) / 1_000) * 1_000);
    // Every instant in one minute, so that one daily schedule holds them all.
    const spanMs = (nights - 1) * windowMs;
    if (instant.getUTCSeconds() * 1_000 + spanMs >= 60_000) {
      instant = new Date(Math.ceil(instant.getTime() / 60_000) * 60_000);
    }
    const instants = Array.from({ length: nights }, (_, night) => instant.getTime() + night * windowMs);
    const secondsList = instants.map((at) => new Date(at).getUTCSeconds()).join(',');
    const schedule = `${secondsList} ${instant.getUTCMinutes()} ${instant.getUTCHours()} * * *`;
    writeFileSync(
      join(directory, 'resil.config.ts'),
      `import { appendFileSync } from 'node:fs';
import { defineConfig, defineJob } from 'resil';
${setup.storeSource}
const jobs = [];
for (let index = 0; index < ${jobs}; index++) {
  jobs.push(defineJob({ name: 'tenant-' + index, schedule: '${schedule}', timezone: 'UTC', run: async (ctx) => {
    appendFileSync(process.env.B_RECORDS, JSON.stringify({ job: index, startedAt: Date.now(), scheduledAt: ctx.scheduledAt.getTime() }) + '\\n');
    if (${jobMs} > 0) await new Promise((resolve) => setTimeout(resolve, ${jobMs}));
  } }));
}
export default defineConfig({ store, jobs });
`,
    );
    for (let index = 0; index < instances; index++) {
      runs.push(
        spawnProcess(process.execPath, [...nodeArguments, binary, 'run'], {
          cwd: directory,
          name: `resil run #${index}`,
          env: {
            ...process.env,
            B_STORE_URL: server.url,
            B_RECORDS: records,
            NO_COLOR: '1',
            HOSTNAME: `burst-${index}`,
          },
        }),
      );
    }
    await Promise.all(runs.map((run) => run.waitForOutput(/runner started/, leadMs)));
    const peaks = runs.map(() => 0);
    const sampler = setInterval(() => {
      for (const [index, run] of runs.entries())
        peaks[index] = Math.max(peaks[index]!, rssMegabytes(run.pid));
    }, 200);
    const commands: number[] = [];
    for (const [night, at] of instants.entries()) {
      await sleep(at - Date.now() - 1_000);
      const before = await server.commands();
      // To the next night's count, or to the end of the last window.
      await sleep(at + windowMs - (night < nights - 1 ? 1_000 : 0) - Date.now());
      commands.push((await server.commands()) - before);
    }
    clearInterval(sampler);
    await Promise.all(runs.map((run) => run.stop(5_000)));
    if (process.env.BENCH_BURST_DETAIL) printLogSummary(runs);
    let lines: Array<{ job: number; startedAt: number; scheduledAt: number }> = [];
    try {
      lines = readFileSync(records, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line));
    } catch {
      // No run at all.
    }
    const results = instants.map((at, night): InstantResult => {
      const ofNight = lines.filter((line) => line.scheduledAt === at);
      const perJob = new Map<number, number>();
      for (const line of ofNight) perJob.set(line.job, (perJob.get(line.job) ?? 0) + 1);
      const late = ofNight.map((line) => line.startedAt - line.scheduledAt).sort((a, b) => a - b);
      return {
        runs: ofNight.length,
        distinct: perJob.size,
        duplicates: [...perJob.values()].filter((count) => count > 1).length,
        lost: jobs - perJob.size,
        late: [quantile(late, 0.5), quantile(late, 0.99), late.at(-1) ?? Number.NaN],
        commandsPerOccurrence: commands[night]! / jobs,
      };
    });
    return { instants: results, peakRss: peaks };
  } finally {
    await Promise.all(runs.map((run) => run.stop(1_000)));
    rmSync(directory, { recursive: true, force: true });
    await server.stop();
  }
}

export default async function (options: BenchOptions): Promise<void> {
  const jobs = options.smoke ? 200 : Number(process.env.BENCH_BURST_JOBS ?? 10_000);
  const instances = options.smoke ? 2 : Number(process.env.BENCH_BURST_INSTANCES ?? 3);
  const windowMs = options.smoke ? 5_000 : Number(process.env.BENCH_BURST_WINDOW_MS ?? 30_000);
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  // BENCH_BURST_NIGHTS=2: the jobs are due again one window later, as on a second night.
  const nights = options.smoke ? 1 : Number(process.env.BENCH_BURST_NIGHTS ?? 1);
  const rows: Array<Array<string | number>> = [];
  // BENCH_BURST_STORES=redis (or postgres) runs one store only.
  const only = process.env.BENCH_BURST_STORES?.split(',');
  for (const setup of stores.filter((each) => only === undefined || only.includes(each.name))) {
    const { instants, peakRss } = await burst(setup, jobs, instances, windowMs, nights);
    for (const [night, result] of instants.entries()) {
      rows.push([
        nights === 1 ? setup.name : `${setup.name}, night ${night + 1}`,
        `${formatNumber(result.distinct)} of ${formatNumber(jobs)}`,
        result.duplicates.toLocaleString('en-US'),
        result.lost.toLocaleString('en-US'),
        result.late.map(seconds).join(' / '),
        result.commandsPerOccurrence.toFixed(2),
        night === instants.length - 1 ? peakRss.map((mb) => mb.toFixed(0)).join(', ') : '',
      ]);
    }
  }
  rows.push(['before (redis)', before.runs, 0, '6,264', before.late, before.commands, before.rss]);
  printTable(
    `${formatNumber(jobs)} jobs due at one instant on ${instances} instances (window ${seconds(windowMs)}${nights > 1 ? `; due again ${nights - 1} time(s), a window apart` : ''})`,
    [
      'store',
      'occurrences run',
      'duplicates',
      'lost',
      'start late p50 / p99 / max',
      'store commands per occurrence (Redis: all, those scripts run included; PostgreSQL: statements)',
      'peak RSS MB per instance',
    ],
    rows,
  );
}
