import {
  InvalidOptionError,
  isInvalidOptionError,
  isRejection,
  isResilienceError,
  isTimeoutRejectedError,
  ResilienceError,
  ResiliencePipelineBuilder,
  TimeoutRejectedError,
} from 'resil';
import { describe, expect, it, vi } from 'vitest';
import { describeValue, errorGuard } from '../../src/pipeline/errors.ts';

class RejectedForTest extends ResilienceError {
  readonly code = 'TEST_REJECTED';
  override isRejection(): boolean {
    return true;
  }
}

/** Loads a second, independent copy of the package, as when two versions sit in node_modules. */
type Package = typeof import('../../src/index.ts');

async function secondCopy(): Promise<Package> {
  vi.resetModules();
  const copy: Package = await import('../../src/index.ts');
  vi.resetModules();
  return copy;
}

describe('errors', () => {
  it('share one base class with a stable code, name and message', () => {
    const timeout = new TimeoutRejectedError(1_500);
    expect(timeout).toBeInstanceOf(ResilienceError);
    expect(timeout).toBeInstanceOf(Error);
    expect(timeout.code).toBe('TIMEOUT');
    expect(timeout.name).toBe('TimeoutRejectedError');
    expect(timeout.timeout).toBe(1_500);
    expect(timeout.message).toBe('The operation did not complete within the timeout of 1500ms.');
    const invalid = new InvalidOptionError('retry.delay', -1, 'a duration');
    expect(invalid.code).toBe('INVALID_OPTION');
    expect(invalid.message).toBe('Invalid option retry.delay: expected a duration, got -1.');
  });

  it('isRejection() is true exactly for errors that mean the callback never ran', () => {
    expect(new TimeoutRejectedError(10).isRejection()).toBe(false);
    expect(isRejection(new TimeoutRejectedError(10))).toBe(false);
    expect(isRejection(new RejectedForTest())).toBe(true);
    expect(isRejection(new Error('x'))).toBe(false);
    expect(isRejection(undefined)).toBe(false);
    expect(isRejection('TIMEOUT')).toBe(false);
  });

  it('guards are brand-based: they accept errors from a second copy of the package', async () => {
    const copy = await secondCopy();
    expect(copy.TimeoutRejectedError).not.toBe(TimeoutRejectedError);
    const foreign = new copy.TimeoutRejectedError(100);
    expect(foreign instanceof TimeoutRejectedError).toBe(false);
    expect(isTimeoutRejectedError(foreign)).toBe(true);
    expect(isResilienceError(foreign)).toBe(true);
    expect(copy.isTimeoutRejectedError(new TimeoutRejectedError(100))).toBe(true);
    expect(isInvalidOptionError(foreign)).toBe(false);
  });

  it('Outcome.match routes an error from a second copy by its code', async () => {
    const copy = await secondCopy();
    const pipeline = new ResiliencePipelineBuilder().addTimeout(1_000).build();
    const outcome = await pipeline.settle(() => {
      throw new copy.TimeoutRejectedError(7);
    });
    expect(
      outcome.match({ ok: () => 'ok', TIMEOUT: (error) => `timeout ${error.timeout}`, error: () => 'other' }),
    ).toBe('timeout 7');
  });

  it('guards accept a foreign instance that only carries the registered brand', () => {
    const fake = Object.assign(new Error('from elsewhere'), { code: 'TIMEOUT', timeout: 5 });
    Object.defineProperty(fake, Symbol.for('resil.error'), { value: true });
    expect(isTimeoutRejectedError(fake)).toBe(true);
    expect(isResilienceError(fake)).toBe(true);
    // No isRejection method on the fake: not a rejection, and no TypeError either.
    expect(isRejection(fake)).toBe(false);
  });

  it('guards reject look-alikes without the brand, and branded values without a code', () => {
    expect(isTimeoutRejectedError({ code: 'TIMEOUT' })).toBe(false);
    expect(isTimeoutRejectedError(Object.assign(new Error(), { code: 'TIMEOUT' }))).toBe(false);
    expect(isResilienceError({ [Symbol.for('resil.error')]: true })).toBe(false);
    expect(isResilienceError(null)).toBe(false);
    const isTestRejected = errorGuard<RejectedForTest>('TEST_REJECTED');
    expect(isTestRejected(new RejectedForTest())).toBe(true);
    expect(isTestRejected(new TimeoutRejectedError(10))).toBe(false);
  });

  it('keeps the brand off the instance (no noise in logs)', () => {
    const error = new TimeoutRejectedError(10);
    expect(Object.getOwnPropertySymbols(error)).toEqual([]);
    expect(JSON.stringify({ ...error })).not.toContain('resil');
  });

  it('describeValue renders values safely and briefly', () => {
    expect(describeValue('x')).toBe('"x"');
    expect(describeValue(5)).toBe('5');
    expect(describeValue(undefined)).toBe('undefined');
    expect(describeValue(null)).toBe('null');
    expect(describeValue(() => 1)).toBe('a function');
    expect(describeValue({ a: 1 })).toBe('{"a":1}');
    expect(describeValue({ long: 'x'.repeat(200) })).toHaveLength(80);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(describeValue(cyclic)).toBe('[object Object]');
  });
});
