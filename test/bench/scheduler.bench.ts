/**
 * Fire lateness of `resil run`'s engine against croner alone: how long after the schedule's instant
 * the job's function starts. Three setups run side by side in one process, interleaved: each fires
 * every third second, on its own second (0, 1, 2 mod 3), so they never delay each other while load
 * on the machine hits all of them alike:
 * - croner calling a function (the baseline);
 * - JobRunner with a MemoryLockStore: the engine's own cost (occurrence, store clock, lock, run
 *   ledger check, pipeline);
 * - JobRunner with a RedisLockStore: adds the store's round trips (TIME, acquire, ledger read).
 *
 * The first fire of each setup warms up (modules load, code compiles) and is not counted.
 *
 * `npm run bench -- scheduler` (BENCH_FIRES sets the fires per setup, default 20: about a minute).
 */
import { Cron } from 'croner';
import { Redis } from 'ioredis';
import pino from 'pino';
import { createLogger } from '../../src/cli/logger.ts';
import { MemoryLockStore } from '../../src/ledger/memory-store.ts';
import type { JobContext, ResolvedConfig } from '../../src/scheduler/job.ts';
import { JobRunner } from '../../src/scheduler/runner.ts';
import { RedisLockStore } from '../../src/stores/redis/store.ts';
import type { LockStore } from '../../src/strategies/lock/store.ts';
import { resolvedJob } from '../scheduler/fixtures.ts';
import { type BenchOptions, printTable } from './harness.ts';

/** Wall-clock time with sub-millisecond resolution. */
const preciseNow = () => performance.timeOrigin + performance.now();

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function median(sorted: number[]): number {
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

async function cronerAlone(schedule: string, fires: number): Promise<number[]> {
  const lateness: number[] = [];
  return new Promise((resolve) => {
    let expected: number | undefined;
    const cron = new Cron(schedule, () => {
      const now = preciseNow();
      if (expected !== undefined) lateness.push(now - expected);
      expected = cron.nextRun()?.getTime();
      if (lateness.length > fires) {
        lateness.shift(); // the warm-up fire
        cron.stop();
        resolve(lateness);
      }
    });
    expected = cron.nextRun()?.getTime();
  });
}

async function resilRunner(
  store: LockStore,
  schedule: string,
  fires: number,
  name: string,
): Promise<number[]> {
  const lateness: number[] = [];
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  const config: ResolvedConfig = {
    filepath: 'bench',
    store,
    instance: 'bench',
    shutdownGraceMs: 5_000,
    ledgerRetentionMs: 3_600_000,
    ledgerRecordLimit: 100,
    jobs: [
      resolvedJob({
        name,
        schedule,
        timezone: undefined,
        run: (ctx: JobContext) => {
          lateness.push(preciseNow() - ctx.scheduledAt.getTime());
          if (lateness.length > fires) {
            lateness.shift(); // the warm-up fire
            done();
          }
        },
      }),
    ],
  };
  // A real pino logger (writing to /dev/null): each fire pays for its log line as in production.
  const logger = createLogger({ destination: pino.destination({ dest: '/dev/null', sync: true }) });
  const runner = new JobRunner({ config, logger });
  await runner.start();
  await finished;
  await runner.stop();
  return lateness;
}

export default async function (options: BenchOptions): Promise<void> {
  const fires = options.smoke ? 1 : Number(process.env.BENCH_FIRES) || 20;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const client = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  client.on('error', () => {});
  const prefix = `resil-bench:${process.pid}:`;
  let redisStore: RedisLockStore | undefined;
  try {
    await client.connect();
    redisStore = new RedisLockStore(client, { prefix });
  } catch (error) {
    console.log(`(RedisLockStore row skipped: ${(error as Error).message})`);
  }

  const [croner, memory, redis] = await Promise.all([
    cronerAlone('*/3 * * * * *', fires),
    resilRunner(new MemoryLockStore(), '1-59/3 * * * * *', fires, 'bench-memory'),
    redisStore ? resilRunner(redisStore, '2-59/3 * * * * *', fires, 'bench-redis') : undefined,
  ]);
  if (redisStore) {
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
  }
  client.disconnect();

  const rows: Array<[string, number[]]> = [
    ['croner alone', croner],
    ['resil JobRunner, MemoryLockStore', memory],
  ];
  if (redis) rows.push(['resil JobRunner, RedisLockStore', redis]);
  const baseline = median([...croner].sort((a, b) => a - b));
  printTable(
    `fire lateness, ms after the scheduled instant (${fires} fires per row, interleaved${options.smoke ? '; smoke run: figures are meaningless' : ''})`,
    ['setup', 'median', 'p90', 'max', 'median vs croner'],
    rows.map(([name, values]) => {
      const sorted = [...values].sort((a, b) => a - b);
      const med = median(sorted);
      return [
        name,
        med.toFixed(2),
        percentile(sorted, 0.9).toFixed(2),
        sorted.at(-1)!.toFixed(2),
        `${med - baseline >= 0 ? '+' : ''}${(med - baseline).toFixed(2)}`,
      ];
    }),
  );
}
