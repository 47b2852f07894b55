import {
  hedgingDefaults,
  hedgingStrategy,
  InvalidOptionError,
  PipelineBuilder,
  type ResilienceContext,
  ResiliencePipelineBuilder,
  ResiliencePropertyKey,
  retryStrategy,
  type TelemetryEvent,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';

/** A callback whose attempts the test settles by hand; records when each started and how it ended. */
function attempts(time: FakeTimeProvider) {
  const log: Array<{ number: number; startedAt: number; signal: AbortSignal; abortedWith?: unknown }> = [];
  const controls: Array<{ resolve: (value: string) => void; reject: (error: unknown) => void }> = [];
  const callback = (context: ResilienceContext) =>
    new Promise<string>((resolve, reject) => {
      const entry = { number: log.length, startedAt: time.monotonic(), signal: context.signal };
      log.push(entry);
      controls.push({ resolve, reject });
      context.signal.addEventListener('abort', () => {
        (entry as { abortedWith?: unknown }).abortedWith = context.signal.reason;
        reject(context.signal.reason);
      });
    });
  return { log, controls, callback, startedAt: () => log.map((entry) => entry.startedAt) };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('hedging defaults', () => {
  it('pins the defaults (Polly: 1 hedged attempt, 2 s delay)', async () => {
    expect(hedgingDefaults).toEqual({ maxHedgedAttempts: 1, delay: 2_000 });
    const time = new FakeTimeProvider();
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time }).addHedging().build();
    const { log, controls, callback, startedAt } = attempts(time);
    const result = pipeline.settle(callback);
    await time.advance(1_999);
    expect(startedAt()).toEqual([0]);
    await time.advance(1);
    expect(startedAt()).toEqual([0, 2_000]);
    await time.advance(60_000);
    expect(startedAt()).toEqual([0, 2_000]); // no third attempt
    controls[1]!.resolve('hedge');
    const outcome = await result;
    expect(outcome.value).toBe('hedge');
    // The loser's signal is aborted with an AbortError.
    expect(log[0]!.signal.aborted).toBe(true);
    expect(log[0]!.abortedWith).toMatchObject({ name: 'AbortError' });
    expect(log[1]!.signal.aborted).toBe(false);
    expect(time.pendingTimers).toBe(0);
  });

  it('a fast primary attempt starts no hedge and leaves no timer', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time }).addHedging().build();
    let calls = 0;
    expect(
      await pipeline.execute(() => {
        calls++;
        return 'fast';
      }),
    ).toBe('fast');
    expect(calls).toBe(1);
    expect(time.pendingTimers).toBe(0);
  });
});

describe('latency mode (delay > 0)', () => {
  it('starts one more attempt per delay, up to maxHedgedAttempts, and the first success wins', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(hedgingStrategy({ maxHedgedAttempts: 2, delay: '100ms' }))
      .build();
    const { log, controls, callback, startedAt } = attempts(time);
    const result = pipeline.settle(callback);
    await time.advance(250);
    expect(startedAt()).toEqual([0, 100, 200]);
    controls[1]!.resolve('second');
    expect((await result).value).toBe('second');
    expect(log.map((entry) => entry.signal.aborted)).toEqual([true, false, true]);
  });

  it('a failed attempt starts the next one at once', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(hedgingStrategy({ maxHedgedAttempts: 2, delay: 1_000 }))
      .build();
    const { controls, callback, startedAt } = attempts(time);
    const result = pipeline.settle(callback);
    await time.advance(10);
    controls[0]!.reject(new Error('primary failed'));
    await time.advance(0);
    expect(startedAt()).toEqual([0, 10]);
    await time.advance(1_000);
    expect(startedAt()).toEqual([0, 10, 1_010]);
    controls[2]!.resolve('third');
    expect((await result).value).toBe('third');
  });

  it('when every attempt fails, returns the primary attempt outcome (as Polly does)', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(hedgingStrategy({ maxHedgedAttempts: 2, delay: 100 }))
      .build();
    let number = 0;
    const result = pipeline.settle(async () => {
      const mine = number++;
      await new Promise<void>((resolve) => time.setTimeout(resolve, 1_000 - mine * 100));
      throw new Error(`attempt ${mine}`);
    });
    await time.advance(2_000);
    expect(((await result).error as Error).message).toBe('attempt 0');
    expect(number).toBe(3);
    expect(time.pendingTimers).toBe(0);
  });
});

