import {
  type ChaosStrategyOptions,
  chaosBehaviorStrategy,
  chaosDefaults,
  chaosFaultStrategy,
  chaosLatencyStrategy,
  chaosOutcomeStrategy,
  InvalidOptionError,
  isTimeoutRejectedError,
  type Next,
  Outcome,
  PipelineBuilder,
  ResilienceContext,
  ResiliencePipelineBuilder,
  retryStrategy,
  type StrategyFactory,
  type TelemetryEvent,
  TimeoutRejectedError,
  timeoutStrategy,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';

/** A tiny seeded PRNG (mulberry32): the same sequence of [0, 1) numbers for the same seed. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A randomizer that returns `values` in turn, then repeats the last one. */
function sequence(...values: number[]): () => number {
  let index = 0;
  return () => values[Math.min(index++, values.length - 1)]!;
}

const injectedError = new Error('injected by chaos');

/** Set by the behavior strategy's `behaviorGenerator` below: whether the execution running now was injected into. */
let behaved = false;

/** Each chaos strategy, made with the common options, and how to tell an execution it injected into. */
const kinds: Array<{
  name: string;
  /** Makes the strategy with `common` and `onInjected` as its own callback (`onFaultInjected`, ...). */
  factory: (common: ChaosStrategyOptions, onInjected: () => void) => StrategyFactory<never>;
  event: string;
  /** Runs one execution; true when it was injected into. */
  injected: (outcome: { ok: boolean; value?: unknown; error?: unknown }, called: boolean) => boolean;
}> = [
  {
    name: 'fault',
    factory: (common, onInjected) =>
      chaosFaultStrategy({ ...common, fault: injectedError, onFaultInjected: onInjected }),
    event: 'Chaos.OnFault',
    injected: (outcome, called) => !called && !outcome.ok && outcome.error === injectedError,
  },
  {
    name: 'latency',
    // 0 < latency: the executions injected into wait, the others do not (checked by their clock).
    factory: (common, onInjected) =>
      chaosLatencyStrategy({ ...common, latency: 10, onLatencyInjected: onInjected }),
    event: 'Chaos.OnLatency',
    injected: (outcome, called) => called && outcome.ok && outcome.value === 'delayed',
  },
  {
    name: 'outcome',
    factory: (common, onInjected) =>
      chaosOutcomeStrategy({ ...common, outcomeGenerator: () => 'injected', onOutcomeInjected: onInjected }),
    event: 'Chaos.OnOutcome',
    injected: (outcome, called) => !called && outcome.ok && outcome.value === 'injected',
  },
  {
    name: 'behavior',
    factory: (common, onInjected) =>
      chaosBehaviorStrategy({
        ...common,
        onBehaviorInjected: onInjected,
        behaviorGenerator: () => {
          behaved = true;
        },
      }),
    event: 'Chaos.OnBehavior',
    injected: (outcome, called) => called && outcome.ok && behaved,
  },
];

/**
 * Runs `count` executions through `factory`'s strategy and counts those it injected into, and the
 * telemetry events it reported. The latency strategy's wait is on a fake clock: an execution that
 * has not settled after the clock moved by 0 was delayed.
 */
async function injections(
  kind: (typeof kinds)[number],
  common: ChaosStrategyOptions,
  count: number,
  executeOptions: (index: number) => { operationKey?: string } = () => ({}),
) {
  const time = new FakeTimeProvider();
  const events: TelemetryEvent[] = [];
  let noticed = 0;
  const pipeline = new PipelineBuilder({ timeProvider: time, telemetry: (event) => events.push(event) })
    .add(kind.factory(common, () => void noticed++))
    .build();
  let injected = 0;
  /** Executions whose own callback (`onFaultInjected`, ...) and injection disagree: called without one, or not called with one. */
  let mismatches = 0;
  for (let index = 0; index < count; index++) {
    noticed = 0;
    let called = false;
    let settled = false;
    behaved = false;
    const pending = pipeline
      .settle(() => {
        called = true;
        return settled ? 'late' : 'callback';
      }, executeOptions(index))
      .then((outcome) => {
        settled = true;
        return outcome;
      });
    let outcome: { ok: boolean; value?: unknown; error?: unknown };
    if (kind.name === 'latency') {
      await time.advance(0);
      const delayed = !settled;
      if (delayed) await time.advance(10);
      const result = await pending;
      outcome = delayed && result.ok ? { ok: true, value: 'delayed' } : result;
    } else {
      outcome = await pending;
    }
    const wasInjected = kind.injected(outcome, called);
    if (wasInjected) injected++;
    if (noticed !== (wasInjected ? 1 : 0)) mismatches++;
  }
  return { injected, mismatches, events, time };
}

describe('chaos defaults (Polly v8)', () => {
  it('pins every default', () => {
    expect(chaosDefaults).toEqual({ injectionRate: 0.001, enabled: true, latency: 30_000 });
  });

  it('injects into executions whose random number is below 0.001 by default', async () => {
    const pipeline = (random: number) =>
      new PipelineBuilder()
        .add(chaosFaultStrategy({ fault: injectedError, randomizer: () => random }))
        .build();
    expect((await pipeline(0.000_999).settle(() => 'ok')).error).toBe(injectedError);
    expect((await pipeline(0.001).settle(() => 'ok')).value).toBe('ok');
  });

  it('waits 30 s by default', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addChaosLatency({ injectionRate: 1 })
      .build();
    let done = false;
    const result = pipeline
      .execute(() => 'ok')
      .then((value) => {
        done = true;
        return value;
      });
    await time.advance(29_999);
    expect(done).toBe(false);
    await time.advance(1);
    expect(await result).toBe('ok');
  });
});

