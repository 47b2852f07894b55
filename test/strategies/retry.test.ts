import { getEventListeners } from 'node:events';
import {
  getLockToken,
  MemoryLockStore,
  type OnRetryArguments,
  ResiliencePipelineBuilder,
  type RetryStrategyOptions,
  retryDefaults,
  TimeoutRejectedError,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import { retryDelay } from '../../src/strategies/retry/backoff.ts';
import { maxRetryDelay, minRetryAttempts, minRetryDelay } from '../../src/strategies/retry/defaults.ts';

function setup(options: RetryStrategyOptions = {}) {
  const time = new FakeTimeProvider();
  const retries: OnRetryArguments[] = [];
  const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
    .addRetry({
      ...options,
      onRetry: async (args) => {
        retries.push(args);
        await options.onRetry?.(args);
      },
    })
    .build();
  return { time, retries, pipeline };
}

/** A callback that fails `failures` times, then returns the number of calls. */
function flaky(failures: number) {
  const state = { calls: 0 };
  const run = async () => {
    state.calls++;
    if (state.calls <= failures) throw new Error(`failure ${state.calls}`);
    return state.calls;
  };
  return Object.assign(run, { state });
}

describe('retry defaults (Polly v8)', () => {
  it('pins every default', () => {
    expect(retryDefaults).toEqual({
      maxRetryAttempts: 3,
      delay: 2_000,
      backoffType: 'constant',
      useJitter: false,
    });
    expect({ minRetryAttempts, minRetryDelay, maxRetryDelay }).toEqual({
      minRetryAttempts: 1,
      minRetryDelay: 0,
      maxRetryDelay: 86_400_000,
    });
  });

  it('retries every error 3 times, 2 s apart, then returns the last error', async () => {
    const { time, retries, pipeline } = setup();
    const run = flaky(10);
    const settled = pipeline.settle(run);
    await time.advance(0);
    expect(run.state.calls).toBe(1);
    await time.advance(1_999);
    expect(run.state.calls).toBe(1);
    await time.advance(1);
    expect(run.state.calls).toBe(2);
    await time.advance(4_000);
    const outcome = await settled;
    expect(run.state.calls).toBe(4);
    expect((outcome.error as Error).message).toBe('failure 4');
    expect(retries.map((r) => r.retryDelay)).toEqual([2_000, 2_000, 2_000]);
    expect(retries.map((r) => r.attemptNumber)).toEqual([0, 1, 2]);
    expect(time.pendingTimers).toBe(0);
  });

  it('does not retry a success, and returns the first success after failures', async () => {
    const { time, pipeline } = setup({ delay: 10 });
    const once = flaky(0);
    expect(await pipeline.execute(once)).toBe(1);
    const twice = flaky(2);
    const result = pipeline.execute(twice);
    await time.advance(20);
    expect(await result).toBe(3);
  });
});

describe('retry options', () => {
  it('maxRetryAttempts bounds the calls to 1 + maxRetryAttempts', async () => {
    const { time, pipeline } = setup({ maxRetryAttempts: 1, delay: 0 });
    const run = flaky(5);
    const outcome = pipeline.settle(run);
    await time.advance(0);
    expect((await outcome).ok).toBe(false);
    expect(run.state.calls).toBe(2);
  });

  it('maxRetryAttempts: Infinity retries until success', async () => {
    const { pipeline } = setup({ maxRetryAttempts: Number.POSITIVE_INFINITY, delay: 0 });
    const run = flaky(50);
    expect(await pipeline.execute(run)).toBe(51);
  });

  it.each([
    ['constant', false, [100, 100, 100, 100]],
    ['linear', false, [100, 200, 300, 400]],
    ['exponential', false, [100, 200, 400, 800]],
  ] as const)('backoffType %s gives %j', async (backoffType, useJitter, delays) => {
    const { time, retries, pipeline } = setup({ maxRetryAttempts: 4, delay: 100, backoffType, useJitter });
    const outcome = pipeline.settle(flaky(10));
    await time.advance(10_000);
    await outcome;
    expect(retries.map((r) => r.retryDelay)).toEqual(delays);
  });

  it('useJitter spreads constant and linear delays over +-25%', async () => {
    for (const [random, expected] of [
      [0, [75, 150]],
      [0.5, [100, 200]],
      [0.999, [124.95, 249.9]],
    ] as const) {
      const { time, retries, pipeline } = setup({
        maxRetryAttempts: 1,
        delay: 100,
        useJitter: true,
        randomizer: () => random,
      });
      const constant = pipeline.settle(flaky(10));
      await time.advance(1_000);
      await constant;
      expect(retries[0]!.retryDelay).toBeCloseTo(expected[0], 9);

      const linear = setup({
        maxRetryAttempts: 2,
        delay: 100,
        backoffType: 'linear',
        useJitter: true,
        randomizer: () => random,
      });
      const settled = linear.pipeline.settle(flaky(10));
      await linear.time.advance(1_000);
      await settled;
      expect(linear.retries[1]!.retryDelay).toBeCloseTo((expected[1] / 2) * 2, 9);
    }
  });

  it('exponential + useJitter follows decorrelated jitter V2, state carried between attempts', () => {
    const state = { previous: 0 };
    const randoms = [0.3, 0.7, 0.1];
    const delays = randoms.map((r, attempt) =>
      retryDelay('exponential', true, attempt, 1_000, undefined, state, () => r),
    );
    let previous = 0;
    const expected = randoms.map((r, attempt) => {
      const t = attempt + r;
      const next = 2 ** t * Math.tanh(Math.sqrt(4 * t));
      const delay = (next - previous) * (1 / 1.4) * 1_000;
      previous = next;
      return delay;
    });
    expect(delays).toEqual(expected);
    expect(delays.every((d) => d > 0)).toBe(true);
  });

  it("exponential + useJitter stays within Polly's documented spread: 0 to delay * 2^(attempt + 1)", () => {
    // A seeded generator keeps the test deterministic (mulberry32).
    let seed = 42;
    const random = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
    };
    for (let run = 0; run < 2_000; run++) {
      const state = { previous: 0 };
      for (let attempt = 0; attempt < 8; attempt++) {
        const delay = retryDelay('exponential', true, attempt, 1_000, undefined, state, random);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(1_000 * 2 ** (attempt + 1));
      }
    }
  });

  it('never overflows: huge attempts give the largest delay, or maxDelay', () => {
    for (const jitter of [false, true]) {
      for (const attempt of [1_023, 1_024, 1_100, 5_000]) {
        const fresh = () => ({ previous: 0 });
        expect(retryDelay('exponential', jitter, attempt, 2_000, undefined, fresh(), () => 0.5)).toBe(
          Number.MAX_SAFE_INTEGER,
        );
        expect(retryDelay('exponential', jitter, attempt, 2_000, 60_000, fresh(), () => 0.5)).toBe(60_000);
      }
      // Past the overflow, the carried state stays usable: no NaN, no negative delay.
      const carried = { previous: 0 };
      for (let attempt = 1_020; attempt < 1_030; attempt++) {
        const delay = retryDelay('exponential', jitter, attempt, 2_000, undefined, carried, () => 0.5);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(Number.isNaN(delay)).toBe(false);
      }
    }
    expect(
      retryDelay(
        'linear',
        false,
        Number.MAX_SAFE_INTEGER,
        86_400_000,
        undefined,
        { previous: 0 },
        Math.random,
      ),
    ).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('delay 0 retries at once, even with backoff and jitter', async () => {
    const { retries, pipeline } = setup({ delay: 0, backoffType: 'exponential', useJitter: true });
    expect(await pipeline.execute(flaky(3))).toBe(4);
    expect(retries.map((r) => r.retryDelay)).toEqual([0, 0, 0]);
  });

  it('maxDelay caps computed delays', async () => {
    const { time, retries, pipeline } = setup({
      maxRetryAttempts: 5,
      delay: '1s',
      backoffType: 'exponential',
      maxDelay: '3s',
    });
    const outcome = pipeline.settle(flaky(10));
    await time.advance(60_000);
    await outcome;
    expect(retries.map((r) => r.retryDelay)).toEqual([1_000, 2_000, 3_000, 3_000, 3_000]);
  });

  it('delayGenerator overrides the delay (sync, async, duration strings) and is not capped by maxDelay', async () => {
    const generated = [500, '2s', undefined, -5, 'soon'];
    const { time, retries, pipeline } = setup({
      maxRetryAttempts: 5,
      delay: 100,
      maxDelay: 1_000,
      delayGenerator: async ({ attemptNumber }) => generated[attemptNumber] as never,
    });
    const outcome = pipeline.settle(flaky(10));
    await time.advance(60_000);
    await outcome;
    // undefined and invalid values keep the computed delay
    expect(retries.map((r) => r.retryDelay)).toEqual([500, 2_000, 100, 100, 100]);
  });

  it('delayGenerator receives the outcome, context and attempt number', async () => {
    const seen: unknown[] = [];
    const { time, pipeline } = setup({
      maxRetryAttempts: 1,
      delayGenerator: ({ outcome, context, attemptNumber }) => {
        seen.push((outcome.error as Error).message, context.operationKey, attemptNumber);
        return 0;
      },
    });
    const outcome = pipeline.settle(flaky(10), { operationKey: 'k' });
    await time.advance(0);
    await outcome;
    expect(seen).toEqual(['failure 1', 'k', 0]);
  });

  it('shouldHandle decides, can retry on a value, and may be async', async () => {
    const { pipeline } = setup({
      delay: 0,
      shouldHandle: async ({ outcome }) => outcome.ok && outcome.value === 'not yet',
    });
    let calls = 0;
    expect(await pipeline.execute(() => (++calls < 3 ? 'not yet' : 'ready'))).toBe('ready');
    const failing = flaky(1);
    await expect(pipeline.execute(failing)).rejects.toThrow('failure 1');
    expect(failing.state.calls).toBe(1);
  });

  it('shouldHandle gets zero-based attempt numbers', async () => {
    const attempts: number[] = [];
    const { pipeline } = setup({
      delay: 0,
      shouldHandle: ({ attemptNumber, outcome }) => {
        attempts.push(attemptNumber);
        return !outcome.ok;
      },
    });
    await pipeline.execute(flaky(2));
    expect(attempts).toEqual([0, 1, 2]);
  });

  it('onRetry gets attemptNumber, retryDelay, outcome, context and the attempt duration, before the delay', async () => {
    const { time, retries, pipeline } = setup({ delay: 1_000, maxRetryAttempts: 1 });
    const slowFailure = async () => {
      await new Promise((resolve) => time.setTimeout(() => resolve(undefined), 250));
      throw new Error('slow');
    };
    const outcome = pipeline.settle(slowFailure, { operationKey: 'op' });
    await time.advance(250);
    expect(retries).toHaveLength(1);
    const [args] = retries;
    expect(args!.attemptNumber).toBe(0);
    expect(args!.retryDelay).toBe(1_000);
    expect(args!.duration).toBe(250);
    expect((args!.outcome.error as Error).message).toBe('slow');
    expect(args!.context.operationKey).toBe('op');
    await time.advance(1_250);
    await outcome;
  });

  it('waits for an async onRetry before starting the delay', async () => {
    const time = new FakeTimeProvider();
    const log: string[] = [];
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addRetry({
        delay: 100,
        maxRetryAttempts: 1,
        onRetry: () =>
          new Promise<void>((resolve) =>
            time.setTimeout(() => {
              log.push('onRetry done');
              resolve();
            }, 50),
          ),
      })
      .build();
    let calls = 0;
    const result = pipeline.execute(() => {
      log.push(`call ${++calls} at ${time.monotonic()}`);
      if (calls === 1) throw new Error('x');
      return calls;
    });
    await time.advance(150);
    expect(await result).toBe(2);
    expect(log).toEqual(['call 1 at 0', 'onRetry done', 'call 2 at 150']);
  });

  it('a throwing shouldHandle, delayGenerator or onRetry ends the execution with its error', async () => {
    const bug = new Error('option bug');
    for (const option of ['shouldHandle', 'delayGenerator', 'onRetry'] as const) {
      const time = new FakeTimeProvider();
      const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
        .addRetry({
          delay: 0,
          [option]: () => {
            throw bug;
          },
        })
        .build();
      const run = flaky(5);
      const outcome = await pipeline.settle(run);
      expect(outcome.error).toBe(bug);
      expect(run.state.calls).toBe(1);
    }
  });
});

describe('retry and aborts', () => {
  it('a caller abort during a delay stops at once with the abort reason, leaving no timer or listener', async () => {
    const { time, pipeline } = setup({ delay: '1m' });
    const controller = new AbortController();
    const run = flaky(10);
    const outcome = pipeline.settle(run, { signal: controller.signal });
    await time.advance(1_000);
    expect(run.state.calls).toBe(1);
    expect(time.pendingTimers).toBe(1);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    expect((await outcome).error).toBe(reason);
    expect(run.state.calls).toBe(1);
    expect(time.pendingTimers).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('a caller abort during an attempt is not retried; the attempt outcome is returned', async () => {
    const { time, retries, pipeline } = setup({ delay: 0 });
    const controller = new AbortController();
    let calls = 0;
    const outcome = pipeline.settle(
      async ({ signal }) => {
        calls++;
        await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      },
      { signal: controller.signal },
    );
    await time.advance(0);
    controller.abort('stop');
    expect((await outcome).error).toBe('stop');
    expect(calls).toBe(1);
    expect(retries).toHaveLength(0);
  });

  it('once the caller aborted, even a custom shouldHandle that says yes does not retry', async () => {
    const { time, pipeline } = setup({ delay: 0, shouldHandle: () => true });
    const controller = new AbortController();
    let calls = 0;
    const outcome = pipeline.settle(
      async () => {
        calls++;
        controller.abort('stop');
        throw new Error('own error after abort');
      },
      { signal: controller.signal },
    );
    await time.advance(0);
    expect(((await outcome).error as Error).message).toBe('own error after abort');
    expect(calls).toBe(1);
  });

  it('a caller abort during onRetry skips the delay and the next attempt', async () => {
    const controller = new AbortController();
    const { time, pipeline } = setup({ delay: 100, onRetry: () => controller.abort('during onRetry') });
    const run = flaky(10);
    const outcome = pipeline.settle(run, { signal: controller.signal });
    await time.advance(0);
    expect((await outcome).error).toBe('during onRetry');
    expect(run.state.calls).toBe(1);
    expect(time.pendingTimers).toBe(0);
  });

  it('an abort after completion changes nothing and leaves no listener', async () => {
    const { pipeline } = setup({ delay: 0 });
    const controller = new AbortController();
    expect(await pipeline.execute(flaky(2), { signal: controller.signal })).toBe(3);
    controller.abort();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('retries a timeout of an inner timeout strategy (TimeoutRejectedError is an ordinary error to retry)', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addRetry({ delay: 0, maxRetryAttempts: 1 })
      .addTimeout(100)
      .build();
    let calls = 0;
    const outcome = pipeline.settle(async ({ signal }) => {
      calls++;
      if (calls === 2) return 'second try';
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    });
    await time.advance(100);
    expect((await outcome).value).toBe('second try');
    expect(calls).toBe(2);
    expect(TimeoutRejectedError).toBeDefined();
  });
});

describe('retry as the innermost strategy, where it calls the callback itself', () => {
  it('retries sync throws and rejections and resolves thenables, as with a strategy inside it', async () => {
    for (const inner of ['innermost', 'timeout inside'] as const) {
      const builder = new ResiliencePipelineBuilder().addRetry({ maxRetryAttempts: 3, delay: 0 });
      const pipeline = (inner === 'innermost' ? builder : builder.addTimeout('5s')).build();
      let calls = 0;
      const value = await pipeline.execute(() => {
        calls++;
        if (calls === 1) throw new Error('sync');
        if (calls === 2) return Promise.reject(new Error('async'));
        const thenable = {
          // biome-ignore lint/suspicious/noThenProperty: a non-native thenable is what this checks
          then: (resolve: (value: string) => void) => resolve(`call ${calls}`),
        };
        return thenable as PromiseLike<string>;
      });
      expect({ inner, value, calls }).toEqual({ inner, value: 'call 3', calls: 3 });
      const outcome = await pipeline.settle(() => {
        throw new Error('always');
      });
      expect(outcome.error).toEqual(new Error('always'));
    }
  });

  it('runs the callback in the ambient context under a lock: getLockToken() after an await', async () => {
    const pipeline = new ResiliencePipelineBuilder()
      .addLock({ key: () => 'retry-innermost', store: new MemoryLockStore() })
      .addRetry({ delay: 0 })
      .build();
    let calls = 0;
    const tokens = await pipeline.execute(async (context) => {
      await Promise.resolve();
      if (++calls < 2) throw new Error('flaky');
      return [getLockToken(), getLockToken(context)];
    });
    expect(tokens).toEqual([1, 1]);
  });
});

describe('retry validation', () => {
  const build = (options: RetryStrategyOptions) => () =>
    new ResiliencePipelineBuilder().addRetry(options).build();

  it.each([
    [
      { maxRetryAttempts: 0 },
      'Invalid option retry.maxRetryAttempts: expected a whole number >= 1, or Infinity, got 0.',
    ],
    [
      { maxRetryAttempts: -1 },
      'Invalid option retry.maxRetryAttempts: expected a whole number >= 1, or Infinity, got -1.',
    ],
    [
      { maxRetryAttempts: 1.5 },
      'Invalid option retry.maxRetryAttempts: expected a whole number >= 1, or Infinity, got 1.5.',
    ],
    [
      { maxRetryAttempts: Number.NaN },
      'Invalid option retry.maxRetryAttempts: expected a whole number >= 1, or Infinity, got NaN.',
    ],
    [
      { maxRetryAttempts: '3' },
      'Invalid option retry.maxRetryAttempts: expected a whole number >= 1, or Infinity, got "3".',
    ],
    [{ delay: -1 }, 'Invalid option retry.delay: expected a duration: milliseconds (>= 0)'],
    [{ delay: '2d' }, 'Invalid option retry.delay: expected a duration from 0ms to 1d, got "2d".'],
    [{ delay: 'soon' }, 'Invalid option retry.delay: expected a duration'],
    [{ maxDelay: '25h' }, 'Invalid option retry.maxDelay: expected a duration from 0ms to 1d, got "25h".'],
    [
      { backoffType: 'fibonacci' },
      `Invalid option retry.backoffType: expected 'constant', 'linear' or 'exponential', got "fibonacci".`,
    ],
    [{ useJitter: 'yes' }, 'Invalid option retry.useJitter: expected true or false, got "yes".'],
    [{ shouldHandle: true }, 'Invalid option retry.shouldHandle: expected a function, got true.'],
    [{ delayGenerator: 5 }, 'Invalid option retry.delayGenerator: expected a function, got 5.'],
    [{ onRetry: 'log' }, 'Invalid option retry.onRetry: expected a function, got "log".'],
    [{ randomizer: {} }, 'Invalid option retry.randomizer: expected a function, got {}.'],
  ])('rejects %j', (options, message) => {
    expect(build(options as RetryStrategyOptions)).toThrow(message);
  });

  it('rejects a non-object', () => {
    expect(build(5 as never)).toThrow('Invalid option retry: expected an options object, got 5.');
  });

  it('accepts the bounds', () => {
    expect(build({ maxRetryAttempts: 1, delay: 0, maxDelay: 0 })).not.toThrow();
    expect(
      build({ maxRetryAttempts: Number.MAX_SAFE_INTEGER, delay: '1d', maxDelay: 86_400_000 }),
    ).not.toThrow();
  });
});
