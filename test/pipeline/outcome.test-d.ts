import {
  type InvalidOptionError,
  type Outcome,
  PipelineBuilder,
  type ResiliencePipeline,
  ResiliencePipelineBuilder,
  retryStrategy,
  type TimeoutRejectedError,
  timeoutStrategy,
} from 'resil';
import { describe, expectTypeOf, it } from 'vitest';

describe('pipeline error types', () => {
  it('the pipeline type parameter is the union of its strategies errors', () => {
    const retryOnly = new ResiliencePipelineBuilder().addRetry().build();
    expectTypeOf(retryOnly).toEqualTypeOf<ResiliencePipeline<never>>();
    const withTimeout = new ResiliencePipelineBuilder().addRetry().addTimeout(1_000).build();
    expectTypeOf(withTimeout).toEqualTypeOf<ResiliencePipeline<TimeoutRejectedError>>();
    const factories = new PipelineBuilder().add(timeoutStrategy('1s')).add(retryStrategy()).build();
    expectTypeOf(factories).toEqualTypeOf<ResiliencePipeline<TimeoutRejectedError>>();
  });

  it('settle() resolves to an Outcome of the callback value and the pipeline errors', async () => {
    const pipeline = new ResiliencePipelineBuilder().addTimeout(1_000).build();
    const outcome = await pipeline.settle(async () => 42);
    expectTypeOf(outcome).toEqualTypeOf<Outcome<number, TimeoutRejectedError>>();
    if (outcome.ok) expectTypeOf(outcome.value).toEqualTypeOf<number>();
    else expectTypeOf(outcome.error).toEqualTypeOf<unknown>();
    expectTypeOf(pipeline.execute(() => 'x')).toEqualTypeOf<Promise<string>>();
  });

  it('match() types each handler: TIMEOUT receives TimeoutRejectedError, ok the value', async () => {
    const pipeline = new ResiliencePipelineBuilder().addTimeout(1_000).build();
    const outcome = await pipeline.settle(async () => 42);
    const result = outcome.match({
      ok: (value) => {
        expectTypeOf(value).toEqualTypeOf<number>();
        return 'ok' as const;
      },
      TIMEOUT: (error) => {
        expectTypeOf(error).toEqualTypeOf<TimeoutRejectedError>();
        return 'timeout' as const;
      },
      error: (error) => {
        expectTypeOf(error).toEqualTypeOf<unknown>();
        return 'error' as const;
      },
    });
    expectTypeOf(result).toEqualTypeOf<'ok' | 'timeout' | 'error'>();
  });

  it('match() rejects codes the pipeline cannot raise, and requires ok and error', async () => {
    const withTimeout = await new ResiliencePipelineBuilder()
      .addTimeout(1_000)
      .build()
      .settle(() => 1);
    withTimeout.match({
      ok: () => 0,
      error: () => 0,
      // @ts-expect-error: this pipeline cannot raise CIRCUIT_OPEN
      CIRCUIT_OPEN: () => 0,
    });
    const retryOnly = await new ResiliencePipelineBuilder()
      .addRetry()
      .build()
      .settle(() => 1);
    retryOnly.match({
      ok: () => 0,
      error: () => 0,
      // @ts-expect-error: a retry-only pipeline raises no resil error of its own
      TIMEOUT: () => 0,
    });
    // @ts-expect-error: `error` is required (the callback may throw anything)
    withTimeout.match({ ok: () => 0 });
    // @ts-expect-error: `ok` is required
    withTimeout.match({ error: () => 0 });
  });

  it('a TIMEOUT handler cannot claim another error type', async () => {
    const outcome = await new ResiliencePipelineBuilder()
      .addTimeout(1_000)
      .build()
      .settle(() => 1);
    outcome.match({
      ok: () => 0,
      error: () => 0,
      // @ts-expect-error: TIMEOUT receives TimeoutRejectedError, not InvalidOptionError
      TIMEOUT: (error: InvalidOptionError) => error.option,
    });
  });
});
