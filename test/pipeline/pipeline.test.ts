import {
  currentContext,
  getLockToken,
  hedgingStrategy,
  InvalidOptionError,
  lockStrategy,
  MemoryLockStore,
  Outcome,
  PipelineBuilder,
  type ResilienceContext,
  ResiliencePipelineBuilder,
  ResiliencePropertyKey,
  type ResilienceStrategy,
  retryStrategy,
  type StrategyFactory,
  type TelemetryEvent,
  TimeoutRejectedError,
  timeoutStrategy,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';

/** A strategy that records when it enters and leaves, to observe nesting order. */
function tracer(name: string, log: string[]): StrategyFactory<never> {
  return {
    name,
    create: (): ResilienceStrategy => ({
      async execute(callback, context, next) {
        log.push(`${name}:enter`);
        const outcome = await next(callback, context);
        log.push(`${name}:leave`);
        return outcome;
      },
    }),
  };
}

const TENANT = new ResiliencePropertyKey<string>('tenant');

describe('ResiliencePipeline.execute / settle', () => {
  const pipeline = new PipelineBuilder().build();

  it('returns the value of a sync or async callback', async () => {
    expect(await pipeline.execute(() => 1)).toBe(1);
    expect(await pipeline.execute(async () => 2)).toBe(2);
    // biome-ignore lint/suspicious/noThenProperty: a non-native thenable is what this checks
    const thenable = { then: (resolve: (v: number) => void) => resolve(3) } as PromiseLike<number>;
    expect(await pipeline.execute(() => thenable)).toBe(3);
  });

  it('throws what the callback threw, sync or async', async () => {
    const boom = new Error('boom');
    await expect(
      pipeline.execute(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    await expect(pipeline.execute(async () => Promise.reject(boom))).rejects.toBe(boom);
  });

  it('settle() never throws and returns an Outcome', async () => {
    const ok = await pipeline.settle(async () => 'v');
    expect(ok.ok).toBe(true);
    expect(ok.value).toBe('v');
    expect(ok.error).toBeUndefined();
    const boom = new Error('boom');
    const failed = await pipeline.settle(() => {
      throw boom;
    });
    expect(failed.ok).toBe(false);
    expect(failed.error).toBe(boom);
    expect(failed.value).toBeUndefined();
  });

  it('passes the context: operationKey, a signal and properties', async () => {
    const controller = new AbortController();
    const seen = await pipeline.execute(
      (context) => ({ key: context.operationKey, signal: context.signal }),
      {
        signal: controller.signal,
        operationKey: 'nightly',
      },
    );
    expect(seen.key).toBe('nightly');
    expect(seen.signal).toBe(controller.signal);
  });

  it('with an already aborted signal: the callback never runs, the reason is the error', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    let ran = false;
    const run = () => {
      ran = true;
    };
    await expect(pipeline.execute(run, { signal: controller.signal })).rejects.toBe(controller.signal.reason);
    const outcome = await pipeline.settle(run, { signal: controller.signal });
    expect(outcome.error).toBe(controller.signal.reason);
    expect(ran).toBe(false);
  });

  it('settles with the error when a strategy breaks the contract and rejects', async () => {
    const broken: StrategyFactory = {
      name: 'broken',
      create: () => ({ execute: () => Promise.reject(new Error('strategy bug')) }),
    };
    const outcome = await new PipelineBuilder()
      .add(broken)
      .build()
      .settle(() => 1);
    expect((outcome.error as Error).message).toBe('strategy bug');
  });
});

describe('Outcome', () => {
  it('match() calls ok, the handler for the error code, or error', () => {
    const timeout = new TimeoutRejectedError(100);
    const handlers = {
      ok: (v: number) => `ok ${v}`,
      TIMEOUT: (e: TimeoutRejectedError) => `timeout ${e.timeout}`,
      error: (e: unknown) => `error ${String(e)}`,
    };
    expect(Outcome.success<number, TimeoutRejectedError>(1).match(handlers)).toBe('ok 1');
    expect(Outcome.failure<number, TimeoutRejectedError>(timeout).match(handlers)).toBe('timeout 100');
    expect(Outcome.failure<number, TimeoutRejectedError>('x').match(handlers)).toBe('error x');
    // A resil error without its own handler goes to `error`.
    expect(
      Outcome.failure<number, TimeoutRejectedError>(timeout).match({
        ok: () => 'ok',
        error: () => 'fallback',
      }),
    ).toBe('fallback');
  });

  it('unwrap() returns the value or throws the error', () => {
    expect(Outcome.unwrap(Outcome.success(5))).toBe(5);
    expect(() => Outcome.unwrap(Outcome.failure('bad'))).toThrow();
  });
});

describe('builders', () => {
  it('the first strategy added is the outermost', async () => {
    const log: string[] = [];
    const pipeline = new PipelineBuilder()
      .add(tracer('a', log))
      .add(tracer('b', log))
      .add(tracer('c', log))
      .build();
    await pipeline.execute(() => log.push('callback'));
    expect(log).toEqual(['a:enter', 'b:enter', 'c:enter', 'callback', 'c:leave', 'b:leave', 'a:leave']);
  });

  it('timeout outside retry bounds all attempts; retry outside timeout times each attempt', async () => {
    const time = new FakeTimeProvider();
    const hang = ({ signal }: ResilienceContext) =>
      new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));

    let calls = 0;
    const overall = new ResiliencePipelineBuilder({ timeProvider: time })
      .addTimeout(1_000)
      .addRetry({ delay: 100 })
      .build()
      .settle((context) => {
        calls++;
        return hang(context);
      });
    await time.advance(1_000);
    expect((await overall).error).toBeInstanceOf(TimeoutRejectedError);
    expect(calls).toBe(1); // the retry saw its caller's signal abort: no retry

    calls = 0;
    const perAttempt = new ResiliencePipelineBuilder({ timeProvider: time })
      .addRetry({ delay: 100, maxRetryAttempts: 2 })
      .addTimeout(1_000)
      .build()
      .settle((context) => {
        calls++;
        return hang(context);
      });
    await time.advance(1_000 + 100 + 1_000 + 100 + 1_000);
    expect((await perAttempt).error).toBeInstanceOf(TimeoutRejectedError);
    expect(calls).toBe(3);
    expect(time.pendingTimers).toBe(0);
  });

  it('ResiliencePipelineBuilder shortcuts and PipelineBuilder factories are interchangeable', async () => {
    const time = new FakeTimeProvider();
    const a = new ResiliencePipelineBuilder({ timeProvider: time })
      .addTimeout('1s')
      .addRetry({ delay: 0 })
      .build();
    const b = new PipelineBuilder({ timeProvider: time })
      .add(timeoutStrategy('1s'))
      .add(retryStrategy({ delay: 0 }))
      .build();
    for (const pipeline of [a, b]) {
      let calls = 0;
      const value = await pipeline.execute(() => {
        if (++calls < 3) throw new Error('flaky');
        return calls;
      });
      expect(value).toBe(3);
    }
  });

  it('validates options in build(), not before, and each build() gets fresh state', () => {
    const builder = new ResiliencePipelineBuilder().addRetry({ maxRetryAttempts: 0 });
    expect(() => builder.build()).toThrow(InvalidOptionError);
    let created = 0;
    const counting: StrategyFactory = {
      name: 'counting',
      create: () => {
        created++;
        return { execute: (callback, context, next) => next(callback, context) };
      },
    };
    const twice = new PipelineBuilder().add(counting);
    expect(created).toBe(0);
    twice.build();
    twice.build();
    expect(created).toBe(2);
  });

  it('rejects a bad timeProvider or telemetry, naming them', () => {
    expect(() => new PipelineBuilder({ timeProvider: {} as never }).build()).toThrow(
      'Invalid option timeProvider: expected a TimeProvider (now, monotonic, setTimeout, clearTimeout), got {}.',
    );
    expect(() => new PipelineBuilder({ telemetry: 'log' as never }).build()).toThrow(
      'Invalid option telemetry: expected a function, got "log".',
    );
  });

  it('telemetry receives every strategy event with the strategy name, context and arguments', async () => {
    const time = new FakeTimeProvider();
    const events: TelemetryEvent[] = [];
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time, telemetry: (e) => events.push(e) })
      .addRetry({ delay: 10, maxRetryAttempts: 1 })
      .addTimeout(100)
      .build();
    const settled = pipeline.settle(
      ({ signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      { operationKey: 'op' },
    );
    await time.advance(100 + 10 + 100);
    await settled;
    expect(events.map((e) => `${e.strategy}:${e.event}`)).toEqual([
      'timeout:OnTimeout',
      'retry:OnRetry',
      'timeout:OnTimeout',
    ]);
    expect(events[0]!.args).toMatchObject({ timeout: 100 });
    expect(events[1]!.args).toMatchObject({ attemptNumber: 0, retryDelay: 10, duration: 100 });
    expect(events.every((e) => e.context.operationKey === 'op')).toBe(true);
  });

  it('a throwing telemetry listener changes nothing', async () => {
    let calls = 0;
    const pipeline = new ResiliencePipelineBuilder({
      telemetry: () => {
        throw new Error('listener bug');
      },
    })
      .addRetry({ delay: 0 })
      .build();
    const value = await pipeline.execute(() => {
      if (++calls < 2) throw new Error('flaky');
      return 'done';
    });
    expect(value).toBe('done');
  });

  it('onPipelineExecuted is called on its listener, which may use `this`', async () => {
    const listener = Object.assign(() => {}, {
      executions: [] as boolean[],
      onPipelineExecuted(this: { executions: boolean[] }, { outcome }: { outcome: { ok: boolean } }) {
        this.executions.push(outcome.ok);
      },
    });
    const pipeline = new ResiliencePipelineBuilder({ telemetry: listener }).addRetry({ delay: 0 }).build();
    await pipeline.execute(() => 'done');
    await pipeline.settle(() => {
      throw new Error('no');
    });
    expect(listener.executions).toEqual([true, false]);
  });
});

