import {
  isTimeoutRejectedError,
  MemoryLockStore,
  type PipelineExecutedEvent,
  type TelemetryEvent,
} from 'resil';
import {
  type ConfigError,
  createScheduler,
  isConfigError,
  logSchedulerEvents,
  type SchedulerEvent,
  type SchedulerOptions,
} from 'resil/scheduler';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import { definitionOf, FleetDefinitions } from '../../src/scheduler/config-drift.ts';
import type { JobDefinition } from '../../src/scheduler/job.ts';
import { resolveConfigSync } from '../../src/scheduler/resolve.ts';
import { RecordingLogger } from './fixtures.ts';

const injected = new Error('injected by chaos');

/** A randomizer that returns `values` in turn, then repeats the last one. */
function sequence(...values: number[]): () => number {
  let index = 0;
  return () => values[Math.min(index++, values.length - 1)]!;
}

function setup(job: Partial<JobDefinition>, options: Partial<SchedulerOptions> = {}) {
  const time = new FakeTimeProvider(Date.parse('2026-03-01T01:00:00.000Z'));
  const store = new MemoryLockStore({ timeProvider: time });
  const events: SchedulerEvent[] = [];
  const attempts: number[] = [];
  const scheduler = createScheduler({
    store,
    timeProvider: time,
    timezone: 'UTC',
    jobs: [
      {
        name: 'sync',
        schedule: '0 2 * * *',
        run: async (ctx) => {
          attempts.push(ctx.attempt);
        },
        ...job,
      },
    ],
    ...options,
  });
  scheduler.on((event) => events.push(event));
  return { time, scheduler, events, attempts };
}

