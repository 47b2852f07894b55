import { createServer } from 'node:net';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parseMetricsAddress } from '../../src/cli/metrics/address.ts';
import { startMetrics } from '../../src/cli/metrics/index.ts';
import { JobMetrics, latenessBuckets } from '../../src/cli/metrics/job-metrics.ts';
import { LastSuccessRefresher } from '../../src/cli/metrics/last-success.ts';
import { readinessOf } from '../../src/cli/metrics/readiness.ts';
import { StoreProbe, type StoreProbeState } from '../../src/cli/metrics/store-probe.ts';
import { isUsageError } from '../../src/cli/usage-error.ts';
import { MemoryLockStore } from '../../src/ledger/memory-store.ts';
import { type SchedulerEvent, SchedulerEvents } from '../../src/scheduler/events.ts';
import type { ResolvedJob } from '../../src/scheduler/job.ts';
import type { ClockOffset } from '../../src/scheduler/store-clock.ts';
import type { LockStore } from '../../src/strategies/lock/store.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';
import { resolvedJob } from '../scheduler/fixtures.ts';
import { freePort } from '../support/processes.ts';
import { httpGet, parseMetrics, type Sample, sampleValue } from './metrics-support.ts';

function job(name: string, schedule = '*/10 * * * * *', lock: ResolvedJob['lock'] = false): ResolvedJob {
  return resolvedJob({ name, schedule, run: () => {}, lock });
}

const base = (name: string, scheduledAt: number) => ({
  job: name,
  scheduledAt: new Date(scheduledAt),
  instance: 'test',
  kind: 'scheduled' as const,
});
const started = (name: string, at: number, lateMs?: number): SchedulerEvent => ({
  ...base(name, at),
  type: 'started',
  token: 1,
  takeover: false,
  lateMs,
});
const finished = (
  name: string,
  at: number,
  type: 'succeeded' | 'failed',
  durationMs: number,
  extra: { fenceRejected?: boolean } = {},
): SchedulerEvent => ({
  ...base(name, at),
  type,
  token: 1,
  takeover: false,
  attempts: 1,
  durationMs,
  lateMs: 5,
  ...extra,
});
const skipped = (name: string, at: number, reason: 'overlap' | 'paused'): SchedulerEvent => ({
  ...base(name, at),
  type: 'skipped',
  reason,
  durationMs: 1,
  lateMs: undefined,
});

async function samplesOf(registry: Registry): Promise<Sample[]> {
  return parseMetrics(await registry.metrics());
}

describe('parseMetricsAddress', () => {
  it.each([
    ['9464', '127.0.0.1', 9464],
    [' 9464 ', '127.0.0.1', 9464],
    ['1', '127.0.0.1', 1],
    ['65535', '127.0.0.1', 65535],
    ['0.0.0.0:9464', '0.0.0.0', 9464],
    ['localhost:9464', 'localhost', 9464],
    ['metrics.internal:80', 'metrics.internal', 80],
    ['[::1]:9464', '::1', 9464],
    ['[::]:9464', '::', 9464],
  ])('%j binds %s:%i', (value, host, port) => {
    expect(parseMetricsAddress(value)).toEqual({ host, port });
  });

  it.each([
    ['', 'it is empty'],
    ['abc', '"abc" is not a port number'],
    ['94.64', '"94.64" is not a port number'],
    ['-1', '"-1" is not a port number'],
    ['0', 'port 0 is out of range 1-65535'],
    ['65536', 'port 65536 is out of range 1-65535'],
    [':9464', 'the host before ":" is empty'],
    ['host:', 'the port is missing'],
    ['::1:9464', 'an IPv6 host needs brackets'],
    ['[::1]', 'a port must follow the IPv6 address'],
    ['[::1:9464', 'the IPv6 address has no closing "]"'],
    ['[nope]:9464', '"nope" is not an IPv6 address'],
    ['bad_host!:9464', '"bad_host!" is not a host name or IP address'],
  ])('%j is a usage error: %s', (value, why) => {
    let thrown: unknown;
    try {
      parseMetricsAddress(value);
    } catch (error) {
      thrown = error;
    }
    expect(isUsageError(thrown)).toBe(true);
    expect((thrown as Error).message).toContain(`invalid --metrics ${JSON.stringify(value)}: ${why}`);
  });
});

