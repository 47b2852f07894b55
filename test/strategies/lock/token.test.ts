import {
  getLockToken,
  LOCK_TOKEN,
  lockStrategy,
  PipelineBuilder,
  ResiliencePipelineBuilder,
  type ResilienceStrategy,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import { RecordingStore } from './recording-store.ts';

describe('lock: fencing token access', () => {
  it('gives the callback the token: getLockToken(), getLockToken(context) and LOCK_TOKEN agree', async () => {
    const time = new FakeTimeProvider();
    const store = new RecordingStore(time);
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addLock({ key: () => 'k', store })
      .build();
    const seen = await pipeline.execute(async (context) => {
      const ambientBeforeAwait = getLockToken();
      await Promise.resolve();
      return {
        ambientBeforeAwait,
        ambientAfterAwait: getLockToken(),
        explicit: getLockToken(context),
        property: context.properties.get(LOCK_TOKEN),
        stored: (await store.inspect('k'))!.token,
      };
    });
    expect(seen).toEqual({
      ambientBeforeAwait: 1,
      ambientAfterAwait: 1,
      explicit: 1,
      property: 1,
      stored: 1,
    });
    expect(await pipeline.execute(() => getLockToken())).toBe(2);
  });

  it('finds the ambient token deep in the call stack', async () => {
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: new FakeTimeProvider() })
      .addLock({ key: () => 'deep' })
      .build();
    const writeReport = async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return { fencedWith: getLockToken() };
    };
    const service = async () => writeReport();
    expect(await pipeline.execute(() => service())).toEqual({ fencedWith: 1 });
  });

  it('is undefined outside a lock', async () => {
    expect(getLockToken()).toBeUndefined();
    const noLock = new ResiliencePipelineBuilder().addRetry({ delay: 0 }).build();
    expect(await noLock.execute((context) => [getLockToken(), getLockToken(context)])).toEqual([
      undefined,
      undefined,
    ]);
  });

  it('is the innermost lock token with two locks in one pipeline', async () => {
    const time = new FakeTimeProvider();
    const store = new RecordingStore(time);
    // Make the tokens of the two keys differ.
    for (let round = 0; round < 3; round++) {
      await store.acquire('inner', `warm-up-${round}`, 1);
      await time.advance(1);
    }
    const pipeline = new PipelineBuilder({ timeProvider: time })
      .add(lockStrategy({ key: () => 'outer', store }))
      .add(lockStrategy({ key: () => 'inner', store }))
      .build();
    expect(await pipeline.execute((context) => [getLockToken(), context.properties.get(LOCK_TOKEN)])).toEqual(
      [4, 4],
    );
  });

  it('is the inner token inside a nested pipeline and the outer one again after it returns', async () => {
    const time = new FakeTimeProvider();
    const store = new RecordingStore(time);
    await store.acquire('outer', 'earlier-owner', 1);
    await time.advance(1);
    const outer = new ResiliencePipelineBuilder({ timeProvider: time })
      .addLock({ key: () => 'outer', store })
      .build();
    const inner = new ResiliencePipelineBuilder({ timeProvider: time })
      .addLock({ key: () => 'inner', store })
      .build();
    const seen = await outer.execute(async (context) => {
      const before = getLockToken();
      const during = await inner.execute(() => getLockToken());
      return { before, during, after: getLockToken(), explicit: getLockToken(context) };
    });
    expect(seen).toEqual({ before: 2, during: 1, after: 2, explicit: 2 });
  });

  it("sets the token on a child context only: the caller's context does not see it", async () => {
    let outerContextToken: number | undefined = -1;
    const spy: ResilienceStrategy = {
      async execute(callback, context, next) {
        const outcome = await next(callback, context);
        outerContextToken = context.properties.get(LOCK_TOKEN);
        return outcome;
      },
    };
    const pipeline = new PipelineBuilder({ timeProvider: new FakeTimeProvider() })
      .add({ name: 'spy', create: () => spy })
      .add(lockStrategy({ key: () => 'child-only' }))
      .build();
    expect(await pipeline.execute(() => getLockToken())).toBe(1);
    expect(outerContextToken).toBeUndefined();
  });
});