describe('ambient context', () => {
  // A lock per operation key, so that concurrent executions do not exclude each other.
  const pipeline = new ResiliencePipelineBuilder()
    .addLock({ key: (context) => `ambient:${context.operationKey ?? 'none'}`, store: new MemoryLockStore() })
    .addTimeout('1s')
    .build();

  it('with a lock, currentContext() is the callback context, across awaits, and undefined afterwards', async () => {
    const same: boolean[] = [];
    await pipeline.execute(async (context) => {
      same.push(currentContext() === context);
      await new Promise((resolve) => setTimeout(resolve, 1));
      same.push(currentContext() === context);
      await Promise.resolve();
      same.push(currentContext() === context);
    });
    expect(same).toEqual([true, true, true]);
    expect(currentContext()).toBeUndefined();
  });

  it('concurrent executions each see their own context', async () => {
    const keys = await Promise.all(
      ['a', 'b', 'c'].map((key, i) =>
        pipeline.execute(
          async () => {
            await new Promise((resolve) => setTimeout(resolve, 5 - i));
            return currentContext()?.operationKey;
          },
          { operationKey: key },
        ),
      ),
    );
    expect(keys).toEqual(['a', 'b', 'c']);
  });

  it('a nested execution without a lock sees its own context, inheriting the outer properties; the outer one is back afterwards', async () => {
    const inner = new ResiliencePipelineBuilder().addRetry().build();
    const result = await pipeline.execute(
      async (outer) => {
        outer.properties.set(TENANT, 'acme');
        const nested = await inner.execute(
          async (context) => {
            await Promise.resolve();
            const ambient = currentContext()!;
            ambient.properties.set(new ResiliencePropertyKey<number>('inner-only'), 1);
            return {
              same: ambient === context,
              key: ambient.operationKey,
              tenant: ambient.properties.get(TENANT),
            };
          },
          { operationKey: 'inner' },
        );
        await Promise.resolve();
        return { nested, after: currentContext()?.operationKey };
      },
      { operationKey: 'outer' },
    );
    expect(result).toEqual({ nested: { same: true, key: 'inner', tenant: 'acme' }, after: 'outer' });
  });

  it('a pipeline without a lock does not enter it: currentContext() is undefined in its callback', async () => {
    const noLock = new ResiliencePipelineBuilder().addRetry().addTimeout('1s').build();
    const seen = await noLock.execute(
      async (context) => {
        const before = currentContext();
        await Promise.resolve();
        return { before, after: currentContext(), own: context.operationKey };
      },
      { operationKey: 'own' },
    );
    expect(seen).toEqual({ before: undefined, after: undefined, own: 'own' });
  });

  it('a pipeline without a lock nested in another one without a lock does not see the outer properties', async () => {
    const outer = new ResiliencePipelineBuilder().addTimeout('1s').build();
    const inner = new ResiliencePipelineBuilder().addRetry().build();
    const tenant = await outer.execute(async (context) => {
      context.properties.set(TENANT, 'acme');
      return inner.execute((nested) => nested.properties.get(TENANT));
    });
    expect(tenant).toBeUndefined();
  });

  it('a custom strategy that declares usesAmbientContext makes its pipeline enter it', async () => {
    const reader: StrategyFactory<never> = {
      name: 'reader',
      create: (): ResilienceStrategy => ({
        usesAmbientContext: true,
        execute: (callback, context, next) => next(callback, context),
      }),
    };
    const custom = new PipelineBuilder().add(retryStrategy()).add(reader).build();
    const same = await custom.execute(async (context) => {
      await Promise.resolve();
      return currentContext() === context;
    });
    expect(same).toBe(true);
  });

  it("hedging runs a generated action in the attempt's own context when the pipeline enters it", async () => {
    const hedged = new PipelineBuilder()
      .add(lockStrategy({ key: () => 'ambient:hedging', store: new MemoryLockStore() }))
      .add(
        hedgingStrategy({
          maxHedgedAttempts: 1,
          delay: -1,
          actionGenerator:
            ({ actionContext }) =>
            async () => {
              await Promise.resolve();
              return { same: currentContext() === actionContext, token: getLockToken() };
            },
        }),
      )
      .build();
    const seen = await hedged.execute(async () => {
      throw new Error('primary fails');
    });
    expect(seen).toEqual({ same: true, token: 1 });
  });
});
