import {
  getLockToken,
  LOCK_TOKEN,
  type LockLostError,
  type LockNotAcquiredError,
  lockStrategy,
  PipelineBuilder,
  type ResiliencePipeline,
  ResiliencePipelineBuilder,
  type StoreUnavailableError,
  type StrategyFactory,
} from 'resil';
import { describe, expectTypeOf, it } from 'vitest';

type LockErrors = LockNotAcquiredError | LockLostError | StoreUnavailableError;

describe('lock types', () => {
  it('lockStrategy() declares the errors it can raise', () => {
    expectTypeOf(lockStrategy({ key: () => 'k' })).toEqualTypeOf<StrategyFactory<LockErrors>>();
  });

  it('both builders track the lock errors in the pipeline type', () => {
    expectTypeOf(new ResiliencePipelineBuilder().addLock({ key: () => 'k' }).build()).toEqualTypeOf<
      ResiliencePipeline<LockErrors>
    >();
    expectTypeOf(new PipelineBuilder().add(lockStrategy({ key: () => 'k' })).build()).toEqualTypeOf<
      ResiliencePipeline<LockErrors>
    >();
  });

  it('types the token as a number', () => {
    expectTypeOf(getLockToken()).toEqualTypeOf<number | undefined>();
    expectTypeOf(LOCK_TOKEN.__type).toEqualTypeOf<number | undefined>();
  });

  it('requires a key function', () => {
    // @ts-expect-error key is required
    lockStrategy({ ttl: 1_000 });
    // @ts-expect-error key is a function of the context
    lockStrategy({ key: 'nightly' });
  });
});
