import {
  BrokenCircuitError,
  type FallbackStrategyOptions,
  fallbackStrategy,
  InvalidOptionError,
  isBrokenCircuitError,
  PipelineBuilder,
  ResiliencePipelineBuilder,
  retryStrategy,
  type TelemetryEvent,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';

class Boom extends Error {}

const callbackError = new Error('callback failed');
function thrower(): never {
  throw callbackError;
}

function setup<R>(options: FallbackStrategyOptions<R>) {
  const events: TelemetryEvent[] = [];
  const pipeline = new ResiliencePipelineBuilder({ telemetry: (e) => events.push(e) })
    .addFallback(options)
    .build();
  return { pipeline, events };
}

describe('fallback', () => {
  it('replaces a failure with the fallback value', async () => {
    const { pipeline } = setup({ fallbackAction: () => ['cached'] });
    expect(
      await pipeline.execute((): string[] => {
        throw new Boom();
      }),
    ).toEqual(['cached']);
  });

  it('awaits an async fallbackAction', async () => {
    const { pipeline } = setup({ fallbackAction: async () => 'from cache' });
    expect(await pipeline.execute(() => Promise.reject(new Boom()))).toBe('from cache');
  });

  it('keeps a success and never calls fallbackAction', async () => {
    let called = 0;
    const { pipeline, events } = setup({ fallbackAction: () => called++ });
    expect(await pipeline.execute(() => 7)).toBe(7);
    expect(called).toBe(0);
    expect(events).toEqual([]);
  });

  it('gives fallbackAction the outcome and context it replaces', async () => {
    const seen: unknown[] = [];
    const { pipeline } = setup({
      fallbackAction: ({ outcome, context }) => {
        seen.push(outcome.error, context.operationKey);
        return 0;
      },
    });
    const boom = new Boom();
    await pipeline.execute(() => Promise.reject(boom), { operationKey: 'prices' });
    expect(seen).toEqual([boom, 'prices']);
  });

  it('calls onFallback, then fallbackAction; reports OnFallback', async () => {
    const order: string[] = [];
    const { pipeline, events } = setup({
      onFallback: ({ outcome }) => void order.push(`onFallback ${(outcome.error as Error).message}`),
      fallbackAction: () => {
        order.push('fallbackAction');
        return 1;
      },
    });
    await pipeline.execute(() => Promise.reject(new Boom('x')));
    expect(order).toEqual(['onFallback x', 'fallbackAction']);
    expect(events.map((e) => [e.event, e.strategy])).toEqual([['OnFallback', 'fallback']]);
    expect((events[0]!.args as { outcome: { error: Error } }).outcome.error.message).toBe('x');
  });

  it('a throwing fallbackAction becomes the execution error', async () => {
    const replacement = new Error('no cache either');
    const { pipeline } = setup({
      fallbackAction: () => {
        throw replacement;
      },
    });
    const outcome = await pipeline.settle(() => Promise.reject(new Boom()));
    expect(outcome.error).toBe(replacement);
  });

  it.each([
    ['shouldHandle', { shouldHandle: () => thrower() }],
    ['onFallback', { onFallback: () => thrower() }],
    ['an async onFallback', { onFallback: async () => thrower() }],
  ] as const)(
    'a throwing %s fails the execution with its error (an outer retry sees it)',
    async (_, callbacks) => {
      const pipeline = new PipelineBuilder()
        .add(retryStrategy({ maxRetryAttempts: 1, delay: 0 }))
        .add(fallbackStrategy({ ...callbacks, fallbackAction: () => 'default' }))
        .build();
      let calls = 0;
      const outcome = await pipeline.settle(() => {
        calls++;
        return Promise.reject(new Boom());
      });
      expect(outcome.error).toBe(callbackError);
      expect(calls).toBe(2);
    },
  );

  it('a fallbackAction may return undefined', async () => {
    const { pipeline } = setup({ fallbackAction: () => undefined });
    const outcome = await pipeline.settle(() => Promise.reject(new Boom()));
    expect(outcome.ok).toBe(true);
    expect(outcome.value).toBeUndefined();
  });

  it('leaves an abort of the caller signal alone by default', async () => {
    let called = 0;
    const { pipeline } = setup({ fallbackAction: () => called++ });
    const controller = new AbortController();
    const outcome = pipeline.settle(
      ({ signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      { signal: controller.signal },
    );
    controller.abort('stop');
    expect((await outcome).error).toBe('stop');
    expect(called).toBe(0);
  });

  it('shouldHandle can replace results and leave some errors alone', async () => {
    const { pipeline } = setup({
      shouldHandle: ({ outcome }) => (outcome.ok ? outcome.value === null : outcome.error instanceof Boom),
      fallbackAction: () => 'default',
    });
    expect(await pipeline.execute(() => null)).toBe('default');
    expect(await pipeline.execute(() => Promise.reject(new Boom()))).toBe('default');
    await expect(pipeline.execute(() => Promise.reject(new TypeError('t')))).rejects.toBeInstanceOf(
      TypeError,
    );
  });

  it('an async shouldHandle is awaited', async () => {
    const { pipeline } = setup({ shouldHandle: async () => false, fallbackAction: () => 'default' });
    await expect(pipeline.execute(() => Promise.reject(new Boom()))).rejects.toBeInstanceOf(Boom);
  });

  it('validates at build(), naming the option', () => {
    const missing = new PipelineBuilder().add(fallbackStrategy({} as FallbackStrategyOptions));
    expect(() => missing.build()).toThrow(InvalidOptionError);
    expect(() => missing.build()).toThrow(/fallback\.fallbackAction/);
    const bad = new PipelineBuilder().add(
      fallbackStrategy({ fallbackAction: () => 1, onFallback: 3 as never }),
    );
    expect(() => bad.build()).toThrow(/fallback\.onFallback.*got 3/);
    const badPredicate = new PipelineBuilder().add(
      fallbackStrategy({ fallbackAction: () => 1, shouldHandle: 'yes' as never }),
    );
    expect(() => badPredicate.build()).toThrow(/fallback\.shouldHandle/);
  });

  it('outside a circuit breaker, serves a default while the circuit is open', async () => {
    const time = new FakeTimeProvider();
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addFallback<string, BrokenCircuitError>({
        shouldHandle: ({ outcome }) => isBrokenCircuitError(outcome.error),
        fallbackAction: ({ outcome }) =>
          outcome.match({
            ok: () => 'unreachable',
            CIRCUIT_OPEN: (error) => `stale (retry in ${error.retryAfter} ms)`,
            error: () => 'other',
          }),
      })
      .addCircuitBreaker({ consecutiveFailures: 1, breakDuration: '2s' })
      .build();
    await expect(pipeline.execute(() => Promise.reject(new Boom()))).rejects.toBeInstanceOf(Boom);
    expect(await pipeline.execute(() => 'fresh')).toBe('stale (retry in 2000 ms)');
    await time.advance(2_000);
    expect(await pipeline.execute(() => 'fresh')).toBe('fresh');
    expect(BrokenCircuitError).toBeDefined();
  });
});