describe.each(kinds)('chaos $name', (kind) => {
  it('injects into 0.3 ± 0.02 of 10,000 executions at injectionRate 0.3; callback and event on each injection only', async () => {
    const { injected, mismatches, events } = await injections(
      kind,
      { injectionRate: 0.3, randomizer: mulberry32(42) },
      10_000,
    );
    expect(injected / 10_000).toBeGreaterThanOrEqual(0.28);
    expect(injected / 10_000).toBeLessThanOrEqual(0.32);
    // The strategy's own callback once per injection, never for the executions left alone; and one
    // telemetry event per injection.
    expect(mismatches).toBe(0);
    expect(events).toHaveLength(injected);
    expect(events.every((event) => event.event === kind.event)).toBe(true);
    expect(events[0]!.strategy).toBe(`chaos-${kind.name}`);
  });

  it('enabled: false injects nothing and never draws a random number', async () => {
    let draws = 0;
    const { injected, events } = await injections(
      kind,
      {
        injectionRate: 1,
        enabled: false,
        randomizer: () => {
          draws++;
          return 0;
        },
      },
      100,
    );
    expect({ injected, events: events.length, draws }).toEqual({ injected: 0, events: 0, draws: 0 });
  });

  it('enabledGenerator decides per execution, overriding enabled', async () => {
    const { injected } = await injections(
      kind,
      {
        injectionRate: 1,
        enabled: false,
        enabledGenerator: async ({ context }) => context.operationKey === 'chaos',
      },
      10,
      (index) => ({ operationKey: index % 2 === 0 ? 'chaos' : 'calm' }),
    );
    expect(injected).toBe(5);
  });

  it('injectionRateGenerator chooses the rate per execution, overriding injectionRate', async () => {
    const { injected } = await injections(
      kind,
      {
        injectionRate: 0,
        injectionRateGenerator: ({ context }) => (context.operationKey === 'chaos' ? 0.5 : 0),
        randomizer: sequence(0.4),
      },
      10,
      (index) => ({ operationKey: index < 3 ? 'chaos' : 'calm' }),
    );
    expect(injected).toBe(3);
  });
});