describe('a job with chaos', () => {
  it('an injected fault is a failed attempt: retried, counted, and the final error when every attempt is injected', async () => {
    const { scheduler, events, attempts } = setup({
      retry: { maxRetryAttempts: 2, delay: 0 },
      chaos: { fault: { injectionRate: 1, fault: injected } },
    });
    await scheduler.start();
    const result = await scheduler.trigger('sync');
    await scheduler.stop();
    expect(result).toMatchObject({ outcome: 'failure', error: injected, attempts: 3 });
    expect(attempts).toEqual([]);
    expect(events.map((event) => event.type)).toEqual([
      'started',
      'chaos-injected',
      'retrying',
      'chaos-injected',
      'retrying',
      'chaos-injected',
      'failed',
    ]);
    expect(events.filter((event) => event.type === 'chaos-injected')).toEqual(
      [1, 2, 3].map((attempt) =>
        expect.objectContaining({ job: 'sync', kind: 'manual', attempt, chaos: 'fault', error: injected }),
      ),
    );
    expect(events.at(-1)).toMatchObject({ type: 'failed', error: injected, attempts: 3 });
  });

  it('injects into a share of attempts: the retry after an injected fault runs the job', async () => {
    const { scheduler, attempts } = setup({
      retry: { maxRetryAttempts: 3, delay: 0 },
      chaos: { fault: { injectionRate: 0.5, fault: injected, randomizer: sequence(0.2, 0.7) } },
    });
    await scheduler.start();
    expect(await scheduler.trigger('sync')).toMatchObject({ outcome: 'success', attempts: 2 });
    await scheduler.stop();
    // The first attempt was injected into; the job's own run is the second.
    expect(attempts).toEqual([2]);
  });

  it("an injected latency inside the job's timeout trips it; the job is not called", async () => {
    const { time, scheduler, events, attempts } = setup({
      timeout: '1s',
      chaos: { latency: { injectionRate: 1, latency: '5s' } },
    });
    await scheduler.start();
    const result = scheduler.trigger('sync');
    await time.advance(1_000);
    const settled = await result;
    await scheduler.stop();
    expect(settled.outcome).toBe('failure');
    expect(isTimeoutRejectedError((settled as { error: unknown }).error)).toBe(true);
    expect(attempts).toEqual([]);
    expect(events.map((event) => event.type)).toEqual(['started', 'chaos-injected', 'timed-out', 'failed']);
    expect(events[1]).toMatchObject({
      type: 'chaos-injected',
      attempt: 1,
      chaos: 'latency',
      latencyMs: 5_000,
    });
    expect(events[1]).not.toHaveProperty('error');
  });

  it('an injected outcome replaces the run; a behavior runs before it', async () => {
    const steps: string[] = [];
    const { scheduler } = setup({
      run: () => {
        steps.push('run');
      },
      chaos: {
        behavior: { injectionRate: 1, behaviorGenerator: () => void steps.push('behavior') },
        outcome: { injectionRate: 0, outcomeGenerator: () => 'never' },
      },
    });
    await scheduler.start();
    expect(await scheduler.trigger('sync')).toMatchObject({ outcome: 'success', attempts: 1 });
    await scheduler.stop();
    expect(steps).toEqual(['behavior', 'run']);
  });

  it("reports each injection to the config's telemetry listener; its executions are the job's runs, not the attempts", async () => {
    const telemetry: TelemetryEvent[] = [];
    const executions: PipelineExecutedEvent[] = [];
    const listener = Object.assign((event: TelemetryEvent) => void telemetry.push(event), {
      onPipelineExecuted: (event: PipelineExecutedEvent) => void executions.push(event),
    });
    const { scheduler, events } = setup(
      { retry: { maxRetryAttempts: 1, delay: 0 }, chaos: { fault: { injectionRate: 1, fault: injected } } },
      { telemetry: { pipelineListener: () => listener } },
    );
    await scheduler.start();
    await scheduler.trigger('sync');
    await scheduler.stop();
    expect(telemetry.map((event) => [event.event, event.strategy])).toEqual([
      ['Chaos.OnFault', 'chaos-fault'],
      ['OnRetry', 'retry'],
      ['Chaos.OnFault', 'chaos-fault'],
    ]);
    expect(executions.map((execution) => execution.outcome.error)).toEqual([injected]);
    // Not mistaken for a store error by the scheduler's own events.
    expect(events.some((event) => event.type === 'store-error')).toBe(false);
  });

  it('logs each injection as a warning, so a rehearsed failure is not taken for a real one', async () => {
    const { scheduler, events } = setup({
      chaos: { outcome: { injectionRate: 1, outcomeGenerator: () => Promise.reject(injected) } },
    });
    const logger = new RecordingLogger();
    scheduler.on(logSchedulerEvents(logger));
    await scheduler.start();
    expect(await scheduler.trigger('sync')).toMatchObject({
      outcome: 'failure',
      error: injected,
      attempts: 1,
    });
    await scheduler.stop();
    expect(events.find((event) => event.type === 'chaos-injected')).toMatchObject({
      chaos: 'outcome',
      error: injected,
    });
    expect(logger.lines.filter((line) => line.level === 'warn')).toEqual([
      expect.objectContaining({
        job: 'sync',
        attempt: 1,
        chaos: 'outcome',
        err: injected,
        msg: "chaos: injected an outcome into this attempt (the job's chaos option)",
      }),
    ]);
  });

  it('chaos: false, or enabled: false, changes nothing', async () => {
    for (const chaos of [false, { fault: { injectionRate: 1, fault: injected, enabled: false } }] as const) {
      const { scheduler, attempts } = setup({ chaos });
      await scheduler.start();
      expect(await scheduler.trigger('sync')).toMatchObject({ outcome: 'success', attempts: 1 });
      await scheduler.stop();
      expect(attempts).toEqual([1]);
    }
  });
});

