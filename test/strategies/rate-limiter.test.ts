import {
  InvalidOptionError,
  isRateLimiterRejectedError,
  isRejection,
  PipelineBuilder,
  RateLimiterRejectedError,
  type RateLimiterStrategyOptions,
  ResiliencePipelineBuilder,
  rateLimiterDefaults,
  rateLimiterStrategy,
  retryStrategy,
  SlidingWindowRateLimiter,
  type TelemetryEvent,
  TokenBucketRateLimiter,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';

function limited(time: FakeTimeProvider, options: RateLimiterStrategyOptions) {
  return new ResiliencePipelineBuilder({ timeProvider: time }).addRateLimiter(options).build();
}

/** Settles `count` executions now and returns which ran ('ok') or their rejection's retryAfter. */
async function burst(pipeline: ReturnType<typeof limited>, count: number) {
  const results: Array<'ok' | number | undefined> = [];
  for (let i = 0; i < count; i++) {
    const outcome = await pipeline.settle(() => 'ran');
    results.push(outcome.ok ? 'ok' : (outcome.error as RateLimiterRejectedError).retryAfter);
  }
  return results;
}

describe('rate limiter defaults', () => {
  it('pins the defaults', () => {
    expect(rateLimiterDefaults).toEqual({
      replenishmentPeriod: 1_000,
      window: 1_000,
      segmentsPerWindow: 10,
      queueLimit: 0,
    });
  });

  it('token bucket: starts full, refills tokenLimit every 1 s, queues nothing', async () => {
    const time = new FakeTimeProvider();
    const pipeline = limited(time, { tokenLimit: 3 });
    expect(await burst(pipeline, 4)).toEqual(['ok', 'ok', 'ok', 1_000]);
    await time.advance(999);
    expect(await burst(pipeline, 1)).toEqual([1]);
    await time.advance(1);
    expect(await burst(pipeline, 4)).toEqual(['ok', 'ok', 'ok', 1_000]);
    expect(time.pendingTimers).toBe(0);
  });

  it('sliding window: 1 s in 10 segments of 100 ms, queues nothing', async () => {
    const time = new FakeTimeProvider();
    const pipeline = limited(time, { permitLimit: 2 });
    expect(await burst(pipeline, 1)).toEqual(['ok']);
    await time.advance(550);
    // The permit taken at 0 ms comes back when its segment leaves the window, at 1000 ms.
    expect(await burst(pipeline, 2)).toEqual(['ok', 450]);
    await time.advance(449);
    expect(await burst(pipeline, 1)).toEqual([1]);
    await time.advance(1);
    // The one taken at 550 ms (segment 500-600 ms) returns at 1500 ms.
    expect(await burst(pipeline, 2)).toEqual(['ok', 500]);
    expect(time.pendingTimers).toBe(0);
  });
});

describe('token bucket', () => {
  it('adds tokensPerPeriod per period, never above tokenLimit', async () => {
    const time = new FakeTimeProvider();
    const pipeline = limited(time, { tokenLimit: 4, tokensPerPeriod: 1, replenishmentPeriod: '250ms' });
    expect(await burst(pipeline, 5)).toEqual(['ok', 'ok', 'ok', 'ok', 250]);
    await time.advance(600); // two periods: two tokens, the next one at 750 ms
    expect(await burst(pipeline, 3)).toEqual(['ok', 'ok', 150]);
    await time.advance(60_000);
    expect(await burst(pipeline, 5)).toEqual(['ok', 'ok', 'ok', 'ok', 150]);
  });

  it('keeps its schedule from creation: idle time does not shift replenishment', async () => {
    const time = new FakeTimeProvider();
    const limiter = new TokenBucketRateLimiter({
      tokenLimit: 1,
      replenishmentPeriod: 1_000,
      timeProvider: time,
    });
    const source = { signal: new AbortController().signal };
    expect(limiter.acquire(source)).toEqual({ granted: true });
    await time.advance(2_300);
    expect(limiter.availableTokens).toBe(1);
    expect(limiter.acquire(source)).toEqual({ granted: true });
    expect(limiter.acquire(source)).toEqual({ granted: false, retryAfter: 700 });
  });

  it('queues up to queueLimit, grants first in first out as tokens come, then rejects', async () => {
    const time = new FakeTimeProvider();
    const pipeline = limited(time, {
      tokenLimit: 1,
      tokensPerPeriod: 1,
      replenishmentPeriod: 100,
      queueLimit: 2,
    });
    const started: string[] = [];
    const run = (name: string) =>
      pipeline.settle(() => {
        started.push(`${name}@${time.monotonic()}`);
        return name;
      });
    const a = run('a');
    const b = run('b');
    const c = run('c');
    const d = await run('d');
    // Two queued ahead: d would get the token due at 300 ms.
    expect((d.error as RateLimiterRejectedError).retryAfter).toBe(300);
    await time.advance(100);
    expect(started).toEqual(['a@0', 'b@100']);
    expect(time.pendingTimers).toBe(1);
    await time.advance(100);
    expect(started).toEqual(['a@0', 'b@100', 'c@200']);
    expect([(await a).value, (await b).value, (await c).value]).toEqual(['a', 'b', 'c']);
    expect(time.pendingTimers).toBe(0);
  });

  it('a queued execution whose caller aborts leaves the queue; an empty queue cancels the timer', async () => {
    const time = new FakeTimeProvider();
    const limiter = new TokenBucketRateLimiter({ tokenLimit: 1, queueLimit: 1, timeProvider: time });
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(rateLimiterStrategy({ limiter }))
      .build();
    await pipeline.execute(() => 'takes the token');
    const controller = new AbortController();
    let ran = false;
    const queued = pipeline.settle(
      () => {
        ran = true;
      },
      { signal: controller.signal },
    );
    expect(limiter.queued).toBe(1);
    expect(time.pendingTimers).toBe(1);
    controller.abort('stop');
    expect((await queued).error).toBe('stop');
    expect(limiter.queued).toBe(0);
    expect(time.pendingTimers).toBe(0);
    await time.advance(1_000);
    expect(ran).toBe(false);
    expect((await pipeline.settle(() => 'token came back')).value).toBe('token came back');
  });
});

describe('sliding window', () => {
  it('never grants more than permitLimit in any window', async () => {
    const time = new FakeTimeProvider();
    const pipeline = limited(time, { permitLimit: 5, window: '1s', segmentsPerWindow: 4 });
    const grantedAt: number[] = [];
    for (let t = 0; t < 5_000; t += 50) {
      if ((await pipeline.settle(() => 1)).ok) grantedAt.push(time.monotonic());
      await time.advance(50);
    }
    for (const start of grantedAt) {
      expect(grantedAt.filter((t) => t >= start && t < start + 1_000).length).toBeLessThanOrEqual(5);
    }
    // 5 per window of 4 segments of 250 ms: 5 seconds grant 25 permits.
    expect(grantedAt).toHaveLength(25);
  });

  it('one segment per window is a fixed window', async () => {
    const time = new FakeTimeProvider();
    const pipeline = limited(time, { permitLimit: 2, window: 1_000, segmentsPerWindow: 1 });
    await time.advance(900);
    expect(await burst(pipeline, 3)).toEqual(['ok', 'ok', 100]);
    await time.advance(100);
    expect(await burst(pipeline, 3)).toEqual(['ok', 'ok', 1_000]);
  });

  it('queues and grants when segments slide out', async () => {
    const time = new FakeTimeProvider();
    const limiter = new SlidingWindowRateLimiter({
      permitLimit: 2,
      window: 1_000,
      segmentsPerWindow: 2,
      queueLimit: 3,
      timeProvider: time,
    });
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(rateLimiterStrategy({ limiter }))
      .build();
    const startedAt: number[] = [];
    const runs = Array.from({ length: 5 }, () => pipeline.settle(() => startedAt.push(time.monotonic())));
    const rejected = await pipeline.settle(() => 0);
    // 3 queued ahead and only 2 permits per window: the wait depends on later arrivals.
    expect((rejected.error as RateLimiterRejectedError).retryAfter).toBeUndefined();
    expect(rejected.error).toBeInstanceOf(RateLimiterRejectedError);
    expect(limiter.queued).toBe(3);
    await time.advance(1_000);
    expect(startedAt).toEqual([0, 0, 1_000, 1_000]);
    await time.advance(1_000);
    expect(startedAt).toEqual([0, 0, 1_000, 1_000, 2_000]);
    expect((await Promise.all(runs)).every((outcome) => outcome.ok)).toBe(true);
    expect(time.pendingTimers).toBe(0);
  });

  it('puts retryAfter, when known, in the message', () => {
    expect(new RateLimiterRejectedError().message).toBe('Rate limit reached.');
    expect(new RateLimiterRejectedError(1_500).message).toBe('Rate limit reached: retry after 1500ms.');
    expect(new RateLimiterRejectedError(2_000).message).toBe('Rate limit reached: retry after 2s.');
  });
});

describe('rate limiter strategy', () => {
  it('rejects with RATE_LIMITED, a rejection, after telemetry and onRejected', async () => {
    const time = new FakeTimeProvider();
    const events: TelemetryEvent[] = [];
    const rejected: unknown[] = [];
    const pipeline = new PipelineBuilder({ timeProvider: time, telemetry: (e) => events.push(e) })
      .add(rateLimiterStrategy({ tokenLimit: 1, onRejected: (args) => void rejected.push(args.retryAfter) }))
      .build();
    await pipeline.execute(() => 1);
    let ran = false;
    const outcome = await pipeline.settle(
      () => {
        ran = true;
      },
      { operationKey: 'second' },
    );
    expect(ran).toBe(false);
    const error = outcome.error as RateLimiterRejectedError;
    expect(error.code).toBe('RATE_LIMITED');
    expect(error.retryAfter).toBe(1_000);
    expect(isRejection(error)).toBe(true);
    expect(isRateLimiterRejectedError(error)).toBe(true);
    expect(rejected).toEqual([1_000]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ event: 'OnRateLimiterRejected', strategy: 'rate-limiter' });
    expect(events[0]!.context.operationKey).toBe('second');
    expect(events[0]!.args).toMatchObject({ retryAfter: 1_000 });
  });

  it('a throwing onRejected fails the execution with its error (an outer retry sees it)', async () => {
    const time = new FakeTimeProvider();
    const thrown = new Error('onRejected failed');
    let calls = 0;
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(retryStrategy({ maxRetryAttempts: 1, delay: 0 }))
      .add(
        rateLimiterStrategy({
          tokenLimit: 1,
          onRejected: () => {
            calls++;
            throw thrown;
          },
        }),
      )
      .build();
    await pipeline.execute(() => 1);
    expect((await pipeline.settle(() => 2)).error).toBe(thrown);
    expect(calls).toBe(2);
  });

  it('a custom limiter whose acquire() throws fails the execution with its error (an outer retry sees it)', async () => {
    const thrown = new Error('limiter broken');
    let ran = false;
    let calls = 0;
    const pipeline = new PipelineBuilder()
      .add(retryStrategy({ maxRetryAttempts: 1, delay: 0 }))
      .add(
        rateLimiterStrategy({
          limiter: {
            acquire: () => {
              calls++;
              throw thrown;
            },
          },
        }),
      )
      .build();
    expect(
      (
        await pipeline.settle(() => {
          ran = true;
        })
      ).error,
    ).toBe(thrown);
    expect(calls).toBe(2);
    expect(ran).toBe(false);
  });

  it('creates one limiter per build(), on the pipeline clock', async () => {
    const time = new FakeTimeProvider();
    const builder = new ResiliencePipelineBuilder({ timeProvider: time }).addRateLimiter({ tokenLimit: 1 });
    const one = builder.build();
    const two = builder.build();
    await one.execute(() => 1);
    expect((await two.settle(() => 2)).value).toBe(2);
    expect((await one.settle(() => 3)).ok).toBe(false);
  });

  it('shares a limiter passed as `limiter` between pipelines', async () => {
    const time = new FakeTimeProvider();
    const limiter = new TokenBucketRateLimiter({ tokenLimit: 1, timeProvider: time });
    const one = new PipelineBuilder().add(rateLimiterStrategy({ limiter })).build();
    const two = new ResiliencePipelineBuilder().addRateLimiter({ limiter }).build();
    await one.execute(() => 1);
    expect(isRateLimiterRejectedError((await two.settle(() => 2)).error)).toBe(true);
  });

  it('accepts a custom RateLimiter, sync or async', async () => {
    let calls = 0;
    const pipeline = new PipelineBuilder()
      .add(
        rateLimiterStrategy({
          limiter: {
            acquire: () => {
              calls++;
              return calls === 1
                ? { granted: true }
                : Promise.resolve({ granted: false as const, retryAfter: 42 });
            },
          },
        }),
      )
      .build();
    expect(await pipeline.execute(() => 'first')).toBe('first');
    expect(((await pipeline.settle(() => 'second')).error as RateLimiterRejectedError).retryAfter).toBe(42);
  });

  it.each([
    [{}, 'rateLimiter'],
    [{ tokenLimit: 1, permitLimit: 1 }, 'rateLimiter'],
    [{ tokenLimit: 0 }, 'rateLimiter.tokenLimit'],
    [{ tokenLimit: 1, tokensPerPeriod: 0 }, 'rateLimiter.tokensPerPeriod'],
    [{ tokenLimit: 1, replenishmentPeriod: 0 }, 'rateLimiter.replenishmentPeriod'],
    [{ tokenLimit: 1, replenishmentPeriod: 'soon' }, 'rateLimiter.replenishmentPeriod'],
    [{ tokenLimit: 1, queueLimit: -1 }, 'rateLimiter.queueLimit'],
    [{ permitLimit: 1.5 }, 'rateLimiter.permitLimit'],
    [{ permitLimit: 1, window: '0s' }, 'rateLimiter.window'],
    [{ permitLimit: 1, segmentsPerWindow: 0 }, 'rateLimiter.segmentsPerWindow'],
    [{ limiter: {} }, 'rateLimiter.limiter'],
    [{ tokenLimit: 1, onRejected: 1 }, 'rateLimiter.onRejected'],
  ])('rejects bad options at build(): %j', (options, option) => {
    const builder = new PipelineBuilder().add(rateLimiterStrategy(options as never));
    expect(() => builder.build()).toThrow(InvalidOptionError);
    expect(() => builder.build()).toThrow(`Invalid option ${option}:`);
  });
});
