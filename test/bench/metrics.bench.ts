/**
 * What `resil run --metrics` costs a fire, two ways in one run:
 *
 * - Fire lateness (how long after the scheduled instant the job's function starts) of two
 *   JobRunners side by side in one process, on a RedisLockStore (a MemoryLockStore without
 *   Redis): one without metrics, one with the metrics server of `--metrics` (its subscriber, the
 *   store probe every second, the last-success refresh) and a scraper fetching `/metrics` every
 *   250 ms. Each fires every other second, on its own second, so they never delay each other,
 *   while load on the machine hits both alike. The first fire of each warms up and is not counted.
 * - The subscriber's cost per run: a `started` and a `succeeded` event through the runner's event
 *   stream, with no subscriber and with the metrics one (prom-client counters and histograms).
 *
 * `npm run bench -- metrics` (BENCH_FIRES sets the fires per runner, default 20: about 45 s).
 */
import { Redis } from 'ioredis';
import pino from 'pino';
import { Registry } from 'prom-client';
import { createLogger } from '../../src/cli/logger.ts';
import { startMetrics } from '../../src/cli/metrics/index.ts';
import { JobMetrics } from '../../src/cli/metrics/job-metrics.ts';
import { MemoryLockStore } from '../../src/ledger/memory-store.ts';
import { type SchedulerEvent, SchedulerEvents } from '../../src/scheduler/events.ts';
import type { JobContext, ResolvedConfig, ResolvedJob } from '../../src/scheduler/job.ts';
import { JobRunner } from '../../src/scheduler/runner.ts';
import { RedisLockStore } from '../../src/stores/redis/store.ts';
import type { LockStore } from '../../src/strategies/lock/store.ts';
import { resolvedJob } from '../scheduler/fixtures.ts';
import { freePort } from '../support/processes.ts';
import { type BenchOptions, compare, printTable } from './harness.ts';

/** Wall-clock time with sub-millisecond resolution. */
const preciseNow = () => performance.timeOrigin + performance.now();

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function median(sorted: number[]): number {
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function benchJob(name: string, schedule: string, run: (ctx: JobContext) => void): ResolvedJob {
  return resolvedJob({ name, schedule, timezone: undefined, run });
}

async function lateness(
  store: LockStore,
  schedule: string,
  fires: number,
  withMetrics: boolean,
): Promise<number[]> {
  const name = withMetrics ? 'bench-with-metrics' : 'bench-without-metrics';
  const samples: number[] = [];
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  const config: ResolvedConfig = {
    filepath: 'bench',
    store,
    instance: name,
    shutdownGraceMs: 5_000,
    ledgerRetentionMs: 3_600_000,
    ledgerRecordLimit: 100,
    jobs: [
      benchJob(name, schedule, (ctx) => {
        samples.push(preciseNow() - ctx.scheduledAt.getTime());
        if (samples.length > fires) {
          samples.shift(); // the warm-up fire
          done();
        }
      }),
    ],
  };
  // A real pino logger (writing to /dev/null): each fire pays for its log line as in production.
  const logger = createLogger({ destination: pino.destination({ dest: '/dev/null', sync: true }) });
  const runner = new JobRunner({ config, logger });
  let scraper: NodeJS.Timeout | undefined;
  const metrics = withMetrics
    ? await startMetrics({ address: { host: '127.0.0.1', port: await freePort() }, runner, store, logger })
    : undefined;
  if (metrics) {
    scraper = setInterval(() => {
      fetch(`${metrics.url}/metrics`)
        .then((response) => response.text())
        .catch(() => {});
    }, 250);
  }
  await runner.start();
  await finished;
  clearInterval(scraper);
  await runner.stop();
  await metrics?.close();
  return samples;
}

/** A started + succeeded pair, as one run emits them. */
function runEvents(job: string): [SchedulerEvent, SchedulerEvent] {
  const base = {
    job,
    scheduledAt: new Date(Date.UTC(2026, 0, 1)),
    instance: 'bench',
    kind: 'scheduled' as const,
  };
  return [
    { ...base, type: 'started', token: 1, takeover: false, lateMs: 3 },
    { ...base, type: 'succeeded', token: 1, takeover: false, attempts: 1, durationMs: 12, lateMs: 3 },
  ];
}

export default async function (options: BenchOptions): Promise<void> {
  const fires = options.smoke ? 1 : Number(process.env.BENCH_FIRES) || 20;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const client = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  client.on('error', () => {});
  const prefix = `resil-bench-metrics:${process.pid}:`;
  let store: LockStore;
  let storeName = 'RedisLockStore';
  try {
    await client.connect();
    store = new RedisLockStore(client, { prefix });
  } catch (error) {
    console.log(`(Redis unavailable, MemoryLockStore instead: ${(error as Error).message})`);
    store = new MemoryLockStore();
    storeName = 'MemoryLockStore';
  }

  const [without, withMetrics] = await Promise.all([
    lateness(store, '*/2 * * * * *', fires, false),
    lateness(store, '1-59/2 * * * * *', fires, true),
  ]);
  if (storeName === 'RedisLockStore') {
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
  }
  client.disconnect();

  const sortedWithout = [...without].sort((a, b) => a - b);
  const sortedWith = [...withMetrics].sort((a, b) => a - b);
  const baseline = median(sortedWithout);
  printTable(
    `fire lateness, ms after the scheduled instant, JobRunner on ${storeName} (${fires} fires per row, interleaved${options.smoke ? '; smoke run: figures are meaningless' : ''})`,
    ['setup', 'median', 'p90', 'max', 'median vs without'],
    [
      ['without --metrics', sortedWithout],
      ['with --metrics, scraped every 250 ms', sortedWith],
    ].map(([name, sorted]) => {
      const values = sorted as number[];
      const med = median(values);
      return [
        name as string,
        med.toFixed(2),
        percentile(values, 0.9).toFixed(2),
        values.at(-1)!.toFixed(2),
        `${(med / baseline).toFixed(2)}x`,
      ];
    }),
  );

  const [started, succeeded] = runEvents('bench');
  const bare = new SchedulerEvents();
  const subscribed = new SchedulerEvents();
  const metrics = new JobMetrics(new Registry(), {
    jobs: [benchJob('bench', '* * * * * *', () => {})],
    clock: { now: () => Date.now(), offset: undefined },
  });
  subscribed.on((event) => metrics.record(event));
  const [bareRow, subscribedRow] = await compare(
    'one run (started + succeeded) through the event stream',
    [
      {
        name: 'no subscriber',
        run: () => {
          bare.emit(started);
          bare.emit(succeeded);
        },
      },
      {
        name: 'metrics subscriber',
        run: () => {
          subscribed.emit(started);
          subscribed.emit(succeeded);
        },
      },
    ],
    { ...options, baseline: 'no subscriber' },
  );
  const perRunMs = (subscribedRow!.nsPerOp - bareRow!.nsPerOp) / 1e6;
  console.log(
    `The subscriber adds ${(perRunMs * 1000).toFixed(2)} µs per run: ${((perRunMs / baseline) * 100).toFixed(3)}% of the median fire lateness without metrics (${baseline.toFixed(2)} ms).${options.smoke ? ' (smoke run: meaningless)' : ''}`,
  );
}