describe('chaos: the injection decision', () => {
  it('clamps a generated rate to 0..1, as Polly does', async () => {
    const run = async (rate: number, random: number) =>
      new PipelineBuilder()
        .add(
          chaosFaultStrategy({
            fault: injectedError,
            injectionRateGenerator: () => rate,
            randomizer: () => random,
          }),
        )
        .build()
        .settle(() => 'ok');
    expect((await run(7, 0.999)).error).toBe(injectedError);
    expect((await run(-1, 0)).value).toBe('ok');
  });

  it('a generated rate that is not a number fails the execution with InvalidOptionError', async () => {
    const pipeline = new PipelineBuilder()
      .add(chaosFaultStrategy({ fault: injectedError, injectionRateGenerator: () => Number.NaN }))
      .build();
    const { error } = await pipeline.settle(() => 'ok');
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect((error as InvalidOptionError).message).toBe(
      'Invalid option chaosFault.injectionRateGenerator(): expected a number (clamped to 0..1), got NaN.',
    );
  });

  it('an enabledGenerator, injectionRateGenerator or randomizer that throws fails the execution, callback not run', async () => {
    const boom = new Error('boom');
    for (const options of [
      { enabledGenerator: () => Promise.reject(boom) },
      {
        injectionRateGenerator: () => {
          throw boom;
        },
      },
      {
        randomizer: () => {
          throw boom;
        },
      },
    ]) {
      let called = false;
      const outcome = await new PipelineBuilder()
        .add(chaosBehaviorStrategy({ injectionRate: 1, behaviorGenerator: () => {}, ...options }))
        .build()
        .settle(() => {
          called = true;
        });
      expect(outcome.error).toBe(boom);
      expect(called).toBe(false);
    }
  });

  it('an execution left alone costs nothing of its own: the strategy returns what the rest of the pipeline does', async () => {
    const environment = { timeProvider: new FakeTimeProvider(), report: () => {} };
    const context = new ResilienceContext();
    const rest = Promise.resolve(Outcome.success('ok'));
    const next = (() => rest) as Next;
    for (const factory of [
      chaosFaultStrategy({ fault: injectedError, injectionRate: 0.5, randomizer: () => 0.5 }),
      chaosLatencyStrategy({ injectionRate: 1, enabled: false }),
    ]) {
      expect(factory.create(environment).execute(() => 'ok', context, next)).toBe(rest);
    }
  });

  it('injectionRate 1 injects into every execution, 0 into none', async () => {
    for (const [rate, expected] of [
      [1, 20],
      [0, 0],
    ] as const) {
      const { injected } = await injections(
        kinds[0]!,
        { injectionRate: rate, randomizer: mulberry32(7) },
        20,
      );
      expect(injected).toBe(expected);
    }
  });
});

describe('chaos fault', () => {
  it('fails with the fault instead of calling the callback; onFaultInjected receives it', async () => {
    const seen: unknown[] = [];
    const pipeline = new ResiliencePipelineBuilder()
      .addChaosFault({
        injectionRate: 1,
        fault: injectedError,
        onFaultInjected: ({ fault, context }) => {
          seen.push(fault, context.operationKey);
        },
      })
      .build();
    let called = false;
    await expect(
      pipeline.execute(
        () => {
          called = true;
        },
        { operationKey: 'op' },
      ),
    ).rejects.toBe(injectedError);
    expect(called).toBe(false);
    expect(seen).toEqual([injectedError, 'op']);
  });

  it('faultGenerator makes the error per execution; undefined injects nothing and reports nothing', async () => {
    const events: TelemetryEvent[] = [];
    const faults: unknown[] = [];
    let count = 0;
    const pipeline = new PipelineBuilder({ telemetry: (event) => events.push(event) })
      .add(
        chaosFaultStrategy({
          injectionRate: 1,
          faultGenerator: async () => (++count % 2 === 0 ? new Error(`fault ${count}`) : undefined),
          onFaultInjected: ({ fault }) => {
            faults.push(fault);
          },
        }),
      )
      .build();
    const outcomes = [];
    for (let index = 0; index < 4; index++) outcomes.push(await pipeline.settle(() => 'ok'));
    expect(
      outcomes.map((outcome) => (outcome.ok ? outcome.value : (outcome.error as Error).message)),
    ).toEqual(['ok', 'fault 2', 'ok', 'fault 4']);
    expect(faults.map((fault) => (fault as Error).message)).toEqual(['fault 2', 'fault 4']);
    expect(events.map((event) => [event.event, (event.args as { fault: Error }).fault.message])).toEqual([
      ['Chaos.OnFault', 'fault 2'],
      ['Chaos.OnFault', 'fault 4'],
    ]);
  });

  it('addChaosFault(rate, fault) and addChaosFault(rate, generator), as Polly has them', async () => {
    const plain = new ResiliencePipelineBuilder().addChaosFault(1, injectedError).build();
    await expect(plain.execute(() => 'ok')).rejects.toBe(injectedError);
    const generated = new ResiliencePipelineBuilder().addChaosFault(1, () => injectedError).build();
    await expect(generated.execute(() => 'ok')).rejects.toBe(injectedError);
    const none = new ResiliencePipelineBuilder().addChaosFault(0, injectedError).build();
    expect(await none.execute(() => 'ok')).toBe('ok');
  });

  it('an onFaultInjected that throws fails the execution with its error', async () => {
    const boom = new Error('boom');
    const pipeline = new PipelineBuilder()
      .add(
        chaosFaultStrategy({
          injectionRate: 1,
          fault: injectedError,
          onFaultInjected: () => {
            throw boom;
          },
        }),
      )
      .build();
    expect((await pipeline.settle(() => 'ok')).error).toBe(boom);
  });
});

