import { getEventListeners } from 'node:events';
import {
  InvalidOptionError,
  isTimeoutRejectedError,
  type OnTimeoutArguments,
  type ResilienceContext,
  ResiliencePipelineBuilder,
  TimeoutRejectedError,
  type TimeoutStrategyOptions,
  timeoutDefaults,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import { maxTimeout, minTimeout } from '../../src/strategies/timeout/defaults.ts';

/** Waits until the signal aborts, then rejects with its reason, as a well-behaved callback does. */
function untilAborted({ signal }: ResilienceContext): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

function setup(options: TimeoutStrategyOptions | number | string = 1_000) {
  const time = new FakeTimeProvider();
  const timeouts: OnTimeoutArguments[] = [];
  const resolved: TimeoutStrategyOptions =
    typeof options === 'object' ? options : { timeout: options as number };
  const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
    .addTimeout({
      ...resolved,
      onTimeout: async (args) => {
        timeouts.push(args);
        await resolved.onTimeout?.(args);
      },
    } as TimeoutStrategyOptions)
    .build();
  return { time, timeouts, pipeline };
}

describe('timeout defaults (Polly v8)', () => {
  it('pins every default and bound', () => {
    expect(timeoutDefaults).toEqual({ timeout: 30_000 });
    expect({ minTimeout, maxTimeout }).toEqual({ minTimeout: 10, maxTimeout: 86_400_000 });
  });

  it('times out after 30 s by default', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time }).addTimeout({}).build();
    const outcome = pipeline.settle(untilAborted);
    await time.advance(29_999);
    await time.advance(1);
    const error = (await outcome).error as TimeoutRejectedError;
    expect(error.timeout).toBe(30_000);
  });
});

describe('timeout', () => {
  it('aborts the callback signal when the timeout elapses and fails with TimeoutRejectedError', async () => {
    const { time, timeouts, pipeline } = setup(1_000);
    let signal: AbortSignal | undefined;
    const outcome = pipeline.settle((context) => {
      signal = context.signal;
      return untilAborted(context);
    });
    await time.advance(999);
    expect(signal!.aborted).toBe(false);
    await time.advance(1);
    expect(signal!.aborted).toBe(true);
    const error = (await outcome).error;
    expect(error).toBeInstanceOf(TimeoutRejectedError);
    expect(signal!.reason).toBe(error);
    expect(isTimeoutRejectedError(error)).toBe(true);
    expect((error as TimeoutRejectedError).code).toBe('TIMEOUT');
    expect((error as TimeoutRejectedError).timeout).toBe(1_000);
    expect((error as TimeoutRejectedError).isRejection()).toBe(false);
    expect(timeouts).toHaveLength(1);
    expect(timeouts[0]!.timeout).toBe(1_000);
    expect(time.pendingTimers).toBe(0);
  });

  it('keeps what the callback threw after the timer fired as the cause', async () => {
    const { time, pipeline } = setup(100);
    const own = new Error('socket closed');
    const outcome = pipeline.settle(async (context) => {
      await untilAborted(context).catch(() => {});
      throw own;
    });
    await time.advance(100);
    const error = (await outcome).error as TimeoutRejectedError;
    expect(error).toBeInstanceOf(TimeoutRejectedError);
    expect(error.cause).toBe(own);
  });

  it("an AbortError caused by the timeout's own reason is the timeout's error, so the message says it once", async () => {
    const { time, pipeline } = setup(1_000);
    const outcome = pipeline.settle(async (context) => {
      await untilAborted(context).catch(() => {});
      // What node:timers/promises and events.once throw for an aborted signal.
      throw new DOMException('The operation was aborted', { cause: context.signal.reason } as never);
    });
    await time.advance(1_000);
    const error = (await outcome).error as TimeoutRejectedError;
    expect(error).toBeInstanceOf(TimeoutRejectedError);
    expect(error.cause).toBeUndefined();
    expect(error.message).toBe('The operation did not complete within the timeout of 1s.');
  });

  it('is cooperative: a callback that ignores its signal and succeeds keeps its value', async () => {
    const { time, timeouts, pipeline } = setup(100);
    const outcome = pipeline.settle(
      () => new Promise((resolve) => time.setTimeout(() => resolve('late but fine'), 500)),
    );
    await time.advance(500);
    expect((await outcome).value).toBe('late but fine');
    expect(timeouts).toHaveLength(0);
  });

  it('a callback that fails before the timeout keeps its own error, and onTimeout is not called', async () => {
    const { time, timeouts, pipeline } = setup(100);
    const own = new Error('own');
    const outcome = pipeline.settle(async () => {
      throw own;
    });
    await time.advance(1_000);
    expect((await outcome).error).toBe(own);
    expect(timeouts).toHaveLength(0);
    expect(time.pendingTimers).toBe(0);
  });

  it('leaves no timer after success, failure or timeout', async () => {
    const { time, pipeline } = setup(100);
    await pipeline.execute(() => 1);
    expect(time.pendingTimers).toBe(0);
    await pipeline.settle(() => Promise.reject(new Error('x')));
    expect(time.pendingTimers).toBe(0);
    const timedOut = pipeline.settle(untilAborted);
    await time.advance(100);
    await timedOut;
    expect(time.pendingTimers).toBe(0);
  });

  it('uses one timer for all pending executions, each timing out at its own deadline', async () => {
    const { time, pipeline } = setup(100);
    const finished: string[] = [];
    const start = (name: string) =>
      pipeline.settle(untilAborted).then((outcome) => {
        finished.push(`${name}@${time.monotonic()}:${(outcome.error as TimeoutRejectedError).code}`);
      });
    const a = start('a');
    await time.advance(30);
    const b = start('b');
    await time.advance(30);
    const c = start('c');
    expect(time.pendingTimers).toBe(1);
    await time.advance(40);
    expect(finished).toEqual(['a@100:TIMEOUT']);
    await time.advance(30);
    expect(finished).toEqual(['a@100:TIMEOUT', 'b@130:TIMEOUT']);
    await time.advance(30);
    await Promise.all([a, b, c]);
    expect(finished).toEqual(['a@100:TIMEOUT', 'b@130:TIMEOUT', 'c@160:TIMEOUT']);
    expect(time.pendingTimers).toBe(0);
  });

  it('an execution that completes early does not disturb the deadlines of the others', async () => {
    const { time, pipeline } = setup(100);
    let finishFirst!: (value: string) => void;
    const first = pipeline.settle(() => new Promise<string>((resolve) => (finishFirst = resolve)));
    await time.advance(50);
    const second = pipeline.settle(untilAborted);
    await time.advance(10);
    finishFirst('done');
    expect((await first).value).toBe('done');
    expect(time.pendingTimers).toBe(1);
    await time.advance(89);
    let settled = false;
    void second.then(() => (settled = true));
    await time.advance(0);
    expect(settled).toBe(false);
    await time.advance(1);
    expect((await second).error).toBeInstanceOf(TimeoutRejectedError);
    expect(time.monotonic()).toBe(150);
    expect(time.pendingTimers).toBe(0);
  });

  it('the shortcut accepts a number of ms, a duration string or options', async () => {
    for (const option of [250, '250ms', { timeout: '250ms' }] as const) {
      const time = new FakeTimeProvider();
      const pipeline = new ResiliencePipelineBuilder({ timeProvider: time }).addTimeout(option).build();
      const outcome = pipeline.settle(untilAborted);
      await time.advance(250);
      expect(((await outcome).error as TimeoutRejectedError).timeout).toBe(250);
    }
  });
});