describe('parallel mode (delay 0)', () => {
  it('starts every attempt at once; the fastest acceptable outcome wins', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(hedgingStrategy({ maxHedgedAttempts: 3, delay: 0 }))
      .build();
    const { log, controls, callback, startedAt } = attempts(time);
    const result = pipeline.settle(callback);
    await flush();
    expect(startedAt()).toEqual([0, 0, 0, 0]);
    controls[2]!.reject(new Error('unacceptable'));
    controls[3]!.resolve('fourth');
    expect((await result).value).toBe('fourth');
    expect(log.map((entry) => entry.signal.aborted)).toEqual([true, true, true, false]);
  });
});

describe('fallback mode (negative delay)', () => {
  it('starts the next attempt only when the previous one failed: never two at once', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(hedgingStrategy({ maxHedgedAttempts: 2, delay: -1 }))
      .build();
    const { controls, callback, startedAt } = attempts(time);
    const result = pipeline.settle(callback);
    await time.advance(60_000);
    expect(startedAt()).toEqual([0]);
    controls[0]!.reject(new Error('one'));
    await time.advance(500);
    expect(startedAt()).toEqual([0, 60_000]);
    controls[1]!.resolve('two');
    expect((await result).value).toBe('two');
    expect(time.pendingTimers).toBe(0);
  });
});