describe('chaos latency', () => {
  it('waits the latency on the pipeline clock, then calls the callback; onLatencyInjected first', async () => {
    const time = new FakeTimeProvider();
    const steps: string[] = [];
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addChaosLatency({
        injectionRate: 1,
        latency: '2s',
        onLatencyInjected: ({ latency }) => {
          steps.push(`injected ${latency}`);
        },
      })
      .build();
    const result = pipeline.execute(() => {
      steps.push(`called at ${time.monotonic()}`);
      return 'ok';
    });
    await time.advance(1_999);
    expect(steps).toEqual(['injected 2000']);
    await time.advance(1);
    expect(await result).toBe('ok');
    expect(steps).toEqual(['injected 2000', 'called at 2000']);
    expect(time.pendingTimers).toBe(0);
  });

  it("stops waiting at once when the caller's signal aborts: fails with its reason, callback not called", async () => {
    const time = new FakeTimeProvider();
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(chaosLatencyStrategy({ injectionRate: 1, latency: '1m' }))
      .build();
    const controller = new AbortController();
    let called = false;
    const outcome = pipeline.settle(
      () => {
        called = true;
      },
      { signal: controller.signal },
    );
    await time.advance(1_000);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    expect((await outcome).error).toBe(reason);
    expect(called).toBe(false);
    expect(time.pendingTimers).toBe(0);
  });

  it('latencyGenerator chooses per execution; 0 or less injects nothing, reports nothing', async () => {
    const time = new FakeTimeProvider();
    const events: TelemetryEvent[] = [];
    const latencies = ['250ms', 0, -5, 100] as const;
    let index = 0;
    const pipeline = new PipelineBuilder({ timeProvider: time, telemetry: (event) => events.push(event) })
      .add(chaosLatencyStrategy({ injectionRate: 1, latencyGenerator: () => latencies[index++]! }))
      .build();
    const waited: number[] = [];
    for (let run = 0; run < latencies.length; run++) {
      const started = time.monotonic();
      const result = pipeline.execute(() => waited.push(time.monotonic() - started));
      await time.advance(1_000);
      await result;
    }
    expect(events.map((event) => (event.args as { latency: number }).latency)).toEqual([250, 100]);
    expect(waited).toEqual([250, 0, 0, 100]);
  });

  it('a generated latency that is not a duration fails the execution with InvalidOptionError', async () => {
    const pipeline = new PipelineBuilder()
      .add(chaosLatencyStrategy({ injectionRate: 1, latencyGenerator: () => 'soon' as never }))
      .build();
    const { error } = await pipeline.settle(() => 'ok');
    expect((error as InvalidOptionError).option).toBe('chaosLatency.latencyGenerator()');
  });

  it('latency 0 injects nothing', async () => {
    const events: TelemetryEvent[] = [];
    const pipeline = new ResiliencePipelineBuilder({ telemetry: (event) => events.push(event) })
      .addChaosLatency(1, 0)
      .build();
    expect(await pipeline.execute(() => 'ok')).toBe('ok');
    expect(events).toEqual([]);
  });
});

describe('chaos outcome', () => {
  it("returns the generator's value instead of calling the callback; onOutcomeInjected receives it", async () => {
    const seen: unknown[] = [];
    const pipeline = new ResiliencePipelineBuilder()
      .addChaosOutcome({
        injectionRate: 1,
        outcomeGenerator: async () => ({ status: 503 }),
        onOutcomeInjected: ({ outcome }) => {
          seen.push(outcome.ok && outcome.value);
        },
      })
      .build();
    let called = false;
    const value = await pipeline.execute(() => {
      called = true;
      return { status: 200 };
    });
    expect(value).toEqual({ status: 503 });
    expect(called).toBe(false);
    expect(seen).toEqual([{ status: 503 }]);
  });

  it('a generator that throws injects its error as the outcome', async () => {
    const events: TelemetryEvent[] = [];
    const pipeline = new ResiliencePipelineBuilder({ telemetry: (event) => events.push(event) })
      .addChaosOutcome(1, () => {
        throw injectedError;
      })
      .build();
    await expect(pipeline.execute(() => 'ok')).rejects.toBe(injectedError);
    expect(
      events.map((event) => [event.event, (event.args as { outcome: { error: unknown } }).outcome.error]),
    ).toEqual([['Chaos.OnOutcome', injectedError]]);
  });
});

