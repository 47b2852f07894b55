import {
  MemoryLockStore,
  type RateLimiterRejectedError,
  type RateLimiterStrategyOptions,
  type ResiliencePipeline,
  ResiliencePipelineBuilder,
  type SharedRateLimitStore,
  TokenBucketRateLimiter,
} from 'resil';
import type { MysqlLockStore } from 'resil/mysql';
import type { PostgresLockStore } from 'resil/postgres';
import type { RedisLockStore } from 'resil/redis';
import { describe, expectTypeOf, it } from 'vitest';

describe('fleet-wide rate limiter types', () => {
  it('every shipped store is a SharedRateLimitStore', () => {
    expectTypeOf<MemoryLockStore>().toMatchTypeOf<SharedRateLimitStore>();
    expectTypeOf<RedisLockStore>().toMatchTypeOf<SharedRateLimitStore>();
    expectTypeOf<PostgresLockStore>().toMatchTypeOf<SharedRateLimitStore>();
    expectTypeOf<MysqlLockStore>().toMatchTypeOf<SharedRateLimitStore>();
  });

  it('takes store, key and storeTimeout with either kind, and raises RateLimiterRejectedError', () => {
    const store = new MemoryLockStore();
    const pipeline = new ResiliencePipelineBuilder()
      .addRateLimiter({ tokenLimit: 10, store, key: 'a', storeTimeout: '200ms' })
      .addRateLimiter({ permitLimit: 10, window: '1m', store, key: 'b' })
      .build();
    expectTypeOf(pipeline).toEqualTypeOf<ResiliencePipeline<RateLimiterRejectedError>>();
  });

  it('refuses store with a limiter of your own', () => {
    const limiter = new TokenBucketRateLimiter({ tokenLimit: 1 });
    // @ts-expect-error a shared limit is made from options
    const wrong: RateLimiterStrategyOptions = { limiter, store: new MemoryLockStore(), key: 'k' };
    void wrong;
  });
});