describe('chaos in the config', () => {
  const file = 'resil.config.ts';
  const run = async () => {};

  function problemsOf(chaos: unknown): string[] {
    try {
      resolveConfigSync({ jobs: [{ name: 'a', schedule: '* * * * *', run, chaos } as JobDefinition] }, file);
    } catch (error) {
      if (!isConfigError(error)) throw error;
      return (error as ConfigError).problems.map((problem) => `${problem.option}: ${problem.message}`);
    }
    return [];
  }

  it('rejects a bad chaos option with what it expected, every one at once (in the order the strategies run)', () => {
    expect(
      problemsOf({
        fault: { injectionRate: 2, enabled: 'yes' },
        latency: { latency: -1 },
        behavior: {},
      }),
    ).toEqual([
      "chaos.latency.latency: expected a duration: milliseconds (>= 0) or a string such as '250ms', '30s', '5m', '1h', got -1",
      'chaos.fault.injectionRate: expected a number from 0 to 1, got 2',
      'chaos.fault.enabled: expected true or false, got "yes"',
      'chaos.behavior.behaviorGenerator: expected a function (it is required), got undefined',
    ]);
  });

  it('a fault needs fault or faultGenerator', () => {
    expect(problemsOf({ fault: { injectionRate: 0.1 } })).toEqual([
      'chaos.fault.fault: expected an Error, or a faultGenerator: one of them is required, got undefined',
    ]);
  });

  it('rejects unknown keys with a did-you-mean, as the other options do', () => {
    expect(problemsOf({ fualt: { fault: injected }, latency: { injectionRat: 0.1 } })).toEqual([
      'chaos.fualt: unknown option (did you mean "chaos.fault"?); known options: latency, fault, outcome, behavior',
      'chaos.latency.injectionRat: unknown option (did you mean "chaos.latency.injectionRate"?); known options: injectionRate, injectionRateGenerator, enabled, enabledGenerator, randomizer, latency, latencyGenerator, onLatencyInjected',
    ]);
  });

  it('rejects a chaos that is not an object, and a kind that is not options', () => {
    expect(problemsOf('yes')).toEqual([
      'chaos: expected false or { fault, latency, outcome, behavior } (each that chaos strategy\'s options), got "yes"',
    ]);
    expect(problemsOf({ latency: 5 })).toEqual([
      'chaos.latency: expected the options of the chaos latency strategy, got 5',
    ]);
  });

  it('createScheduler() refuses a job with a bad chaos option', () => {
    expect(() =>
      createScheduler({
        jobs: [
          { name: 'a', schedule: '* * * * *', run, chaos: { fault: { fault: injected, injectionRate: -1 } } },
        ],
      }),
    ).toThrow(/job "a": option "chaos\.fault\.injectionRate": expected a number from 0 to 1, got -1/);
  });

  it('accepts every kind with valid options', () => {
    expect(
      problemsOf({
        fault: { injectionRate: 0.1, faultGenerator: () => injected, onFaultInjected: () => {} },
        latency: { injectionRate: 0.2, latency: '5s', enabledGenerator: () => true },
        outcome: { injectionRate: 0.3, outcomeGenerator: () => 1 },
        behavior: { injectionRate: 0.4, behaviorGenerator: () => {}, randomizer: Math.random },
      }),
    ).toEqual([]);
  });
});

describe('chaos in the config-drift fingerprint', () => {
  const run = async () => {};
  const jobs = (chaos?: unknown) =>
    resolveConfigSync(
      {
        timezone: 'UTC',
        jobs: [{ name: 'a', schedule: '* * * * *', run, ...(chaos ? { chaos } : {}) } as JobDefinition],
      },
      'resil.config.ts',
    ).jobs;

  it('a job without chaos has no chaos field: its fingerprint is that of the release before chaos', () => {
    expect(definitionOf(jobs()[0]!)).not.toHaveProperty('chaos');
    expect(definitionOf(jobs(false)[0]!)).not.toHaveProperty('chaos');
  });

  it('counts the chaos options that are data; callbacks do not count', () => {
    expect(
      definitionOf(jobs({ latency: { injectionRate: 0.1, latency: '5s' }, fault: { fault: injected } })[0]!)
        .chaos,
    ).toEqual({
      latency: { injectionRate: 0.1, enabled: null, latencyMs: 5_000 },
      fault: { injectionRate: null, enabled: null },
    });
    const a = new FleetDefinitions(jobs({ fault: { injectionRate: 0.1, faultGenerator: () => injected } }));
    const b = new FleetDefinitions(jobs({ fault: { injectionRate: 0.1, faultGenerator: () => undefined } }));
    const c = new FleetDefinitions(jobs({ fault: { injectionRate: 0.2, faultGenerator: () => injected } }));
    const none = new FleetDefinitions(jobs());
    expect(a.digest).toBe(b.digest);
    expect(c.digest).not.toBe(a.digest);
    expect(none.digest).not.toBe(a.digest);
  });
});