describe('options', () => {
  it('delayGenerator chooses each delay (dynamic mode) and gets the next attempt number', async () => {
    const time = new FakeTimeProvider();
    const asked: number[] = [];
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(
        hedgingStrategy({
          maxHedgedAttempts: 3,
          delay: 5_000,
          delayGenerator: ({ attemptNumber }) => {
            asked.push(attemptNumber);
            return attemptNumber === 1 ? 0 : attemptNumber === 2 ? '300ms' : -1;
          },
        }),
      )
      .build();
    const { controls, callback, startedAt } = attempts(time);
    const result = pipeline.settle(callback);
    await time.advance(1_000);
    expect(startedAt()).toEqual([0, 0, 300]);
    controls[1]!.reject(new Error('failed'));
    await time.advance(0);
    expect(startedAt()).toEqual([0, 0, 300, 1_000]);
    expect(asked).toEqual([1, 2, 3]);
    controls[3]!.resolve('last');
    expect((await result).value).toBe('last');
  });

  it('shouldHandle can reject values; it sees each attempt outcome, number and context', async () => {
    const time = new FakeTimeProvider();
    const seen: Array<[number, unknown]> = [];
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(
        hedgingStrategy({
          maxHedgedAttempts: 2,
          delay: 1_000,
          shouldHandle: ({ outcome, attemptNumber, context }) => {
            seen.push([attemptNumber, outcome.value]);
            expect(context.operationKey).toBe('op');
            return outcome.value === 'busy';
          },
        }),
      )
      .build();
    let number = 0;
    const outcome = await pipeline.settle(() => (number++ < 2 ? 'busy' : 'done'), { operationKey: 'op' });
    expect(outcome.value).toBe('done');
    expect(seen).toEqual([
      [0, 'busy'],
      [1, 'busy'],
      [2, 'done'],
    ]);
  });

  it('by default an abort of the caller signal is not hedged: it ends the execution', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(hedgingStrategy({ maxHedgedAttempts: 3, delay: 100 }))
      .build();
    const { log, callback, startedAt } = attempts(time);
    const controller = new AbortController();
    const result = pipeline.settle(callback, { signal: controller.signal });
    await time.advance(150);
    controller.abort('caller gave up');
    expect((await result).error).toBe('caller gave up');
    expect(startedAt()).toEqual([0, 100]);
    expect(log.every((entry) => entry.abortedWith === 'caller gave up')).toBe(true);
    await time.advance(1_000);
    expect(startedAt()).toEqual([0, 100]);
    expect(time.pendingTimers).toBe(0);
  });

  it('actionGenerator makes the hedged actions; undefined starts no more', async () => {
    const time = new FakeTimeProvider();
    const generated: Array<[number, boolean]> = [];
    const REPLICA = new ResiliencePropertyKey<string>('replica');
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(
        hedgingStrategy({
          maxHedgedAttempts: 3,
          delay: 0,
          actionGenerator: ({ attemptNumber, primaryContext, actionContext, callback }) => {
            generated.push([attemptNumber, primaryContext !== actionContext]);
            if (attemptNumber === 3) return undefined;
            actionContext.properties.set(REPLICA, `replica-${attemptNumber}`);
            return attemptNumber === 1
              ? () => Promise.reject(new Error('replica-1 down'))
              : () => callback(actionContext);
          },
        }),
      )
      .build();
    let primaryRuns = 0;
    const outcome = await pipeline.settle(async (context) => {
      const replica = context.properties.get(REPLICA);
      if (replica === undefined) {
        primaryRuns++;
        throw new Error('primary down');
      }
      return replica;
    });
    expect(outcome.value).toBe('replica-2');
    expect(primaryRuns).toBe(1);
    expect(generated).toEqual([
      [1, true],
      [2, true],
      [3, true],
    ]);
  });

  it('a throwing actionGenerator fails that attempt only', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(
        hedgingStrategy({
          maxHedgedAttempts: 2,
          delay: -1,
          actionGenerator: ({ attemptNumber, actionContext, callback }) => {
            if (attemptNumber === 1) throw new Error('no action');
            return () => callback(actionContext);
          },
        }),
      )
      .build();
    let calls = 0;
    const outcome = await pipeline.settle(() => {
      calls++;
      if (calls === 1) throw new Error('primary');
      return 'third attempt';
    });
    expect(outcome.value).toBe('third attempt');
  });

  it('onHedging and the OnHedging event run before each hedged attempt', async () => {
    const time = new FakeTimeProvider();
    const events: TelemetryEvent[] = [];
    const calls: number[] = [];
    const pipeline = new PipelineBuilder({ timeProvider: time, telemetry: (event) => events.push(event) })
      .add(
        hedgingStrategy({
          maxHedgedAttempts: 2,
          delay: 100,
          onHedging: ({ attemptNumber, primaryContext, actionContext }) => {
            expect(primaryContext).not.toBe(actionContext);
            calls.push(attemptNumber);
          },
        }),
      )
      .build();
    const { controls, callback } = attempts(time);
    const result = pipeline.settle(callback);
    await time.advance(200);
    controls[0]!.resolve('primary');
    expect((await result).value).toBe('primary');
    expect(calls).toEqual([1, 2]);
    expect(
      events.map((e) => [e.event, e.strategy, (e.args as { attemptNumber: number }).attemptNumber]),
    ).toEqual([
      ['OnHedging', 'hedging', 1],
      ['OnHedging', 'hedging', 2],
    ]);
  });

  it('a throwing onHedging fails the execution, after aborting and awaiting the running attempts', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(hedgingStrategy({ delay: 0, onHedging: () => Promise.reject(new Error('hook failed')) }))
      .build();
    const { log, callback } = attempts(time);
    const outcome = await pipeline.settle(callback);
    expect((outcome.error as Error).message).toBe('hook failed');
    expect(log).toHaveLength(1);
    expect(log[0]!.abortedWith).toMatchObject({ name: 'AbortError' });
  });

  const hookError = new Error('hook failed');
  const untilAborted = ({ signal }: ResilienceContext) =>
    new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
  it.each([
    ['onHedging', { delay: 0, onHedging: () => Promise.reject(hookError) }, untilAborted],
    [
      'delayGenerator',
      {
        delayGenerator: () => {
          throw hookError;
        },
      },
      untilAborted,
    ],
    ['shouldHandle', { shouldHandle: async () => Promise.reject(hookError) }, () => 'value'],
  ] as const)(
    'a throwing %s fails the execution with its error (an outer retry sees it)',
    async (_, options, callback) => {
      const seen: unknown[] = [];
      const pipeline = new PipelineBuilder({ timeProvider: new FakeTimeProvider() })
        .add(
          retryStrategy({
            maxRetryAttempts: 1,
            delay: 0,
            onRetry: ({ outcome }) => void seen.push(outcome.error),
          }),
        )
        .add(hedgingStrategy(options))
        .build();
      expect((await pipeline.settle(callback)).error).toBe(hookError);
      expect(seen).toEqual([hookError]);
    },
  );

  it('a delayGenerator returning an invalid duration fails the execution with InvalidOptionError', async () => {
    let retries = 0;
    const pipeline = new PipelineBuilder({ timeProvider: new FakeTimeProvider() })
      .add(retryStrategy({ maxRetryAttempts: 1, delay: 0, onRetry: () => void retries++ }))
      .add(hedgingStrategy({ delayGenerator: () => 'soon' as never }))
      .build();
    const outcome = await pipeline.settle(untilAborted);
    expect(outcome.error).toBeInstanceOf(InvalidOptionError);
    expect((outcome.error as Error).message).toMatch(/hedging\.delayGenerator\(\)/);
    expect(retries).toBe(1);
  });

  it.each([
    [{ maxHedgedAttempts: 0 }, 'hedging.maxHedgedAttempts'],
    [{ maxHedgedAttempts: 11 }, 'hedging.maxHedgedAttempts'],
    [{ maxHedgedAttempts: 1.5 }, 'hedging.maxHedgedAttempts'],
    [{ delay: 'later' }, 'hedging.delay'],
    [{ delay: Number.NaN }, 'hedging.delay'],
    [{ shouldHandle: true }, 'hedging.shouldHandle'],
    [{ delayGenerator: 1 }, 'hedging.delayGenerator'],
    [{ actionGenerator: {} }, 'hedging.actionGenerator'],
    [{ onHedging: 'x' }, 'hedging.onHedging'],
  ])('rejects bad options at build(): %j', (options, option) => {
    const builder = new PipelineBuilder().add(hedgingStrategy(options as never));
    expect(() => builder.build()).toThrow(InvalidOptionError);
    expect(() => builder.build()).toThrow(`Invalid option ${option}:`);
  });
});