describe('chaos behavior', () => {
  it('runs the behavior, then onBehaviorInjected, then the callback', async () => {
    const steps: string[] = [];
    const pipeline = new ResiliencePipelineBuilder()
      .addChaosBehavior({
        injectionRate: 1,
        behaviorGenerator: async ({ context }) => {
          steps.push(`behavior ${context.operationKey}`);
        },
        onBehaviorInjected: () => {
          steps.push('onBehaviorInjected');
        },
      })
      .build();
    const value = await pipeline.execute(
      () => {
        steps.push('callback');
        return 'ok';
      },
      { operationKey: 'op' },
    );
    expect(value).toBe('ok');
    expect(steps).toEqual(['behavior op', 'onBehaviorInjected', 'callback']);
  });

  it('a behavior that throws fails the execution with its error; the callback is not called', async () => {
    let called = false;
    const pipeline = new ResiliencePipelineBuilder()
      .addChaosBehavior(1, () => {
        throw injectedError;
      })
      .build();
    await expect(
      pipeline.execute(() => {
        called = true;
      }),
    ).rejects.toBe(injectedError);
    expect(called).toBe(false);
  });
});

describe('chaos composed with retry and timeout (Polly: chaos strategies go last)', () => {
  it('a fault injected inside retry is retried: the callback runs on the attempt that is not injected', async () => {
    const time = new FakeTimeProvider();
    const retries: number[] = [];
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(retryStrategy({ delay: 0, onRetry: ({ attemptNumber }) => void retries.push(attemptNumber) }))
      .add(
        chaosFaultStrategy({ injectionRate: 0.5, fault: injectedError, randomizer: sequence(0.1, 0.2, 0.9) }),
      )
      .build();
    let calls = 0;
    const value = await pipeline.execute(() => ++calls);
    expect(value).toBe(1);
    expect(retries).toEqual([0, 1]);
  });

  it('a fault injected into every attempt exhausts the retries and is the final error', async () => {
    const pipeline = new ResiliencePipelineBuilder()
      .addRetry({ maxRetryAttempts: 3, delay: 0 })
      .addChaosFault(1, injectedError)
      .build();
    let calls = 0;
    await expect(pipeline.execute(() => ++calls)).rejects.toBe(injectedError);
    expect(calls).toBe(0);
  });

  it('a fault added outside the retry is not retried', async () => {
    let attempts = 0;
    const pipeline = new ResiliencePipelineBuilder()
      .addChaosFault(1, injectedError)
      .addRetry({ delay: 0, onRetry: () => void attempts++ })
      .build();
    await expect(pipeline.execute(() => 'ok')).rejects.toBe(injectedError);
    expect(attempts).toBe(0);
  });

  it('a latency injected inside a timeout trips the timeout: TimeoutRejectedError, callback never called', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(timeoutStrategy('1s'))
      .add(chaosLatencyStrategy({ injectionRate: 1, latency: '5s' }))
      .build();
    let called = false;
    const outcome = pipeline.settle(() => {
      called = true;
    });
    await time.advance(1_000);
    const { error } = await outcome;
    expect(error).toBeInstanceOf(TimeoutRejectedError);
    expect((error as TimeoutRejectedError).timeout).toBe(1_000);
    expect(called).toBe(false);
    expect(time.pendingTimers).toBe(0);
  });

  it('retry + timeout + latency: each timed-out attempt is retried until one is not delayed', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addRetry({
        delay: 0,
        shouldHandle: ({ outcome }) => !outcome.ok && isTimeoutRejectedError(outcome.error),
      })
      .addTimeout('1s')
      .addChaosLatency({ injectionRate: 0.5, latency: '5s', randomizer: sequence(0.1, 0.9) })
      .build();
    const result = pipeline.execute((context: ResilienceContext) =>
      context.signal.aborted ? 'aborted' : 'ok',
    );
    await time.advance(1_000);
    expect(await result).toBe('ok');
    expect(time.monotonic()).toBe(1_000);
  });
});

