import {
  ConcurrencyLimiterRejectedError,
  concurrencyLimiterDefaults,
  concurrencyLimiterStrategy,
  InvalidOptionError,
  isConcurrencyLimiterRejectedError,
  isRejection,
  PipelineBuilder,
  ResiliencePipelineBuilder,
  retryStrategy,
  type TelemetryEvent,
} from 'resil';
import { describe, expect, it } from 'vitest';

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('concurrency limiter', () => {
  it('pins the defaults (Polly: permitLimit 1000, queueLimit 0)', async () => {
    expect(concurrencyLimiterDefaults).toEqual({ permitLimit: 1_000, queueLimit: 0 });
    const pipeline = new ResiliencePipelineBuilder().addConcurrencyLimiter().build();
    const gate = deferred();
    const running = Array.from({ length: 1_000 }, () => pipeline.settle(() => gate.promise));
    const rejected = await pipeline.settle(() => 'never');
    expect(rejected.error).toBeInstanceOf(ConcurrencyLimiterRejectedError);
    gate.resolve();
    expect((await Promise.all(running)).every((outcome) => outcome.ok)).toBe(true);
  });

  it('rejects beyond permitLimit without running the callback, with code, event and callback', async () => {
    const events: TelemetryEvent[] = [];
    const rejections: unknown[] = [];
    const pipeline = new PipelineBuilder({ telemetry: (event) => events.push(event) })
      .add(concurrencyLimiterStrategy({ permitLimit: 2, onRejected: (args) => void rejections.push(args) }))
      .build();
    const gate = deferred();
    const first = pipeline.execute(() => gate.promise);
    const second = pipeline.execute(() => gate.promise);
    let ran = false;
    const outcome = await pipeline.settle(
      () => {
        ran = true;
      },
      { operationKey: 'third' },
    );
    expect(ran).toBe(false);
    const error = outcome.error as ConcurrencyLimiterRejectedError;
    expect(error).toBeInstanceOf(ConcurrencyLimiterRejectedError);
    expect(error.code).toBe('CONCURRENCY_LIMITED');
    expect(error.permitLimit).toBe(2);
    expect(error.queueLimit).toBe(0);
    expect(error.message).toBe('Concurrency limit reached: 2 running, 0 queued.');
    expect(isRejection(error)).toBe(true);
    expect(isConcurrencyLimiterRejectedError(error)).toBe(true);
    expect(events.map((e) => [e.event, e.strategy, e.context.operationKey])).toEqual([
      ['OnRateLimiterRejected', 'concurrency-limiter', 'third'],
    ]);
    expect(rejections).toHaveLength(1);
    gate.resolve();
    await Promise.all([first, second]);
    expect((await pipeline.settle(() => 'free again')).value).toBe('free again');
  });

  it('accepts a bare number as permitLimit, like AddConcurrencyLimiter(permitLimit)', async () => {
    const pipeline = new ResiliencePipelineBuilder().addConcurrencyLimiter(1).build();
    const gate = deferred();
    const first = pipeline.execute(() => gate.promise);
    expect(isConcurrencyLimiterRejectedError((await pipeline.settle(() => 1)).error)).toBe(true);
    gate.resolve();
    await first;
  });

  it('queues up to queueLimit, first in first out, then rejects', async () => {
    const pipeline = new ResiliencePipelineBuilder()
      .addConcurrencyLimiter({ permitLimit: 1, queueLimit: 2 })
      .build();
    const order: string[] = [];
    const gates = [deferred(), deferred(), deferred()];
    const runs = ['a', 'b', 'c'].map((name, index) =>
      pipeline.execute(async () => {
        order.push(`start ${name}`);
        await gates[index]!.promise;
        order.push(`end ${name}`);
        return name;
      }),
    );
    const rejected = await pipeline.settle(() => 'd');
    expect(rejected.error).toMatchObject({ code: 'CONCURRENCY_LIMITED', queueLimit: 2 });
    await tick();
    expect(order).toEqual(['start a']);
    gates[1]!.resolve(); // b finishing early changes nothing: it has not started
    gates[0]!.resolve();
    await tick();
    expect(order).toEqual(['start a', 'end a', 'start b', 'end b', 'start c']);
    gates[2]!.resolve();
    expect(await Promise.all(runs)).toEqual(['a', 'b', 'c']);
  });

  it('hands a freed permit to the oldest waiter, not to a newcomer', async () => {
    const pipeline = new ResiliencePipelineBuilder()
      .addConcurrencyLimiter({ permitLimit: 1, queueLimit: 1 })
      .build();
    const gate = deferred();
    const order: string[] = [];
    const first = pipeline.execute(() => gate.promise);
    const queued = pipeline.execute(() => void order.push('queued'));
    gate.resolve();
    // The newcomer arrives in the same tick as the release: the permit already belongs to `queued`.
    await first;
    const newcomer = pipeline.settle(() => void order.push('newcomer'));
    await queued;
    expect((await newcomer).ok).toBe(true);
    expect(order).toEqual(['queued', 'newcomer']);
  });

  it('releases the permit when the callback fails', async () => {
    const pipeline = new ResiliencePipelineBuilder().addConcurrencyLimiter(1).build();
    const failed = await pipeline.settle(() => {
      throw new Error('boom');
    });
    expect((failed.error as Error).message).toBe('boom');
    expect((await pipeline.settle(() => 'ok')).value).toBe('ok');
  });

  it('a queued execution whose caller aborts leaves the queue and fails with the reason', async () => {
    const pipeline = new ResiliencePipelineBuilder()
      .addConcurrencyLimiter({ permitLimit: 1, queueLimit: 1 })
      .build();
    const gate = deferred();
    const running = pipeline.execute(() => gate.promise);
    const controller = new AbortController();
    let ran = false;
    const queued = pipeline.settle(
      () => {
        ran = true;
      },
      { signal: controller.signal },
    );
    const reason = new Error('caller gave up');
    controller.abort(reason);
    expect((await queued).error).toBe(reason);
    // Its queue slot is free again: another execution can queue.
    const next = pipeline.execute(() => 'next');
    expect(isConcurrencyLimiterRejectedError((await pipeline.settle(() => 1)).error)).toBe(true);
    gate.resolve();
    expect(await next).toBe('next');
    await running;
    expect(ran).toBe(false);
  });

  it('awaits onRejected before returning the rejection', async () => {
    const gate = deferred();
    let finished = false;
    const pipeline = new ResiliencePipelineBuilder()
      .addConcurrencyLimiter({
        permitLimit: 1,
        onRejected: async () => {
          await tick();
          finished = true;
        },
      })
      .build();
    const first = pipeline.execute(() => gate.promise);
    await pipeline.settle(() => 1);
    expect(finished).toBe(true);
    gate.resolve();
    await first;
  });

  it('a throwing onRejected fails the execution with its error (an outer retry sees it)', async () => {
    const gate = deferred();
    const thrown = new Error('onRejected failed');
    let calls = 0;
    const pipeline = new PipelineBuilder()
      .add(retryStrategy({ maxRetryAttempts: 1, delay: 0 }))
      .add(
        concurrencyLimiterStrategy({
          permitLimit: 1,
          onRejected: async () => {
            calls++;
            throw thrown;
          },
        }),
      )
      .build();
    const first = pipeline.execute(() => gate.promise);
    expect((await pipeline.settle(() => 1)).error).toBe(thrown);
    expect(calls).toBe(2);
    gate.resolve();
    await first;
  });

  it.each([
    [{ permitLimit: 0 }, 'concurrencyLimiter.permitLimit'],
    [{ permitLimit: 1.5 }, 'concurrencyLimiter.permitLimit'],
    [{ permitLimit: Number.NaN }, 'concurrencyLimiter.permitLimit'],
    [{ queueLimit: -1 }, 'concurrencyLimiter.queueLimit'],
    [{ onRejected: 'no' }, 'concurrencyLimiter.onRejected'],
  ])('rejects bad options at build(): %j', (options, option) => {
    const builder = new PipelineBuilder().add(concurrencyLimiterStrategy(options as never));
    expect(() => builder.build()).toThrow(InvalidOptionError);
    expect(() => builder.build()).toThrow(`Invalid option ${option}`);
  });

  it('keeps one limit per built pipeline', async () => {
    const builder = new ResiliencePipelineBuilder().addConcurrencyLimiter(1);
    const one = builder.build();
    const two = builder.build();
    const gate = deferred();
    const running = one.execute(() => gate.promise);
    expect((await two.settle(() => 'other pipeline')).value).toBe('other pipeline');
    gate.resolve();
    await running;
  });
});
