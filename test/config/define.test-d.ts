import { defineConfig, defineJob, type JobContext, type LockStore, MemoryLockStore } from 'resil';
import { describe, expectTypeOf, it } from 'vitest';

describe('defineConfig / defineJob types', () => {
  it('types run(ctx) and every option', () => {
    const job = defineJob({
      name: 'nightly',
      schedule: '0 2 * * *',
      timezone: 'UTC',
      lock: { key: 'nightly', ttl: '30s', wait: 0 },
      timeout: '5m',
      retry: { maxRetryAttempts: 3, delay: '10s', backoffType: 'exponential', useJitter: true },
      enabled: true,
      catchUp: '6h',
      startingDeadline: '1m',
      run: async (ctx) => {
        expectTypeOf(ctx).toEqualTypeOf<JobContext>();
        expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>();
        expectTypeOf(ctx.scheduledAt).toEqualTypeOf<Date>();
        expectTypeOf(ctx.token).toEqualTypeOf<number | undefined>();
        expectTypeOf(ctx.attempt).toBeNumber();
      },
    });
    defineConfig({
      store: new MemoryLockStore(),
      timezone: 'UTC',
      shutdownGrace: '30s',
      ledgerRetention: '7d',
      jobs: [job],
    });
    expectTypeOf(defineConfig).parameter(0).toHaveProperty('store').toEqualTypeOf<LockStore | undefined>();
  });

  it('accepts lock: false, retry: false and timeout: false', () => {
    defineJob({ name: 'a', schedule: '* * * * *', lock: false, retry: false, timeout: false, run: () => {} });
  });

  it('rejects typos, bad durations and missing fields', () => {
    // @ts-expect-error unknown option
    defineJob({ name: 'a', schedule: '* * * * *', run: () => {}, timout: '5s' });
    // @ts-expect-error not a duration
    defineJob({ name: 'a', schedule: '* * * * *', run: () => {}, timeout: '5 minutes' });
    // @ts-expect-error run is required
    defineJob({ name: 'a', schedule: '* * * * *' });
    // @ts-expect-error bad backoff type
    defineJob({ name: 'a', schedule: '* * * * *', run: () => {}, retry: { backoffType: 'fibonacci' } });
    // @ts-expect-error jobs is required
    defineConfig({ timezone: 'UTC' });
  });
});