describe('chaos options', () => {
  const fault = injectedError;
  const cases: Array<[string, () => StrategyFactory<never>, string]> = [
    [
      'injectionRate above 1',
      () => chaosFaultStrategy({ fault, injectionRate: 1.5 }),
      'chaosFault.injectionRate',
    ],
    [
      'negative injectionRate',
      () => chaosLatencyStrategy({ injectionRate: -0.1 }),
      'chaosLatency.injectionRate',
    ],
    [
      'NaN injectionRate',
      () => chaosFaultStrategy({ fault, injectionRate: Number.NaN }),
      'chaosFault.injectionRate',
    ],
    [
      'injectionRate as a string',
      () => chaosFaultStrategy({ fault, injectionRate: '0.5' as never }),
      'chaosFault.injectionRate',
    ],
    [
      'enabled not a boolean',
      () => chaosFaultStrategy({ fault, enabled: 'yes' as never }),
      'chaosFault.enabled',
    ],
    [
      'randomizer not a function',
      () => chaosFaultStrategy({ fault, randomizer: 0.5 as never }),
      'chaosFault.randomizer',
    ],
    [
      'enabledGenerator not a function',
      () => chaosFaultStrategy({ fault, enabledGenerator: true as never }),
      'chaosFault.enabledGenerator',
    ],
    [
      'neither fault nor faultGenerator',
      () => chaosFaultStrategy({ injectionRate: 0.1 }),
      'chaosFault.fault',
    ],
    [
      'a fault that is not an Error',
      () => chaosFaultStrategy({ fault: 'boom' as never }),
      'chaosFault.fault',
    ],
    ['negative latency', () => chaosLatencyStrategy({ latency: -1 }), 'chaosLatency.latency'],
    ['malformed latency', () => chaosLatencyStrategy({ latency: 'soon' as never }), 'chaosLatency.latency'],
    ['no outcomeGenerator', () => chaosOutcomeStrategy({} as never), 'chaosOutcome.outcomeGenerator'],
    ['no behaviorGenerator', () => chaosBehaviorStrategy({} as never), 'chaosBehavior.behaviorGenerator'],
    [
      'onBehaviorInjected not a function',
      () => chaosBehaviorStrategy({ behaviorGenerator: () => {}, onBehaviorInjected: 1 as never }),
      'chaosBehavior.onBehaviorInjected',
    ],
    ['options that are not an object', () => chaosFaultStrategy(null as never), 'chaosFault'],
  ];

  it.each(cases)('%s: build() throws InvalidOptionError naming the option', (_name, factory, option) => {
    const build = () => new PipelineBuilder().add(factory()).build();
    expect(build).toThrow(InvalidOptionError);
    try {
      build();
    } catch (error) {
      expect((error as InvalidOptionError).option).toBe(option);
    }
  });

  it('says what it expected', () => {
    expect(() => new PipelineBuilder().add(chaosFaultStrategy({ fault, injectionRate: 2 })).build()).toThrow(
      'Invalid option chaosFault.injectionRate: expected a number from 0 to 1, got 2.',
    );
    expect(() => new PipelineBuilder().add(chaosFaultStrategy({})).build()).toThrow(
      'Invalid option chaosFault.fault: expected an Error, or a faultGenerator: one of them is required, got undefined.',
    );
    expect(() => new ResiliencePipelineBuilder().addChaosLatency({ latency: -1 }).build()).toThrow(
      /Invalid option chaosLatency\.latency: expected a duration/,
    );
  });

  it('accepts the bounds 0 and 1, a faultGenerator alone and a latencyGenerator alone', () => {
    expect(() =>
      new ResiliencePipelineBuilder()
        .addChaosFault({ injectionRate: 0, faultGenerator: () => undefined })
        .addChaosLatency({ injectionRate: 1, latencyGenerator: () => 0 })
        .addChaosOutcome({ injectionRate: 1, outcomeGenerator: () => 1 })
        .addChaosBehavior({ injectionRate: 0, behaviorGenerator: () => {} })
        .build(),
    ).not.toThrow();
  });
});
