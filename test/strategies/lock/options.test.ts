import {
  InvalidOptionError,
  isInvalidOptionError,
  type LockStrategyOptions,
  lockDefaults,
  lockStrategy,
  MemoryLockStore,
  PipelineBuilder,
  ResiliencePipelineBuilder,
  retryStrategy,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import { lockTiming } from '../../../src/strategies/lock/defaults.ts';
import { RecordingStore } from './recording-store.ts';

const key = () => 'job';

function buildWith(options: LockStrategyOptions) {
  return new ResiliencePipelineBuilder({ timeProvider: new FakeTimeProvider() }).addLock(options).build();
}

describe('lock defaults', () => {
  it('pins the documented defaults: ttl 30 s, wait 0', () => {
    expect(lockDefaults).toEqual({ ttl: 30_000, wait: 0 });
  });

  it('pins the timing: poll from 50 ms doubling up to 1 s, renew every ttl / 3', () => {
    expect(lockTiming).toEqual({ pollInitialDelay: 50, pollMaxDelay: 1_000, renewDivisor: 3 });
  });

  it('uses the 30 s ttl when none is given', async () => {
    const time = new FakeTimeProvider();
    const store = new RecordingStore(time);
    const pipeline = new PipelineBuilder({ timeProvider: time }).add(lockStrategy({ key, store })).build();
    await pipeline.execute(async () => {
      const lease = await store.inspect('job');
      expect(lease!.expiresAt.getTime()).toBe(time.now() + 30_000);
    });
  });
});

describe('lock options are validated at build()', () => {
  const invalid: Array<[string, Partial<LockStrategyOptions> & Record<string, unknown>, string]> = [
    ['ttl of 0', { key, ttl: 0 }, 'lock.ttl'],
    ['negative ttl', { key, ttl: -5 }, 'lock.ttl'],
    ['ttl NaN', { key, ttl: Number.NaN }, 'lock.ttl'],
    ['unparsable ttl', { key, ttl: 'soon' as never }, 'lock.ttl'],
    ["ttl of '0s'", { key, ttl: '0s' }, 'lock.ttl'],
    ['negative wait', { key, wait: -1 }, 'lock.wait'],
    ['unparsable wait', { key, wait: '5 minutes' as never }, 'lock.wait'],
    ['infinite wait', { key, wait: Number.POSITIVE_INFINITY }, 'lock.wait'],
    ['missing key', {}, 'lock.key'],
    ['string key', { key: 'job' as never }, 'lock.key'],
    ['store without methods', { key, store: {} as never }, 'lock.store'],
    ['onLockLost not a function', { key, onLockLost: 'log' as never }, 'lock.onLockLost'],
  ];

  for (const [name, options, option] of invalid) {
    it(`rejects ${name}, naming ${option} and the value`, () => {
      const builder = new ResiliencePipelineBuilder().addLock(options as LockStrategyOptions);
      let error: unknown;
      try {
        builder.build();
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(isInvalidOptionError(error)).toBe(true);
      expect((error as InvalidOptionError).option).toBe(option);
      expect((error as Error).message).toContain(option);
    });
  }

  it('says what a ttl must be, the same for 0, -5, NaN, a word and 0s: a duration > 0', () => {
    for (const ttl of [0, -5, Number.NaN, 'soon', '0s']) {
      expect(() => buildWith({ key, ttl: ttl as never })).toThrow(
        `Invalid option lock.ttl: expected a duration > 0: milliseconds or a string such as '250ms', '30s', '5m', '1h', got ${typeof ttl === 'string' ? `"${ttl}"` : String(ttl)}.`,
      );
    }
  });

  it('names the bad value in the message', () => {
    expect(() => buildWith({ key, ttl: -5 })).toThrow(/lock\.ttl.*-5/);
    expect(() => buildWith({ key, wait: '5 minutes' as never })).toThrow(/lock\.wait.*"5 minutes"/);
  });

  it('accepts duration strings and zero wait', () => {
    expect(() => buildWith({ key, ttl: '10s', wait: '250ms' })).not.toThrow();
    expect(() => buildWith({ key, ttl: 1, wait: 0 })).not.toThrow();
    expect(() => buildWith({ key, store: new MemoryLockStore() })).not.toThrow();
  });

  it('fails the execution, not the build, when key() returns no usable key', async () => {
    const pipeline = buildWith({ key: () => '' });
    let ran = false;
    const outcome = await pipeline.settle(() => {
      ran = true;
    });
    expect(ran).toBe(false);
    expect(isInvalidOptionError(outcome.error)).toBe(true);
    expect((outcome.error as InvalidOptionError).option).toBe('lock.key()');
  });

  it('fails the execution with what key() threw, as an outcome, without running the callback', async () => {
    const boom = new Error('no tenant');
    const store = new RecordingStore(new FakeTimeProvider());
    let keyCalls = 0;
    const pipeline = new PipelineBuilder({ timeProvider: new FakeTimeProvider() })
      .add(retryStrategy({ maxRetryAttempts: 1, delay: 0 }))
      .add(
        lockStrategy({
          store,
          key: () => {
            keyCalls++;
            throw boom;
          },
        }),
      )
      .build();
    let ran = false;
    const outcome = await pipeline.settle(() => {
      ran = true;
    });
    expect(outcome.error).toBe(boom);
    expect(keyCalls).toBe(2); // the retry saw a failed outcome, not a rejection
    expect(ran).toBe(false);
    expect(store.calls).toEqual([]);
  });
});
