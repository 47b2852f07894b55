import {
  BrokenCircuitError,
  CircuitBreakerManualControl,
  CircuitBreakerStateProvider,
  type CircuitBreakerStrategyOptions,
  circuitBreakerDefaults,
  circuitBreakerStrategy,
  InvalidOptionError,
  IsolatedCircuitError,
  isBrokenCircuitError,
  isIsolatedCircuitError,
  isRejection,
  PipelineBuilder,
  ResiliencePipelineBuilder,
  retryStrategy,
  type TelemetryEvent,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import {
  createHealthMetrics,
  RollingHealthMetrics,
  SingleHealthMetrics,
} from '../../src/strategies/circuit-breaker/health-metrics.ts';

class Boom extends Error {}

function setup(options: CircuitBreakerStrategyOptions = {}) {
  const time = new FakeTimeProvider();
  const events: TelemetryEvent[] = [];
  const stateProvider = options.stateProvider ?? new CircuitBreakerStateProvider();
  const pipeline = new ResiliencePipelineBuilder({ timeProvider: time, telemetry: (e) => events.push(e) })
    .addCircuitBreaker({ ...options, stateProvider })
    .build();
  let calls = 0;
  const succeed = () =>
    pipeline.settle(() => {
      calls++;
      return 'ok';
    });
  const fail = (error: unknown = new Boom('boom')) =>
    pipeline.settle(() => {
      calls++;
      throw error;
    });
  return {
    time,
    events,
    pipeline,
    stateProvider,
    succeed,
    fail,
    get calls() {
      return calls;
    },
    eventNames: () => events.map((e) => e.event),
  };
}

async function repeat(times: number, action: () => Promise<unknown>) {
  for (let i = 0; i < times; i++) await action();
}

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A breaker that opens on the first failure, for tests about what happens once open. */
const opensOnFirstFailure = { consecutiveFailures: 1, breakDuration: 1_000 } as const;

describe('circuit breaker defaults (Polly v8)', () => {
  it('pins every default', () => {
    expect(circuitBreakerDefaults).toEqual({
      failureRatio: 0.1,
      minimumThroughput: 100,
      samplingDuration: 30_000,
      breakDuration: 5_000,
    });
  });

  it('needs 100 executions before the default ratio of 10% counts', async () => {
    const cb = setup();
    await repeat(99, () => cb.fail());
    expect(cb.stateProvider.circuitState).toBe('closed');
    await cb.fail();
    expect(cb.stateProvider.circuitState).toBe('open');
  });

  it('breaks at exactly 10% failures of 100 executions', async () => {
    const cb = setup();
    await repeat(90, () => cb.succeed());
    await repeat(9, () => cb.fail());
    expect(cb.stateProvider.circuitState).toBe('closed');
    await cb.fail(); // 10 of 100
    expect(cb.stateProvider.circuitState).toBe('open');
  });

  it('samples the last 30 s by default', async () => {
    const cb = setup();
    await repeat(99, () => cb.fail());
    await cb.time.advance(30_000);
    await cb.fail();
    expect(cb.stateProvider.circuitState).toBe('closed');
  });

  it('stays open 5 s by default', async () => {
    const cb = setup();
    await repeat(100, () => cb.fail());
    await cb.time.advance(4_999);
    const rejected = await cb.succeed();
    expect(rejected.error).toBeInstanceOf(BrokenCircuitError);
    expect((rejected.error as BrokenCircuitError).retryAfter).toBe(1);
    await cb.time.advance(1);
    expect((await cb.succeed()).ok).toBe(true);
    expect(cb.stateProvider.circuitState).toBe('closed');
  });

  it('handles every error by default, and no successful value', async () => {
    const cb = setup({ consecutiveFailures: 2 });
    await cb.fail('a string is an error too');
    await cb.succeed();
    await cb.fail(new TypeError('x'));
    expect(cb.stateProvider.circuitState).toBe('closed');
    await cb.fail(undefined);
    expect(cb.stateProvider.circuitState).toBe('open');
  });
});

describe('circuit breaker options', () => {
  const invalid: Array<[string, CircuitBreakerStrategyOptions, string, unknown]> = [
    ['failureRatio 0', { failureRatio: 0 }, 'circuitBreaker.failureRatio', 0],
    ['failureRatio above 1', { failureRatio: 1.5 }, 'circuitBreaker.failureRatio', 1.5],
    ['failureRatio NaN', { failureRatio: Number.NaN }, 'circuitBreaker.failureRatio', Number.NaN],
    ['minimumThroughput 1', { minimumThroughput: 1 }, 'circuitBreaker.minimumThroughput', 1],
    ['minimumThroughput 2.5', { minimumThroughput: 2.5 }, 'circuitBreaker.minimumThroughput', 2.5],
    ['samplingDuration 499 ms', { samplingDuration: 499 }, 'circuitBreaker.samplingDuration', 499],
    ['samplingDuration over a day', { samplingDuration: '25h' }, 'circuitBreaker.samplingDuration', '25h'],
    [
      'samplingDuration garbage',
      { samplingDuration: 'soon' as never },
      'circuitBreaker.samplingDuration',
      'soon',
    ],
    ['breakDuration 499 ms', { breakDuration: '499ms' }, 'circuitBreaker.breakDuration', '499ms'],
    ['breakDuration over a day', { breakDuration: 86_400_001 }, 'circuitBreaker.breakDuration', 86_400_001],
    ['breakDuration negative', { breakDuration: -1 }, 'circuitBreaker.breakDuration', -1],
    ['consecutiveFailures 0', { consecutiveFailures: 0 }, 'circuitBreaker.consecutiveFailures', 0],
    ['consecutiveFailures 1.5', { consecutiveFailures: 1.5 }, 'circuitBreaker.consecutiveFailures', 1.5],
    ['shouldHandle not a function', { shouldHandle: true as never }, 'circuitBreaker.shouldHandle', true],
    ['onOpened not a function', { onOpened: 'x' as never }, 'circuitBreaker.onOpened', 'x'],
    [
      'breakDurationGenerator not a function',
      { breakDurationGenerator: 5 as never },
      'circuitBreaker.breakDurationGenerator',
      5,
    ],
    ['manualControl of another kind', { manualControl: {} as never }, 'circuitBreaker.manualControl', {}],
    ['stateProvider of another kind', { stateProvider: {} as never }, 'circuitBreaker.stateProvider', {}],
  ];

  it.each(invalid)('rejects %s at build(), naming the option and value', (_, options, option, value) => {
    const builder = new ResiliencePipelineBuilder().addCircuitBreaker(options);
    let caught: unknown;
    try {
      builder.build();
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidOptionError);
    expect((caught as InvalidOptionError).option).toBe(option);
    expect((caught as InvalidOptionError).value).toEqual(value);
    expect((caught as Error).message).toContain(option);
  });

  it('accepts the bounds: ratio 1, throughput 2, 500 ms and one day', () => {
    expect(() =>
      new PipelineBuilder()
        .add(
          circuitBreakerStrategy({
            failureRatio: 1,
            minimumThroughput: 2,
            samplingDuration: '500ms',
            breakDuration: '1d',
          }),
        )
        .add(circuitBreakerStrategy({ samplingDuration: '1d', breakDuration: 500 }))
        .add(circuitBreakerStrategy({ consecutiveFailures: 1 }))
        .build(),
    ).not.toThrow();
  });

  it('refuses consecutiveFailures together with the failure-ratio options', () => {
    const build = () =>
      new ResiliencePipelineBuilder()
        .addCircuitBreaker({ consecutiveFailures: 3, failureRatio: 0.5 })
        .build();
    expect(build).toThrow(InvalidOptionError);
    expect(build).toThrow(/consecutiveFailures.*without failureRatio/);
  });

  it('refuses a state provider already attached to another breaker', () => {
    const stateProvider = new CircuitBreakerStateProvider();
    const builder = new ResiliencePipelineBuilder().addCircuitBreaker({ stateProvider });
    builder.build();
    expect(() => builder.build()).toThrow(/circuitBreaker.stateProvider/);
  });

  it('creates fresh state on every build()', async () => {
    const time = new FakeTimeProvider();
    const builder = new ResiliencePipelineBuilder({ timeProvider: time }).addCircuitBreaker(
      opensOnFirstFailure,
    );
    const first = builder.build();
    const second = builder.build();
    await first.settle(() => Promise.reject(new Boom()));
    expect((await first.settle(() => 1)).error).toBeInstanceOf(BrokenCircuitError);
    expect((await second.settle(() => 1)).value).toBe(1);
  });
});

describe('failure ratio over the sampling duration', () => {
  const ratio = {
    failureRatio: 0.5,
    minimumThroughput: 10,
    samplingDuration: '10s',
    breakDuration: '1s',
  } as const;

  it('never opens below the minimum throughput, even at 100% failures', async () => {
    const cb = setup(ratio);
    await repeat(9, () => cb.fail());
    expect(cb.stateProvider.circuitState).toBe('closed');
    expect(cb.calls).toBe(9);
  });

  it('opens on the failure that brings the ratio to failureRatio', async () => {
    const cb = setup(ratio);
    await repeat(6, () => cb.succeed());
    await repeat(5, () => cb.fail()); // 5 / 11
    expect(cb.stateProvider.circuitState).toBe('closed');
    await cb.fail(); // 6 / 12 = 0.5
    expect(cb.stateProvider.circuitState).toBe('open');
    expect(cb.eventNames()).toEqual(['OnCircuitOpened']);
  });

  it('a success never opens the circuit, whatever the ratio', async () => {
    const cb = setup(ratio);
    await repeat(9, () => cb.fail());
    await cb.succeed(); // 9 / 10 failed, but only a failure checks the ratio
    expect(cb.stateProvider.circuitState).toBe('closed');
    await cb.fail();
    expect(cb.stateProvider.circuitState).toBe('open');
  });

  it('forgets outcomes once their window started a whole sampling duration ago', async () => {
    const cb = setup({ ...ratio, minimumThroughput: 4 });
    await repeat(3, () => cb.fail()); // window started at 0
    await cb.time.advance(9_999);
    await cb.succeed(); // window started at 9.999 s
    await cb.time.advance(1);
    await cb.fail(); // at 10 s the first window expired: 1 success + 1 failure
    expect(cb.stateProvider.circuitState).toBe('closed');
  });

  it('still counts them one millisecond earlier', async () => {
    const cb = setup({ ...ratio, minimumThroughput: 4 });
    await repeat(3, () => cb.fail());
    await cb.time.advance(9_999);
    await cb.fail(); // 4 of 4
    expect(cb.stateProvider.circuitState).toBe('open');
  });

  it('expires a tenth of the sampling duration at a time', async () => {
    const cb = setup({ ...ratio, minimumThroughput: 3 });
    await cb.fail(); // opens window [0, 1 s)
    await cb.time.advance(900);
    await cb.fail(); // same window
    await cb.time.advance(9_100); // 10 s: the window started at 0 expires with both failures
    await cb.fail();
    await cb.fail();
    expect(cb.stateProvider.circuitState).toBe('closed');
    await cb.fail();
    expect(cb.stateProvider.circuitState).toBe('open');
  });

  it('keeps counting across many windows without losing totals', async () => {
    const cb = setup({ failureRatio: 0.5, minimumThroughput: 40, samplingDuration: '10s' });
    // One success and one failure every 500 ms for a minute: the ratio sits at exactly 0.5 but
    // only 40 outcomes (20 s worth) ever fit the 10 s sampling duration... after the 40th.
    for (let i = 0; i < 19; i++) {
      await cb.succeed();
      await cb.fail();
      await cb.time.advance(500);
    }
    expect(cb.stateProvider.circuitState).toBe('closed'); // 38 outcomes
    await cb.succeed();
    await cb.fail(); // 40 outcomes, 20 failures
    expect(cb.stateProvider.circuitState).toBe('open');
  });

  it('resets the statistics when the circuit closes', async () => {
    const cb = setup({ ...ratio, minimumThroughput: 2 });
    await cb.fail();
    await cb.fail();
    await cb.time.advance(1_000);
    await cb.succeed(); // probe closes
    await cb.fail(); // 1 of 1: below the minimum throughput again
    expect(cb.stateProvider.circuitState).toBe('closed');
  });
});

describe('consecutive failures', () => {
  it('opens after n handled failures in a row; a success resets the count', async () => {
    const cb = setup({ consecutiveFailures: 3 });
    await cb.fail();
    await cb.fail();
    await cb.succeed();
    await cb.fail();
    await cb.fail();
    expect(cb.stateProvider.circuitState).toBe('closed');
    await cb.fail();
    expect(cb.stateProvider.circuitState).toBe('open');
  });

  it('gives breakDurationGenerator the run of failures', async () => {
    const seen: unknown[] = [];
    const cb = setup({
      consecutiveFailures: 2,
      breakDurationGenerator: ({ failureCount, failureRate, halfOpenAttempts }) => {
        seen.push({ failureCount, failureRate, halfOpenAttempts });
        return 2_000;
      },
    });
    await cb.fail();
    await cb.fail();
    expect(seen).toEqual([{ failureCount: 2, failureRate: 1, halfOpenAttempts: 0 }]);
  });
});

describe('open circuit', () => {
  it('rejects without calling the callback: BrokenCircuitError with retryAfter and the breaking error', async () => {
    const cb = setup(opensOnFirstFailure);
    const breaking = new Boom('database down');
    await cb.fail(breaking);
    await cb.time.advance(250);
    const outcome = await cb.succeed();
    expect(cb.calls).toBe(1);
    const error = outcome.error as BrokenCircuitError;
    expect(error).toBeInstanceOf(BrokenCircuitError);
    expect(error.code).toBe('CIRCUIT_OPEN');
    expect(error.retryAfter).toBe(750);
    expect(error.cause).toBe(breaking);
    expect(error.message).toBe(
      'The circuit is open and is not allowing calls. It can be retried after 750ms.',
    );
    expect(error.isRejection()).toBe(true);
    expect(isRejection(error)).toBe(true);
    expect(isBrokenCircuitError(error)).toBe(true);
    expect(isIsolatedCircuitError(error)).toBe(false);
  });

  it('execute() throws the BrokenCircuitError', async () => {
    const cb = setup(opensOnFirstFailure);
    await cb.fail();
    await expect(cb.pipeline.execute(() => 1)).rejects.toBeInstanceOf(BrokenCircuitError);
  });

  it('has no cause when it broke on a handled value', async () => {
    const cb = setup({
      consecutiveFailures: 1,
      shouldHandle: ({ outcome }) => !outcome.ok || outcome.value === 503,
    });
    await cb.pipeline.settle(() => 503);
    const error = (await cb.succeed()).error as BrokenCircuitError;
    expect(error).toBeInstanceOf(BrokenCircuitError);
    expect(error.cause).toBeUndefined();
    expect(cb.stateProvider.lastHandledOutcome?.value).toBe(503);
  });

  it('failures of executions started before the break neither re-open nor extend it', async () => {
    const cb = setup(opensOnFirstFailure);
    const slow = deferred();
    const inFlight = cb.pipeline.settle(() => slow.promise);
    await cb.fail();
    await cb.time.advance(600);
    slow.reject(new Boom('late'));
    expect((await inFlight).error).toBeInstanceOf(Boom);
    expect(cb.eventNames()).toEqual(['OnCircuitOpened']);
    await cb.time.advance(400);
    expect((await cb.succeed()).ok).toBe(true); // the break still ended at 1 s
  });

  it('never schedules a timer', async () => {
    const cb = setup(opensOnFirstFailure);
    await cb.fail();
    await cb.succeed();
    await cb.time.advance(5_000);
    expect(cb.time.pendingTimers).toBe(0);
  });
});

describe('half-open', () => {
  it('is decided lazily: the state reads open after the break until the next execution', async () => {
    const cb = setup(opensOnFirstFailure);
    await cb.fail();
    await cb.time.advance(10_000);
    expect(cb.stateProvider.circuitState).toBe('open');
    expect(cb.eventNames()).toEqual(['OnCircuitOpened']);
    await cb.succeed();
    expect(cb.eventNames()).toEqual(['OnCircuitOpened', 'OnCircuitHalfOpened', 'OnCircuitClosed']);
  });

  it('lets exactly one probe through; concurrent executions are rejected', async () => {
    const cb = setup(opensOnFirstFailure);
    await cb.fail();
    await cb.time.advance(1_000);
    const probe = deferred<string>();
    let probeCalls = 0;
    const probing = cb.pipeline.settle(() => {
      probeCalls++;
      return probe.promise;
    });
    await cb.time.advance(100);
    expect(cb.stateProvider.circuitState).toBe('half-open');
    const concurrent = await Promise.all([cb.succeed(), cb.succeed(), cb.succeed()]);
    for (const outcome of concurrent) {
      expect(outcome.error).toBeInstanceOf(BrokenCircuitError);
      expect((outcome.error as BrokenCircuitError).retryAfter).toBe(900);
    }
    expect(probeCalls).toBe(1);
    expect(cb.calls).toBe(1); // only the breaking failure
    probe.resolve('fine');
    expect((await probing).value).toBe('fine');
    expect(cb.stateProvider.circuitState).toBe('closed');
    expect((await cb.succeed()).ok).toBe(true);
  });

  it('a successful probe closes the circuit', async () => {
    const closed: unknown[] = [];
    const cb = setup({ ...opensOnFirstFailure, onClosed: (args) => void closed.push(args) });
    await cb.fail();
    await cb.time.advance(1_000);
    await cb.succeed();
    expect(cb.stateProvider.circuitState).toBe('closed');
    expect(cb.stateProvider.lastHandledOutcome).toBeUndefined();
    expect(closed).toHaveLength(1);
    expect(closed[0]).toMatchObject({ isManual: false, outcome: { ok: true, value: 'ok' } });
  });

  it('a failed probe re-opens the circuit for the generated break duration', async () => {
    const attempts: number[] = [];
    const cb = setup({
      consecutiveFailures: 1,
      breakDurationGenerator: ({ halfOpenAttempts }) => {
        attempts.push(halfOpenAttempts);
        return 1_000 * 2 ** halfOpenAttempts;
      },
    });
    const opened: number[] = [];
    cb.events.length = 0;
    await cb.fail(); // 1 s
    await cb.time.advance(1_000);
    await cb.fail(); // probe fails: 2 s
    expect(cb.stateProvider.circuitState).toBe('open');
    await cb.time.advance(1_999);
    expect((await cb.succeed()).error).toBeInstanceOf(BrokenCircuitError);
    await cb.time.advance(1);
    await cb.fail(); // second probe fails: 4 s
    await cb.time.advance(3_999);
    expect(((await cb.succeed()).error as BrokenCircuitError).retryAfter).toBe(1);
    await cb.time.advance(1);
    await cb.succeed(); // closes, attempts reset
    await cb.fail();
    for (const e of cb.events)
      if (e.event === 'OnCircuitOpened') opened.push((e.args as { breakDuration: number }).breakDuration);
    expect(attempts).toEqual([0, 1, 2, 0]);
    expect(opened).toEqual([1_000, 2_000, 4_000, 1_000]);
  });

  it('an invalid or throwing breakDurationGenerator keeps breakDuration', async () => {
    for (const breakDurationGenerator of [
      () => -5,
      () => 'later' as never,
      () => {
        throw new Error('bug');
      },
    ]) {
      const cb = setup({ consecutiveFailures: 1, breakDuration: 700, breakDurationGenerator });
      await cb.fail();
      expect(((await cb.succeed()).error as BrokenCircuitError).retryAfter).toBe(700);
    }
  });

  it('accepts a duration string from breakDurationGenerator', async () => {
    const cb = setup({ consecutiveFailures: 1, breakDurationGenerator: () => '2m' });
    await cb.fail();
    expect(((await cb.succeed()).error as BrokenCircuitError).retryAfter).toBe(120_000);
  });

  it('an unhandled probe outcome closes the circuit (Polly #1979)', async () => {
    const cb = setup({
      ...opensOnFirstFailure,
      shouldHandle: ({ outcome }) => outcome.error instanceof Boom,
    });
    await cb.fail();
    await cb.time.advance(1_000);
    await cb.fail(new TypeError('not a Boom'));
    expect(cb.stateProvider.circuitState).toBe('closed');
  });

  it('a probe still running after a whole break duration no longer holds the slot', async () => {
    const cb = setup(opensOnFirstFailure);
    await cb.fail();
    await cb.time.advance(1_000);
    const hung = cb.pipeline.settle(() => new Promise(() => {}));
    await cb.time.advance(999);
    expect((await cb.succeed()).error).toBeInstanceOf(BrokenCircuitError);
    await cb.time.advance(1);
    expect((await cb.succeed()).ok).toBe(true); // second probe
    expect(cb.stateProvider.circuitState).toBe('closed');
    void hung;
  });

  it('a probe aborted by its caller leaves the circuit half-open for the next probe', async () => {
    const cb = setup(opensOnFirstFailure);
    await cb.fail();
    await cb.time.advance(1_000);
    const controller = new AbortController();
    const probe = cb.pipeline.settle(
      ({ signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      { signal: controller.signal },
    );
    await cb.time.advance(10);
    controller.abort(new Error('user left'));
    expect(((await probe).error as Error).message).toBe('user left');
    expect(cb.stateProvider.circuitState).toBe('half-open');
    expect((await cb.succeed()).ok).toBe(true);
    expect(cb.stateProvider.circuitState).toBe('closed');
    expect(cb.eventNames()).toEqual(['OnCircuitOpened', 'OnCircuitHalfOpened', 'OnCircuitClosed']);
  });

  it('a failing onHalfOpened fails the probe without running it; the next execution probes', async () => {
    let fail = true;
    const cb = setup({
      ...opensOnFirstFailure,
      onHalfOpened: () => {
        if (fail) throw new Error('handler');
      },
    });
    await cb.fail();
    await cb.time.advance(1_000);
    expect(((await cb.succeed()).error as Error).message).toBe('handler');
    expect(cb.calls).toBe(1);
    fail = false;
    expect((await cb.succeed()).ok).toBe(true);
  });
});

describe('aborts', () => {
  it('an abort of the caller signal is not a failure by default', async () => {
    const cb = setup({ consecutiveFailures: 1 });
    for (let i = 0; i < 3; i++) {
      const controller = new AbortController();
      const outcome = cb.pipeline.settle(
        ({ signal }) =>
          new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
        { signal: controller.signal },
      );
      controller.abort();
      expect((await outcome).ok).toBe(false);
    }
    expect(cb.stateProvider.circuitState).toBe('closed');
  });

  it('an abort error that is not the caller signal reason is a failure', async () => {
    const cb = setup({ consecutiveFailures: 1 });
    await cb.fail(new DOMException('aborted elsewhere', 'AbortError'));
    expect(cb.stateProvider.circuitState).toBe('open');
  });

  it('an already aborted signal fails before the breaker counts anything', async () => {
    const cb = setup({ consecutiveFailures: 1 });
    const outcome = await cb.pipeline.settle(() => 1, { signal: AbortSignal.abort('gone') });
    expect(outcome.error).toBe('gone');
    expect(cb.stateProvider.circuitState).toBe('closed');
  });
});

describe('manual control', () => {
  it('isolates and closes the circuit, with events', async () => {
    const manualControl = new CircuitBreakerManualControl();
    const opened: unknown[] = [];
    const closed: unknown[] = [];
    const cb = setup({
      ...opensOnFirstFailure,
      manualControl,
      onOpened: (args) => void opened.push(args),
      onClosed: (args) => void closed.push(args),
    });
    await manualControl.isolate();
    expect(manualControl.isolated).toBe(true);
    expect(cb.stateProvider.circuitState).toBe('isolated');
    const outcome = await cb.succeed();
    expect(cb.calls).toBe(0);
    expect(outcome.error).toBeInstanceOf(IsolatedCircuitError);
    expect((outcome.error as IsolatedCircuitError).code).toBe('CIRCUIT_ISOLATED');
    expect(isRejection(outcome.error)).toBe(true);
    expect(isIsolatedCircuitError(outcome.error)).toBe(true);
    expect(opened).toMatchObject([
      { isManual: true, breakDuration: Number.POSITIVE_INFINITY, outcome: undefined },
    ]);

    await cb.time.advance(86_400_000); // isolation does not expire
    expect((await cb.succeed()).error).toBeInstanceOf(IsolatedCircuitError);

    await manualControl.close();
    expect(cb.stateProvider.circuitState).toBe('closed');
    expect(closed).toMatchObject([{ isManual: true, outcome: undefined }]);
    expect((await cb.succeed()).ok).toBe(true);
    expect(cb.eventNames()).toEqual(['OnCircuitOpened', 'OnCircuitClosed']);
  });

  it('close() resets the statistics and is silent on a closed circuit', async () => {
    const manualControl = new CircuitBreakerManualControl();
    const cb = setup({ consecutiveFailures: 2, manualControl });
    await cb.fail();
    await manualControl.close();
    await cb.fail();
    expect(cb.stateProvider.circuitState).toBe('closed');
    expect(cb.events).toEqual([]);
  });

  it('close() ends an automatic break early', async () => {
    const manualControl = new CircuitBreakerManualControl();
    const cb = setup({ ...opensOnFirstFailure, manualControl });
    await cb.fail();
    await manualControl.close();
    expect((await cb.succeed()).ok).toBe(true);
  });

  it('serves several breakers, and a breaker built while isolated starts isolated', async () => {
    const manualControl = new CircuitBreakerManualControl(true);
    const a = setup({ manualControl });
    const b = setup({ manualControl });
    expect(a.stateProvider.circuitState).toBe('isolated');
    expect(b.stateProvider.circuitState).toBe('isolated');
    await manualControl.close();
    expect(a.stateProvider.circuitState).toBe('closed');
    expect(b.stateProvider.circuitState).toBe('closed');
    await manualControl.isolate();
    expect(a.stateProvider.circuitState).toBe('isolated');
    expect(b.stateProvider.circuitState).toBe('isolated');
  });

  it('without breakers, isolate() and close() just record the wish', async () => {
    const manualControl = new CircuitBreakerManualControl();
    await manualControl.isolate();
    expect(manualControl.isolated).toBe(true);
    await manualControl.close();
    expect(manualControl.isolated).toBe(false);
  });
});

describe('state provider', () => {
  it('reads closed before it is attached', () => {
    const provider = new CircuitBreakerStateProvider();
    expect(provider.isAttached).toBe(false);
    expect(provider.circuitState).toBe('closed');
    expect(provider.lastHandledOutcome).toBeUndefined();
  });

  it('follows every state and the last handled outcome', async () => {
    const cb = setup(opensOnFirstFailure);
    expect(cb.stateProvider.isAttached).toBe(true);
    const breaking = new Boom('x');
    await cb.fail(breaking);
    expect(cb.stateProvider.circuitState).toBe('open');
    expect(cb.stateProvider.lastHandledOutcome?.error).toBe(breaking);
    await cb.time.advance(1_000);
    const probe = deferred();
    const probing = cb.pipeline.settle(() => probe.promise);
    await cb.time.advance(0);
    expect(cb.stateProvider.circuitState).toBe('half-open');
    probe.resolve();
    await probing;
    expect(cb.stateProvider.circuitState).toBe('closed');
  });
});

describe('events', () => {
  it('reports OnCircuitOpened, OnCircuitHalfOpened, OnCircuitClosed in order with their arguments', async () => {
    const calls: string[] = [];
    const cb = setup({
      ...opensOnFirstFailure,
      onOpened: () => void calls.push('opened'),
      onHalfOpened: () => void calls.push('half-opened'),
      onClosed: () => void calls.push('closed'),
    });
    const breaking = new Boom();
    await cb.fail(breaking);
    await cb.time.advance(1_000);
    await cb.succeed();
    expect(calls).toEqual(['opened', 'half-opened', 'closed']);
    expect(cb.eventNames()).toEqual(['OnCircuitOpened', 'OnCircuitHalfOpened', 'OnCircuitClosed']);
    expect(cb.events.every((e) => e.strategy === 'circuit-breaker')).toBe(true);
    expect(cb.events[0]!.args).toMatchObject({
      breakDuration: 1_000,
      isManual: false,
      outcome: { ok: false, error: breaking },
    });
    expect(cb.events[1]!.args).toEqual({ context: cb.events[1]!.context });
    expect(cb.events[2]!.args).toMatchObject({ isManual: false, outcome: { ok: true, value: 'ok' } });
  });

  it('the execution that opened the circuit waits for onOpened; later handlers run after it', async () => {
    const order: string[] = [];
    const release = deferred();
    const cb = setup({
      ...opensOnFirstFailure,
      onOpened: async () => {
        order.push('opened start');
        await release.promise;
        order.push('opened end');
      },
      onHalfOpened: () => void order.push('half-opened'),
    });
    let settled = false;
    const opening = cb.fail().then(() => {
      settled = true;
    });
    await cb.time.advance(1_000);
    expect(settled).toBe(false);
    const probe = cb.succeed(); // half-opens while onOpened is still running
    await cb.time.advance(0);
    expect(order).toEqual(['opened start']);
    release.resolve();
    await opening;
    await probe;
    expect(order).toEqual(['opened start', 'opened end', 'half-opened']);
  });

  it('a throwing onOpened fails the execution that opened the circuit, which is open all the same', async () => {
    const cb = setup({ ...opensOnFirstFailure, onOpened: () => Promise.reject(new Error('handler')) });
    expect(((await cb.fail()).error as Error).message).toBe('handler');
    expect(cb.stateProvider.circuitState).toBe('open');
  });
});

describe('throwing option callbacks (the execution fails with their error, as an outcome)', () => {
  const handlerError = new Error('handler');

  /** The breaker inside a retry: `seen` holds the errors the retry was handed by the breaker. */
  function insideRetry(options: CircuitBreakerStrategyOptions) {
    const time = new FakeTimeProvider();
    const stateProvider = new CircuitBreakerStateProvider();
    const seen: unknown[] = [];
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(
        retryStrategy({
          maxRetryAttempts: 1,
          delay: 0,
          onRetry: ({ outcome }) => void seen.push(outcome.error),
        }),
      )
      .add(circuitBreakerStrategy({ ...options, stateProvider }))
      .build();
    return { time, stateProvider, seen, pipeline };
  }

  it.each([
    [
      'synchronous',
      () => {
        throw handlerError;
      },
    ],
    ['asynchronous', () => Promise.reject(handlerError)],
  ])('a %s throw from shouldHandle; nothing is counted', async (_, shouldHandle) => {
    const { pipeline, stateProvider, seen } = insideRetry({ consecutiveFailures: 1, shouldHandle });
    expect((await pipeline.settle(() => Promise.reject(new Boom()))).error).toBe(handlerError);
    expect(seen).toEqual([handlerError]);
    expect(stateProvider.circuitState).toBe('closed');
  });

  it('a throwing shouldHandle on the probe frees the probe slot: the next execution probes', async () => {
    let fail = false;
    const cb = setup({
      ...opensOnFirstFailure,
      shouldHandle: ({ outcome }) => {
        if (fail) throw handlerError;
        return !outcome.ok;
      },
    });
    await cb.fail();
    await cb.time.advance(1_000);
    fail = true;
    expect((await cb.succeed()).error).toBe(handlerError);
    expect(cb.stateProvider.circuitState).toBe('half-open');
    fail = false;
    expect((await cb.succeed()).ok).toBe(true);
    expect(cb.stateProvider.circuitState).toBe('closed');
  });

  it('a throwing onOpened: the circuit opened all the same', async () => {
    const { pipeline, stateProvider, seen } = insideRetry({
      ...opensOnFirstFailure,
      onOpened: () => {
        throw handlerError;
      },
    });
    const outcome = await pipeline.settle(() => Promise.reject(new Boom()));
    expect(seen).toEqual([handlerError]);
    expect(outcome.error).toBeInstanceOf(BrokenCircuitError);
    expect(stateProvider.circuitState).toBe('open');
  });

  it('a throwing onClosed: the circuit closed all the same', async () => {
    const { pipeline, stateProvider, seen, time } = insideRetry({
      ...opensOnFirstFailure,
      onClosed: async () => {
        throw handlerError;
      },
    });
    await pipeline.settle(() => Promise.reject(new Boom()));
    await time.advance(1_000);
    seen.length = 0;
    expect((await pipeline.settle(() => 'probe')).value).toBe('probe');
    expect(seen).toEqual([handlerError]);
    expect(stateProvider.circuitState).toBe('closed');
  });

  it('a throwing onHalfOpened fails the probe', async () => {
    const { pipeline, stateProvider, seen, time } = insideRetry({
      ...opensOnFirstFailure,
      onHalfOpened: () => {
        throw handlerError;
      },
    });
    await pipeline.settle(() => Promise.reject(new Boom()));
    await time.advance(1_000);
    seen.length = 0;
    // The failed probe freed its slot, so the retry probes again, and closes the circuit.
    expect((await pipeline.settle(() => 'probe')).value).toBe('probe');
    expect(seen).toEqual([handlerError]);
    expect(stateProvider.circuitState).toBe('closed');
  });
});

describe('health metrics', () => {
  it('uses rolling windows down to a 200 ms sampling duration, one window below', () => {
    const time = new FakeTimeProvider();
    expect(createHealthMetrics(200, time)).toBeInstanceOf(RollingHealthMetrics);
    expect(createHealthMetrics(199, time)).toBeInstanceOf(SingleHealthMetrics);
  });

  it('a single window restarts once the sampling duration is over', async () => {
    const time = new FakeTimeProvider();
    const metrics = new SingleHealthMetrics(100, time);
    metrics.incrementFailure();
    metrics.incrementSuccess();
    expect(metrics.healthInfo()).toEqual({ throughput: 2, failureRate: 0.5, failureCount: 1 });
    await time.advance(99);
    metrics.incrementFailure();
    expect(metrics.healthInfo()).toEqual({ throughput: 3, failureRate: 2 / 3, failureCount: 2 });
    await time.advance(1);
    expect(metrics.healthInfo()).toEqual({ throughput: 0, failureRate: 0, failureCount: 0 });
  });

  it("rolling windows match a plain queue of windows (Polly's algorithm) over a long run", async () => {
    const time = new FakeTimeProvider();
    const metrics = new RollingHealthMetrics(1_000, 10, time);
    // Reference: an unbounded queue of { startedAt, successes, failures }.
    const windows: Array<{ startedAt: number; successes: number; failures: number }> = [];
    const reference = () => {
      const now = time.monotonic();
      const last = windows.at(-1);
      if (!last || now - last.startedAt >= 100) windows.push({ startedAt: now, successes: 0, failures: 0 });
      while (now - windows[0]!.startedAt >= 1_000) windows.shift();
      return windows.at(-1)!;
    };
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 5_000; i++) {
      if (random() < 0.3) {
        metrics.incrementFailure();
        reference().failures++;
      } else {
        metrics.incrementSuccess();
        reference().successes++;
      }
      await time.advance(Math.floor(random() * (random() < 0.05 ? 1_500 : 60)));
      if (i % 50 === 0) {
        reference();
        const failures = windows.reduce((sum, w) => sum + w.failures, 0);
        const throughput = windows.reduce((sum, w) => sum + w.successes + w.failures, 0);
        const info = metrics.healthInfo();
        expect(info.failureCount).toBe(failures);
        expect(info.throughput).toBe(throughput);
      }
    }
    metrics.reset();
    expect(metrics.healthInfo()).toEqual({ throughput: 0, failureRate: 0, failureCount: 0 });
  });
});

describe('with settle() and match()', () => {
  it('names each rejection by code', async () => {
    const manualControl = new CircuitBreakerManualControl();
    const time = new FakeTimeProvider();
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addCircuitBreaker({ ...opensOnFirstFailure, manualControl })
      .build();
    const describe = async () =>
      (await pipeline.settle(() => 'value')).match({
        ok: (value) => `ok ${value}`,
        CIRCUIT_OPEN: (error) => `open, retry in ${error.retryAfter} ms`,
        CIRCUIT_ISOLATED: () => 'isolated',
        error: () => 'other',
      });
    expect(await describe()).toBe('ok value');
    await pipeline.settle(() => Promise.reject(new Boom()));
    expect(await describe()).toBe('open, retry in 1000 ms');
    await manualControl.isolate();
    expect(await describe()).toBe('isolated');
  });
});