describe('attempt isolation', () => {
  it('each attempt has its own context and signal; properties do not leak between attempts', async () => {
    const time = new FakeTimeProvider();
    const KEY = new ResiliencePropertyKey<number>('attempt');
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(hedgingStrategy({ maxHedgedAttempts: 1, delay: 0 }))
      .build();
    const seen: Array<number | undefined> = [];
    let number = 0;
    const signals: AbortSignal[] = [];
    const result = pipeline.settle(async (context) => {
      const mine = number++;
      signals.push(context.signal);
      seen.push(context.properties.get(KEY));
      context.properties.set(KEY, mine);
      await new Promise<void>((resolve) => time.setTimeout(resolve, 10 - mine));
      return context.properties.get(KEY);
    });
    await time.advance(10);
    expect(seen).toEqual([undefined, undefined]);
    expect(signals[0]).not.toBe(signals[1]);
    expect((await result).value).toBe(1);
  });

  it('settles only after the losing attempts settled, so none outlives the execution', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addConcurrencyLimiter(1)
      .addHedging({ delay: 0 })
      .build();
    const order: string[] = [];
    let number = 0;
    const result = pipeline.settle(async ({ signal }) => {
      const mine = number++;
      if (mine === 1) return 'fast';
      await new Promise<void>((resolve) =>
        signal.addEventListener('abort', () => time.setTimeout(resolve, 50)),
      );
      order.push('loser cleaned up');
      throw signal.reason;
    });
    await time.advance(0);
    await time.advance(50);
    const outcome = await result;
    order.push('settled');
    expect(outcome.value).toBe('fast');
    expect(order).toEqual(['loser cleaned up', 'settled']);
  });

  it('runs the strategies added after it once per attempt', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addHedging({ maxHedgedAttempts: 1, delay: -1 })
      .addRetry({ maxRetryAttempts: 1, delay: 0 })
      .build();
    let calls = 0;
    const outcome = await pipeline.settle(() => {
      calls++;
      if (calls < 4) throw new Error(`call ${calls}`);
      return 'fourth call';
    });
    // The primary attempt retries once (calls 1, 2) and fails; the hedged one fails, retries, succeeds.
    expect(calls).toBe(4);
    expect(outcome.value).toBe('fourth call');
  });
});