describe('timeout and the caller signal', () => {
  it('a caller abort passes through untouched: its reason, no TimeoutRejectedError, no onTimeout', async () => {
    const { time, timeouts, pipeline } = setup(1_000);
    const controller = new AbortController();
    const outcome = pipeline.settle(untilAborted, { signal: controller.signal });
    await time.advance(500);
    const reason = new Error('caller');
    controller.abort(reason);
    expect((await outcome).error).toBe(reason);
    await time.advance(1_000);
    expect(timeouts).toHaveLength(0);
    expect(time.pendingTimers).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('a caller abort before the timer, on a callback that has not read its signal yet, still wins', async () => {
    const { time, timeouts, pipeline } = setup(100);
    const controller = new AbortController();
    const outcome = pipeline.settle(
      async (context) => {
        await new Promise((resolve) => time.setTimeout(() => resolve(undefined), 200));
        return untilAborted(context);
      },
      { signal: controller.signal },
    );
    await time.advance(50);
    controller.abort('caller first');
    await time.advance(200);
    expect((await outcome).error).toBe('caller first');
    expect(timeouts).toHaveLength(0);
  });

  it('with an already aborted caller signal the callback never runs', async () => {
    const { pipeline } = setup(100);
    const controller = new AbortController();
    controller.abort('early');
    let ran = false;
    const outcome = await pipeline.settle(
      () => {
        ran = true;
      },
      { signal: controller.signal },
    );
    expect(outcome.error).toBe('early');
    expect(ran).toBe(false);
  });

  it('adds no listener to the caller signal while the callback does not read its own', async () => {
    const { pipeline } = setup(100);
    const controller = new AbortController();
    let listeners = -1;
    await pipeline.execute(
      async () => {
        listeners = getEventListeners(controller.signal, 'abort').length;
      },
      { signal: controller.signal },
    );
    expect(listeners).toBe(0);
  });

  it('removes its listener from the caller signal after completion; a later abort changes nothing', async () => {
    const { pipeline } = setup(100);
    const controller = new AbortController();
    let inner: AbortSignal | undefined;
    await pipeline.execute(
      async (context) => {
        inner = context.signal;
        expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
      },
      { signal: controller.signal },
    );
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    controller.abort('late');
    expect(inner!.aborted).toBe(false);
  });
});

describe('nested timeouts', () => {
  it('the shorter one fires; each reports its own timeout', async () => {
    const time = new FakeTimeProvider();
    const innerShorter = new ResiliencePipelineBuilder({ timeProvider: time })
      .addTimeout(500)
      .addTimeout(100)
      .build();
    const a = innerShorter.settle(untilAborted);
    await time.advance(100);
    expect(((await a).error as TimeoutRejectedError).timeout).toBe(100);

    const outerShorter = new ResiliencePipelineBuilder({ timeProvider: time })
      .addTimeout(100)
      .addTimeout(500)
      .build();
    const b = outerShorter.settle(untilAborted);
    await time.advance(100);
    expect(((await b).error as TimeoutRejectedError).timeout).toBe(100);
    expect(time.pendingTimers).toBe(0);
  });
});

describe('timeout callbacks', () => {
  it('onTimeout gets the context and the timeout, and is awaited', async () => {
    const time = new FakeTimeProvider();
    const log: string[] = [];
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addTimeout({
        timeout: 100,
        onTimeout: ({ context, timeout }) =>
          new Promise<void>((resolve) =>
            time.setTimeout(() => {
              log.push(`${context.operationKey}:${timeout}`);
              resolve();
            }, 50),
          ),
      })
      .build();
    let settledAt = -1;
    const outcome = pipeline.settle(untilAborted, { operationKey: 'op' }).then((o) => {
      settledAt = time.monotonic();
      return o;
    });
    await time.advance(150);
    await outcome;
    expect(log).toEqual(['op:100']);
    expect(settledAt).toBe(150);
  });

  it('a throwing onTimeout ends the execution with its error', async () => {
    const bug = new Error('onTimeout bug');
    const { time, pipeline } = setup({
      timeout: 100,
      onTimeout: () => {
        throw bug;
      },
    });
    const outcome = pipeline.settle(untilAborted);
    await time.advance(100);
    expect((await outcome).error).toBe(bug);
  });

  it('timeoutGenerator chooses the timeout per execution (ms or duration string, sync or async)', async () => {
    const time = new FakeTimeProvider();
    const byKey: Record<string, number | string> = { fast: 50, slow: '2s' };
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addTimeout({
        timeout: 1_000,
        timeoutGenerator: async ({ context }) => byKey[context.operationKey!]! as never,
      })
      .build();
    const slow = pipeline.settle(untilAborted, { operationKey: 'slow' });
    const fast = pipeline.settle(untilAborted, { operationKey: 'fast' });
    await time.advance(50);
    expect(((await fast).error as TimeoutRejectedError).timeout).toBe(50);
    await time.advance(1_950);
    expect(((await slow).error as TimeoutRejectedError).timeout).toBe(2_000);
    expect(time.pendingTimers).toBe(0);
  });

  it.each([0, -1, Number.POSITIVE_INFINITY])('a generated timeout of %d means no timeout', async (value) => {
    const time = new FakeTimeProvider();
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addTimeout({ timeoutGenerator: () => value })
      .build();
    const outcome = pipeline.settle(
      () => new Promise((resolve) => time.setTimeout(() => resolve('finished'), 3_600_000)),
    );
    await time.advance(0);
    expect(time.pendingTimers).toBe(1); // only the callback's own timer
    await time.advance(3_600_000);
    expect((await outcome).value).toBe('finished');
  });

  it('a bad generated timeout fails the execution naming timeoutGenerator()', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addTimeout({ timeoutGenerator: () => 'soon' as never })
      .build();
    let ran = false;
    const outcome = await pipeline.settle(() => {
      ran = true;
    });
    expect(outcome.error).toBeInstanceOf(InvalidOptionError);
    expect((outcome.error as Error).message).toMatch(
      /^Invalid option timeout\.timeoutGenerator\(\): .* got "soon"\.$/,
    );
    expect(ran).toBe(false);
  });
});

describe('timeout validation', () => {
  const build = (options: TimeoutStrategyOptions | number | string) => () =>
    new ResiliencePipelineBuilder().addTimeout(options as TimeoutStrategyOptions).build();

  it.each([
    [5, 'Invalid option timeout.timeout: expected a duration from 10ms to 1d, got 5.'],
    ['2d', 'Invalid option timeout.timeout: expected a duration from 10ms to 1d, got "2d".'],
    ['soon', 'Invalid option timeout.timeout: expected a duration'],
    [-1, 'Invalid option timeout.timeout: expected a duration'],
    [{ timeout: 0 }, 'Invalid option timeout.timeout: expected a duration from 10ms to 1d, got 0.'],
    [{ onTimeout: 'log' }, 'Invalid option timeout.onTimeout: expected a function, got "log".'],
    [{ timeoutGenerator: 5 }, 'Invalid option timeout.timeoutGenerator: expected a function, got 5.'],
  ])('rejects %j', (options, message) => {
    expect(build(options as never)).toThrow(message);
  });

  it('accepts the bounds', () => {
    expect(build(10)).not.toThrow();
    expect(build('1d')).not.toThrow();
  });
});
