/**
 * Per-call overhead of a closed circuit breaker on the success path, against a bare `await fn()`,
 * cockatiel 3's circuitBreaker (ConsecutiveBreaker and SamplingBreaker) and opossum 8, measured in
 * the same process. Every breaker is configured like resil's Polly defaults where it can be
 * (10% failures over 30 s, 5 s break).
 */
import { ConsecutiveBreaker, circuitBreaker, handleAll, SamplingBreaker } from 'cockatiel';
import CircuitBreaker from 'opossum';
import { ResiliencePipelineBuilder } from '../../src/index.ts';
import { type BenchOptions, compare } from './harness.ts';

export default async function circuitBreakerBench(options: BenchOptions): Promise<void> {
  const work = async () => 42;

  const empty = new ResiliencePipelineBuilder().build();
  const resilRatio = new ResiliencePipelineBuilder().addCircuitBreaker().build();
  const resilConsecutive = new ResiliencePipelineBuilder()
    .addCircuitBreaker({ consecutiveFailures: 5 })
    .build();

  const cockatielConsecutive = circuitBreaker(handleAll, {
    halfOpenAfter: 5_000,
    breaker: new ConsecutiveBreaker(5),
  });
  const cockatielSampling = circuitBreaker(handleAll, {
    halfOpenAfter: 5_000,
    breaker: new SamplingBreaker({ threshold: 0.1, duration: 30_000, minimumRps: 100 / 30 }),
  });

  const opossumShape = {
    errorThresholdPercentage: 10,
    volumeThreshold: 100,
    rollingCountTimeout: 30_000,
    rollingCountBuckets: 10,
    resetTimeout: 5_000,
  };
  // opossum times every call out after 10 s by default (a timer per call); `timeout: false` is the
  // breaker alone, the like-for-like figure.
  const opossum = new CircuitBreaker(work, { ...opossumShape, timeout: false });
  const opossumDefaultTimeout = new CircuitBreaker(work, opossumShape);

  try {
    await compare(
      'closed circuit breaker, overhead per call, success path',
      [
        { name: 'bare await fn()', run: () => work() },
        { name: 'resil empty pipeline', run: () => empty.execute(work) },
        { name: 'resil circuit breaker (failure ratio)', run: () => resilRatio.execute(work) },
        { name: 'resil circuit breaker (consecutive)', run: () => resilConsecutive.execute(work) },
        { name: 'cockatiel SamplingBreaker', run: () => cockatielSampling.execute(work) },
        { name: 'cockatiel ConsecutiveBreaker', run: () => cockatielConsecutive.execute(work) },
        { name: 'opossum (timeout: false)', run: () => opossum.fire() },
        { name: 'opossum (default 10 s timeout)', run: () => opossumDefaultTimeout.fire() },
      ],
      { ...options, baseline: 'bare await fn()' },
    );
  } finally {
    opossum.shutdown();
    opossumDefaultTimeout.shutdown();
  }
}
