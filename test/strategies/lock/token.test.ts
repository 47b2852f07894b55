import {
  getLockToken,
  LOCK_TOKEN,
  type LockStore,
  lockStrategy,
  MemoryLockStore,
  PipelineBuilder,
  ResiliencePipelineBuilder,
  type ResilienceStrategy,
} from 'resil';
import { createScheduler } from 'resil/scheduler';
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

  it('works at any depth of a locked callback: recursion, timers, fan-out, a nested pipeline without a lock', async () => {
    for (const order of ['lock outermost', 'lock innermost'] as const) {
      const builder = new ResiliencePipelineBuilder();
      const pipeline = (
        order === 'lock outermost'
          ? builder
              .addLock({ key: () => 'any-depth' })
              .addRetry({ delay: 0 })
              .addTimeout('5s')
          : builder
              .addRetry({ delay: 0 })
              .addTimeout('5s')
              .addLock({ key: () => 'any-depth' })
      ).build();
      const noLock = new ResiliencePipelineBuilder().addRetry({ delay: 0 }).addTimeout('5s').build();
      const descend = async (depth: number): Promise<number | undefined> => {
        if (depth === 0) return getLockToken();
        await Promise.resolve();
        return descend(depth - 1);
      };
      const seen = await pipeline.execute(async (context) => {
        const expected = getLockToken(context);
        const viaTimer = await new Promise<number | undefined>((resolve) =>
          setTimeout(() => resolve(getLockToken()), 1),
        );
        const viaImmediate = await new Promise<number | undefined>((resolve) =>
          setImmediate(() => resolve(getLockToken())),
        );
        const fanOut = await Promise.all([descend(1), descend(5), descend(50)]);
        const nested = await noLock.execute(async () => {
          await new Promise((resolve) => setTimeout(resolve, 1));
          return descend(10);
        });
        return { expected, viaTimer, viaImmediate, fanOut, nested, deep: await descend(200) };
      });
      expect(seen.expected, order).toBeGreaterThan(0);
      const token = seen.expected;
      expect(seen, order).toEqual({
        expected: token,
        viaTimer: token,
        viaImmediate: token,
        fanOut: [token, token, token],
        nested: token,
        deep: token,
      });
    }
  });

  it("works inside a scheduled job's run(), with a run ledger (occurrence lease) and with a plain LockStore", async () => {
    const time = new FakeTimeProvider(Date.parse('2026-03-01T00:00:00.000Z'));
    const plain = new MemoryLockStore({ timeProvider: time });
    const leaseOnly: LockStore = {
      acquire: (key, owner, ttl) => plain.acquire(key, owner, ttl),
      renew: (key, owner, ttl) => plain.renew(key, owner, ttl),
      release: (key, owner) => plain.release(key, owner),
    };
    for (const store of [new MemoryLockStore({ timeProvider: time }), leaseOnly]) {
      const seen: Array<number | undefined> = [];
      const scheduler = createScheduler({
        store,
        timeProvider: time,
        jobs: [
          {
            name: 'fenced',
            schedule: '0 2 * * *',
            run: async (ctx) => {
              await Promise.resolve();
              seen.push(getLockToken(), ctx.token);
            },
          },
        ],
      });
      await scheduler.start();
      const result = await scheduler.trigger('fenced');
      await scheduler.stop();
      expect(result.outcome).toBe('success');
      const [ambient, fromContext] = seen;
      expect(fromContext).toBeGreaterThan(0);
      expect(ambient).toBe(fromContext);
    }
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
