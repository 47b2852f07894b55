import { ResiliencePipelineBuilder, TimeoutRejectedError } from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';

describe('smoke', () => {
  it('retries then times out', async () => {
    const time = new FakeTimeProvider();
    let calls = 0;
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addTimeout(1_000)
      .addRetry({ delay: 100 })
      .build();
    const result = pipeline.settle(async ({ signal }) => {
      calls++;
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    });
    await time.advance(1_000);
    const outcome = await result;
    expect(calls).toBe(1);
    expect(outcome.error).toBeInstanceOf(TimeoutRejectedError);
    expect(outcome.match({ ok: () => 'ok', error: () => 'other', TIMEOUT: (e) => `t${e.timeout}` })).toBe(
      't1000',
    );
    expect(time.pendingTimers).toBe(0);
  });
});
