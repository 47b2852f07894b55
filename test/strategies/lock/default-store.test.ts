import {
  getLockToken,
  LockNotAcquiredError,
  lockStrategy,
  PipelineBuilder,
  ResiliencePipelineBuilder,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import { deferred } from './recording-store.ts';

describe('lock: default store', () => {
  it('is shared by every lock on pipelines with the same time provider', async () => {
    const time = new FakeTimeProvider();
    const first = new ResiliencePipelineBuilder({ timeProvider: time })
      .addLock({ key: () => 'shared' })
      .build();
    const second = new PipelineBuilder({ timeProvider: time })
      .add(lockStrategy({ key: () => 'shared' }))
      .build();
    const held = deferred();
    const holder = first.execute(() => held.promise);
    await time.advance(0);
    expect((await second.settle(() => 'ran')).error).toBeInstanceOf(LockNotAcquiredError);
    held.resolve();
    await holder;
    // Tokens come from the same counter.
    expect(await second.execute(() => getLockToken())).toBe(2);
    expect(time.pendingTimers).toBe(0);
  });

  it('is a different store for a different time provider', async () => {
    const time = new FakeTimeProvider();
    const other = new FakeTimeProvider();
    const first = new ResiliencePipelineBuilder({ timeProvider: time })
      .addLock({ key: () => 'shared' })
      .build();
    const second = new ResiliencePipelineBuilder({ timeProvider: other })
      .addLock({ key: () => 'shared' })
      .build();
    const held = deferred();
    const holder = first.execute(() => held.promise);
    await time.advance(0);
    expect(await second.execute(() => 'ran')).toBe('ran');
    held.resolve();
    await holder;
  });

  it('is shared on the system clock when no time provider is given', async () => {
    const first = new ResiliencePipelineBuilder().addLock({ key: () => 'process-wide-default' }).build();
    const second = new ResiliencePipelineBuilder().addLock({ key: () => 'process-wide-default' }).build();
    const held = deferred();
    const holder = first.execute(() => held.promise);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await second.settle(() => 'ran')).error).toBeInstanceOf(LockNotAcquiredError);
    held.resolve();
    await holder;
    expect(await second.execute(() => 'ran')).toBe('ran');
  });

  it('judges expiry by the time provider: a waiter takes over a lease whose holder stopped renewing', async () => {
    const time = new FakeTimeProvider();
    const waiter = new ResiliencePipelineBuilder({ timeProvider: time })
      .addLock({ key: () => 'crashed', ttl: '3s', wait: '10s' })
      .build();
    // A holder that "crashed": acquired through the same default store, never renewed or released.
    const crashed = new ResiliencePipelineBuilder({ timeProvider: time })
      .addLock({ key: () => 'crashed', ttl: '3s' })
      .build();
    let leakedRelease: (() => void) | undefined;
    void crashed.execute(
      () =>
        new Promise<void>((resolve) => {
          leakedRelease = resolve;
        }),
    );
    await time.advance(0);
    // Freeze its renewals by moving the wall clock only: the store sees time pass, timers do not.
    time.setNow(time.now() + 3_000);
    let acquiredAt: number | undefined;
    const result = waiter.execute(() => {
      acquiredAt = time.monotonic();
      return 'taken over';
    });
    await time.advance(0);
    expect(await result).toBe('taken over');
    expect(acquiredAt).toBe(0);
    leakedRelease!();
    await time.advance(0);
  });
});