describe('JobMetrics: scheduler events to metrics', () => {
  const setup = (offset?: ClockOffset) => {
    const time = new FakeTimeProvider(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
    const clock = { now: () => time.now(), offset };
    const registry = new Registry();
    const metrics = new JobMetrics(registry, {
      jobs: [job('report', '0 2 * * *'), job('tick')],
      clock,
    });
    return { time, clock, registry, metrics };
  };

  it('every scheduled job reports zeroed counters and gauges from the start, labelled job_name, never job', async () => {
    const { registry } = setup();
    const samples = await samplesOf(registry);
    for (const name of ['report', 'tick']) {
      for (const outcome of ['success', 'failure'])
        expect(sampleValue(samples, 'resil_job_runs_total', { job_name: name, outcome })).toBe(0);
      expect(sampleValue(samples, 'resil_job_running', { job_name: name })).toBe(0);
      expect(sampleValue(samples, 'resil_lock_lost_total', { job_name: name })).toBe(0);
      expect(sampleValue(samples, 'resil_fence_rejections_total', { job_name: name })).toBe(0);
    }
    expect(sampleValue(samples, 'resil_store_up')).toBe(0);
    // Unknown until the runner learnt it: absent, not a made-up 0.
    expect(sampleValue(samples, 'resil_store_clock_offset_seconds')).toBeUndefined();
    expect(samples.some((sample) => 'job' in sample.labels)).toBe(false);
  });

  it('a run: lateness from started, the outcome, its duration, running 1 then 0', async () => {
    const { registry, metrics } = setup();
    const at = Date.UTC(2026, 0, 1, 0, 0, 10);
    const succeeded: Array<[string, number]> = [];
    metrics.onSucceeded = (name, scheduledAt) => succeeded.push([name, scheduledAt]);
    metrics.record(started('tick', at, 30));
    let samples = await samplesOf(registry);
    expect(sampleValue(samples, 'resil_job_running', { job_name: 'tick' })).toBe(1);
    expect(sampleValue(samples, 'resil_job_lateness_seconds_count', { job_name: 'tick' })).toBe(1);
    expect(sampleValue(samples, 'resil_job_lateness_seconds_sum', { job_name: 'tick' })).toBeCloseTo(0.03);
    expect(sampleValue(samples, 'resil_job_lateness_seconds_bucket', { job_name: 'tick', le: '0.025' })).toBe(
      0,
    );
    expect(sampleValue(samples, 'resil_job_lateness_seconds_bucket', { job_name: 'tick', le: '0.05' })).toBe(
      1,
    );
    const buckets = samples.filter(
      (sample) => sample.name === 'resil_job_lateness_seconds_bucket' && sample.labels.job_name === 'tick',
    );
    expect(buckets.map((sample) => sample.labels.le)).toEqual([...latenessBuckets.map(String), '+Inf']);

    metrics.record(finished('tick', at, 'succeeded', 1_500));
    samples = await samplesOf(registry);
    expect(sampleValue(samples, 'resil_job_runs_total', { job_name: 'tick', outcome: 'success' })).toBe(1);
    expect(sampleValue(samples, 'resil_job_runs_total', { job_name: 'tick', outcome: 'failure' })).toBe(0);
    expect(sampleValue(samples, 'resil_job_duration_seconds_count', { job_name: 'tick' })).toBe(1);
    expect(sampleValue(samples, 'resil_job_duration_seconds_sum', { job_name: 'tick' })).toBe(1.5);
    expect(sampleValue(samples, 'resil_job_duration_seconds_bucket', { job_name: 'tick', le: '1' })).toBe(0);
    expect(sampleValue(samples, 'resil_job_duration_seconds_bucket', { job_name: 'tick', le: '5' })).toBe(1);
    expect(sampleValue(samples, 'resil_job_running', { job_name: 'tick' })).toBe(0);
    expect(succeeded).toEqual([['tick', at]]);
  });

  it('failures, fence rejections, skips by reason and lost leases; retries and timeouts count nothing', async () => {
    const { registry, metrics } = setup();
    const at = Date.UTC(2026, 0, 1, 0, 0, 10);
    metrics.record(started('tick', at, 1));
    metrics.record({ ...base('tick', at), type: 'retrying', attempt: 1, delayMs: 10, error: new Error('x') });
    metrics.record({ ...base('tick', at), type: 'timed-out', attempt: 2, timeoutMs: 100 });
    metrics.record({ ...base('tick', at), type: 'lock-lost', key: 'tick' });
    metrics.record(finished('tick', at, 'failed', 20, { fenceRejected: true }));
    metrics.record(finished('tick', at + 10_000, 'failed', 20));
    metrics.record(skipped('tick', at + 20_000, 'overlap'));
    metrics.record(skipped('tick', at + 30_000, 'overlap'));
    metrics.record(skipped('report', at, 'paused'));
    metrics.record({
      ...base('tick', at),
      type: 'stray-error',
      origin: 'unhandled-rejection',
      error: new Error('late'),
    });
    const samples = await samplesOf(registry);
    expect(sampleValue(samples, 'resil_job_runs_total', { job_name: 'tick', outcome: 'failure' })).toBe(2);
    expect(sampleValue(samples, 'resil_job_runs_total', { job_name: 'tick', outcome: 'success' })).toBe(0);
    expect(sampleValue(samples, 'resil_fence_rejections_total', { job_name: 'tick' })).toBe(1);
    expect(sampleValue(samples, 'resil_lock_lost_total', { job_name: 'tick' })).toBe(1);
    expect(sampleValue(samples, 'resil_job_stray_errors_total', { job_name: 'tick' })).toBe(1);
    expect(sampleValue(samples, 'resil_job_stray_errors_total', { job_name: 'report' })).toBe(0);
    expect(sampleValue(samples, 'resil_job_skips_total', { job_name: 'tick', reason: 'overlap' })).toBe(2);
    expect(sampleValue(samples, 'resil_job_skips_total', { job_name: 'report', reason: 'paused' })).toBe(1);
    // The failure without a started event (never ran) does not drive running below 0.
    expect(sampleValue(samples, 'resil_job_running', { job_name: 'tick' })).toBe(0);
    expect(sampleValue(samples, 'resil_job_duration_seconds_count', { job_name: 'tick' })).toBe(2);
  });

  it('running stays 1 while any of two concurrent runs (allow-all) is in progress', async () => {
    const { registry, metrics } = setup();
    const running = async () =>
      sampleValue(await samplesOf(registry), 'resil_job_running', { job_name: 'tick' });
    metrics.record(started('tick', 10_000, 1));
    metrics.record(started('tick', 20_000, 1));
    metrics.record(finished('tick', 10_000, 'succeeded', 5));
    expect(await running()).toBe(1);
    metrics.record(finished('tick', 20_000, 'succeeded', 5));
    expect(await running()).toBe(0);
  });

  it('next run: the schedule instant after the store clock, recomputed once it has passed', async () => {
    const { time, registry } = setup();
    const next = async (name: string) =>
      sampleValue(await samplesOf(registry), 'resil_job_next_run_timestamp_seconds', { job_name: name });
    expect(await next('tick')).toBe(Date.UTC(2026, 0, 1, 0, 0, 10) / 1000);
    expect(await next('report')).toBe(Date.UTC(2026, 0, 1, 2, 0, 0) / 1000);
    await time.advance(9_700);
    expect(await next('tick')).toBe(Date.UTC(2026, 0, 1, 0, 0, 20) / 1000);
    expect(await next('report')).toBe(Date.UTC(2026, 0, 1, 2, 0, 0) / 1000);
  });

  it('the clock offset in seconds once known; last success set and removed; store up', async () => {
    const { registry, metrics, clock } = setup();
    (clock as { offset: ClockOffset | undefined }).offset = { offsetMs: -2_000, uncertaintyMs: 0.5 };
    metrics.setLastSuccess('report', Date.UTC(2026, 0, 1, 2, 0, 0));
    metrics.setStoreUp(true);
    let samples = await samplesOf(registry);
    expect(sampleValue(samples, 'resil_store_clock_offset_seconds')).toBe(-2);
    expect(sampleValue(samples, 'resil_job_last_success_timestamp_seconds', { job_name: 'report' })).toBe(
      Date.UTC(2026, 0, 1, 2, 0, 0) / 1000,
    );
    expect(sampleValue(samples, 'resil_store_up')).toBe(1);
    metrics.setLastSuccess('report', undefined);
    samples = await samplesOf(registry);
    expect(
      sampleValue(samples, 'resil_job_last_success_timestamp_seconds', { job_name: 'report' }),
    ).toBeUndefined();
  });
});

describe('StoreProbe', () => {
  const probeOf = (read: () => Promise<unknown>, time: FakeTimeProvider) => {
    const results: StoreProbeState[] = [];
    const probe = new StoreProbe(read, {
      time,
      intervalMs: 1_000,
      timeoutMs: 1_000,
      describeError: (error) => `described: ${(error as Error).message}`,
      onResult: (state) => results.push(state),
    });
    return { probe, results };
  };

  it('up after the first answer; down with the reason when the store fails; up again when it answers', async () => {
    const time = new FakeTimeProvider();
    let failure: Error | undefined;
    let calls = 0;
    const { probe, results } = probeOf(async () => {
      calls++;
      if (failure) throw failure;
      return 1;
    }, time);
    expect(probe.state).toMatchObject({ up: false, reason: 'no answer from the store yet' });
    probe.start();
    await time.advance(0);
    expect(probe.state).toMatchObject({ up: true, reason: undefined, lastAnswerAt: time.now() });
    const upSince = probe.state.since;
    await time.advance(3_000);
    expect(calls).toBe(4);
    expect(probe.state.since).toBe(upSince);

    failure = new Error('connect ECONNREFUSED');
    const failedAt = time.now();
    await time.advance(1_000);
    expect(probe.state).toMatchObject({
      up: false,
      reason: 'described: connect ECONNREFUSED',
      since: failedAt + 1_000,
    });
    failure = undefined;
    await time.advance(1_000);
    expect(probe.state.up).toBe(true);
    expect(results.map((state) => state.up)).toEqual([true, true, true, true, false, true]);
    probe.stop();
    expect(time.pendingTimers).toBe(0);
  });

  it('a store that hangs: down after the timeout, no second call while the first is unanswered', async () => {
    const time = new FakeTimeProvider();
    let answer: (() => void) | undefined;
    let calls = 0;
    const { probe } = probeOf(() => {
      calls++;
      return new Promise<void>((resolve) => {
        answer = resolve;
      });
    }, time);
    probe.start();
    await time.advance(999);
    expect(probe.state.reason).toBe('no answer from the store yet');
    await time.advance(1);
    expect(probe.state).toMatchObject({
      up: false,
      reason: 'described: the store did not answer within 1000 ms',
    });
    await time.advance(3_000);
    expect(calls).toBe(1);
    expect(probe.state.reason).toMatch(/has not answered a probe sent over 1000 ms ago/);
    answer!(); // late: not counted as an answer within the timeout
    await time.advance(0);
    expect(probe.state.up).toBe(false);
    await time.advance(1_000);
    expect(calls).toBe(2);
    answer!();
    await time.advance(0);
    expect(probe.state.up).toBe(true);
    probe.stop();
  });

  it('a store that throws synchronously is a failing store', async () => {
    const time = new FakeTimeProvider();
    const { probe } = probeOf(() => {
      throw new Error('sync');
    }, time);
    probe.start();
    await time.advance(0);
    expect(probe.state).toMatchObject({ up: false, reason: 'described: sync' });
    probe.stop();
  });
});

describe('LastSuccessRefresher', () => {
  const jobs = [job('report', '0 2 * * *', { key: 'reports', ttlMs: 30_000, waitMs: 0 }), job('tick')];

  it('reads every job from the ledger (under its ledger key) at start, then every refreshMs, and one job after its success', async () => {
    const time = new FakeTimeProvider();
    const reads: string[] = [];
    const values = new Map<string, number | undefined>([
      ['report', 1_000],
      ['tick', undefined],
    ]);
    const set: Array<[string, number | undefined]> = [];
    const refresher = new LastSuccessRefresher({
      ledger: {
        lastCompleted: async (name, options) => {
          reads.push(`${name}@${options?.key}`);
          return values.get(name);
        },
      },
      jobs,
      set: (name, value) => set.push([name, value]),
      time,
      refreshMs: 30_000,
    });
    refresher.start();
    await refresher.settled();
    expect(reads).toEqual(['report@reports', 'tick@tick']);
    expect(set).toEqual([
      ['report', 1_000],
      ['tick', undefined],
    ]);
    values.set('tick', 2_000);
    refresher.succeeded('tick', 2_000);
    await refresher.settled();
    expect(reads.at(-1)).toBe('tick@tick');
    expect(set.at(-1)).toEqual(['tick', 2_000]);
    await time.advance(29_999);
    expect(reads).toHaveLength(3);
    await time.advance(1);
    await refresher.settled();
    expect(reads).toHaveLength(5);
    refresher.stop();
    expect(time.pendingTimers).toBe(0);
  });

  it('a failing or hanging read keeps the last value; at most `concurrency` reads in flight', async () => {
    const time = new FakeTimeProvider();
    const many = Array.from({ length: 10 }, (_, index) => job(`job-${index}`));
    let inFlight = 0;
    let most = 0;
    const errors: string[] = [];
    const set: string[] = [];
    const refresher = new LastSuccessRefresher({
      ledger: {
        lastCompleted: async (name) => {
          inFlight++;
          most = Math.max(most, inFlight);
          await Promise.resolve();
          inFlight--;
          if (name === 'job-3') throw new Error('WRONGPASS');
          return 5;
        },
      },
      jobs: many,
      set: (name) => set.push(name),
      onError: (name, error) => errors.push(`${name}: ${(error as Error).message}`),
      time,
      concurrency: 2,
    });
    refresher.start();
    await refresher.settled();
    expect(most).toBe(2);
    expect(errors).toEqual(['job-3: WRONGPASS']);
    expect(set).toHaveLength(9);
    expect(set).not.toContain('job-3');
    refresher.stop();
  });

  it('an older read answering after a newer one does not move the value back', async () => {
    const answers: Array<(value: number) => void> = [];
    const set: Array<[string, number | undefined]> = [];
    const refresher = new LastSuccessRefresher({
      ledger: { lastCompleted: () => new Promise<number>((resolve) => answers.push(resolve)) },
      jobs: [job('tick')],
      set: (name, value) => set.push([name, value]),
      time: new FakeTimeProvider(),
    });
    refresher.start(); // the round's read of tick, in flight
    refresher.succeeded('tick', 2_000); // a second read, after the success here
    await Promise.resolve();
    expect(answers).toHaveLength(2);
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    answers[1]!(2_000); // the newer read answers first
    await turn();
    expect(set).toEqual([['tick', 2_000]]);
    answers[0]!(1_000); // the older one late, from before the success
    await refresher.settled();
    expect(set).toEqual([['tick', 2_000]]);
    refresher.stop();
  });

  it("without a run ledger: this instance's own latest success", () => {
    const set: Array<[string, number | undefined]> = [];
    const refresher = new LastSuccessRefresher({
      ledger: undefined,
      jobs,
      set: (name, value) => set.push([name, value]),
      time: new FakeTimeProvider(),
    });
    refresher.start();
    refresher.succeeded('tick', 20_000);
    refresher.succeeded('tick', 10_000); // an older occurrence finishing late
    refresher.succeeded('unknown', 30_000);
    expect(set).toEqual([['tick', 20_000]]);
    refresher.stop();
  });
});

describe('readinessOf', () => {
  const up: StoreProbeState = {
    up: true,
    reason: undefined,
    since: 0,
    lastAnswerAt: 1_000,
    roundTripMs: 0.42,
  };
  const offset = { offsetMs: 1.23, uncertaintyMs: 0.2 };

  it('200 with {status: pass} when the store answers and the offset is known; ?verbose lists every check', () => {
    expect(readinessOf({ store: up, clockOffset: offset, stopping: false }, false)).toEqual({
      statusCode: 200,
      report: { status: 'pass' },
    });
    const verbose = readinessOf({ store: up, clockOffset: offset, stopping: false }, true);
    expect(verbose.statusCode).toBe(200);
    expect(verbose.report.checks).toEqual({
      store: {
        status: 'pass',
        since: '1970-01-01T00:00:00.000Z',
        lastAnswerAt: '1970-01-01T00:00:01.000Z',
        roundTripMs: 0.4,
      },
      clock: { status: 'pass', offsetMs: 1.2, uncertaintyMs: 0.2 },
      runner: { status: 'pass' },
    });
  });

  it('503 naming only the failing checks: the store, an unknown offset, a stopping runner', () => {
    const down = { ...up, up: false, reason: 'WRONGPASS invalid username-password pair' };
    expect(readinessOf({ store: down, clockOffset: offset, stopping: false }, false)).toEqual({
      statusCode: 503,
      report: {
        status: 'fail',
        checks: {
          store: {
            status: 'fail',
            reason: 'WRONGPASS invalid username-password pair',
            since: '1970-01-01T00:00:00.000Z',
            lastAnswerAt: '1970-01-01T00:00:01.000Z',
            roundTripMs: 0.4,
          },
        },
      },
    });
    const unknown = readinessOf({ store: up, clockOffset: undefined, stopping: true }, false);
    expect(unknown.statusCode).toBe(503);
    expect(Object.keys(unknown.report.checks!)).toEqual(['clock', 'runner']);
    expect(unknown.report.checks!.runner!.reason).toMatch(/stopping/);
  });

  it('a store without a clock to probe passes', () => {
    const report = readinessOf({ store: undefined, clockOffset: offset, stopping: false }, true);
    expect(report.statusCode).toBe(200);
    expect(report.report.checks!.store).toMatchObject({
      status: 'pass',
      probe: expect.stringMatching(/no clock/),
    });
  });
});

describe('startMetrics: the HTTP server, in process', () => {
  const logger = { debug() {}, info() {}, warn() {}, error() {} };

  async function started(store: LockStore, options: { offset?: ClockOffset } = {}) {
    const time = new FakeTimeProvider();
    const events = new SchedulerEvents();
    const clock = {
      now: () => time.now(),
      offset: options.offset as ClockOffset | undefined,
      sync: async () => {
        clock.offset = { offsetMs: 0, uncertaintyMs: 0 };
        return clock.offset;
      },
    };
    const port = await freePort();
    const server = await startMetrics({
      address: { host: '127.0.0.1', port },
      runner: { jobs: [job('tick')], clock, on: (listener) => events.on(listener) },
      store,
      logger,
      time,
    });
    return { server, time, events, clock, port, base: `http://127.0.0.1:${port}` };
  }

  it('404 for other paths, 405 for other methods, HEAD without a body; a scrape does not wait for a hanging ledger', async () => {
    const store = new MemoryLockStore();
    // A ledger read that never answers: the last-success refresh hangs, scrapes must not.
    store.lastCompleted = () => new Promise(() => {});
    const { server, base, events } = await started(store);
    try {
      for (const path of ['/', '/metrics/', '/health', '/readyz/x', '/favicon.ico']) {
        const answer = await httpGet(`${base}${path}`);
        expect(answer.status, path).toBe(404);
      }
      const post = await httpGet(`${base}/metrics`, { method: 'POST' });
      expect(post.status).toBe(405);
      expect(post.headers.allow).toBe('GET, HEAD');
      const head = await httpGet(`${base}/livez`, { method: 'HEAD' });
      expect(head).toMatchObject({ status: 200, body: '' });
      expect(JSON.parse((await httpGet(`${base}/livez`)).body)).toEqual({ status: 'pass' });

      events.emit(skipped('tick', 10_000, 'overlap'));
      const scraped = await httpGet(`${base}/metrics`, { timeoutMs: 2_000 });
      expect(scraped.status).toBe(200);
      expect(scraped.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      const samples = parseMetrics(scraped.body);
      expect(sampleValue(samples, 'resil_job_skips_total', { job_name: 'tick', reason: 'overlap' })).toBe(1);
      // The in-memory store has no clock to probe: it is up by definition.
      expect(sampleValue(samples, 'resil_store_up')).toBe(1);
      expect(samples.some((sample) => sample.name === 'process_cpu_user_seconds_total')).toBe(true);
    } finally {
      await server.close();
    }
    await expect(httpGet(`${base}/livez`)).rejects.toThrow(/ECONNREFUSED/);
  });

  it('/readyz follows the probe: 503 until the store answered, 200, 503 with the reason, 503 once stopping', async () => {
    let failure: Error | undefined;
    const store = Object.assign(new MemoryLockStore(), {
      now: async () => {
        if (failure) throw failure;
        return Date.now();
      },
    });
    const { server, base, time, clock } = await started(store);
    const readyz = async (query = '') => {
      const answer = await httpGet(`${base}/readyz${query}`);
      expect(answer.headers['content-type']).toBe('application/json');
      return { status: answer.status, body: JSON.parse(answer.body) };
    };
    try {
      // started() returned after the first probe was sent; the fake clock has not moved.
      await time.advance(0);
      // The probe answered, and taught the clock its offset (it was unknown).
      expect(clock.offset).toEqual({ offsetMs: 0, uncertaintyMs: 0 });
      expect(await readyz()).toEqual({ status: 200, body: { status: 'pass' } });
      failure = new Error('connect ECONNREFUSED 127.0.0.1:6390');
      await time.advance(1_000);
      const down = await readyz();
      expect(down).toMatchObject({
        status: 503,
        body: {
          status: 'fail',
          checks: { store: { status: 'fail', reason: 'connect ECONNREFUSED 127.0.0.1:6390' } },
        },
      });
      expect(Object.keys(down.body.checks)).toEqual(['store']);
      expect(Object.keys((await readyz('?verbose')).body.checks)).toEqual(['store', 'clock', 'runner']);
      const scraped = parseMetrics((await httpGet(`${base}/metrics`)).body);
      expect(sampleValue(scraped, 'resil_store_up')).toBe(0);
      failure = undefined;
      await time.advance(1_000);
      expect((await readyz()).status).toBe(200);
      server.stopping();
      expect(await readyz()).toMatchObject({ status: 503, body: { checks: { runner: { status: 'fail' } } } });
    } finally {
      await server.close();
    }
    expect(time.pendingTimers).toBe(0);
  });

  it('a port in use: a UsageError naming the address and EADDRINUSE', async () => {
    const blocker = createServer();
    const port = await new Promise<number>((resolve) =>
      blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as { port: number }).port)),
    );
    try {
      const attempt = startMetrics({
        address: { host: '127.0.0.1', port },
        runner: {
          jobs: [],
          clock: { now: () => 0, offset: undefined, sync: async () => ({ offsetMs: 0, uncertaintyMs: 0 }) },
          on: () => () => {},
        },
        store: new MemoryLockStore(),
        logger,
      });
      await expect(attempt).rejects.toSatisfy(isUsageError);
      await expect(attempt).rejects.toThrow(
        `--metrics 127.0.0.1:${port}: cannot listen: the port is already in use (another resil run, or another server): choose another port (EADDRINUSE)`,
      );
    } finally {
      blocker.close();
    }
  });
});
