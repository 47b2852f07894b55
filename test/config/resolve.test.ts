import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { formatRelative, formatSpan } from '../../src/cli/time-format.ts';
import { importDefault } from '../../src/config/import-module.ts';
import { MemoryLockStore } from '../../src/ledger/memory-store.ts';
import { describeValue } from '../../src/pipeline/errors.ts';
import { ConfigError, formatConfigProblem, isConfigError } from '../../src/scheduler/config-error.ts';
import { closestName } from '../../src/scheduler/did-you-mean.ts';
import { configDefaults } from '../../src/scheduler/job-defaults.ts';
import { resolveConfig } from '../../src/scheduler/resolve.ts';
import { PostgresLockStore } from '../../src/stores/postgres/store.ts';
import { RedisLockStore } from '../../src/stores/redis/store.ts';

const file = '/project/resil.config.ts';
const run = async () => {};

async function problemsOf(raw: unknown): Promise<string[]> {
  try {
    // As the config loader calls it: job module paths are imported.
    await resolveConfig(raw, file, { importJob: importDefault });
  } catch (error) {
    expect(isConfigError(error)).toBe(true);
    return (error as ConfigError).problems.map(formatConfigProblem);
  }
  throw new Error('expected a ConfigError');
}

describe('config defaults', () => {
  it('pins every default', () => {
    expect(configDefaults).toEqual({
      shutdownGrace: 30_000,
      ledgerRetention: 7 * 86_400_000,
      ledgerRecordLimit: 100,
      startingDeadline: 60_000,
      lockTtl: 30_000,
      lockWait: 0,
      isolation: 'none',
      dst: 'shift',
    });
  });

  it('refuses a ledgerRecordLimit that is not a whole number >= 1', async () => {
    for (const bad of [0, 2.5, '100', -1, 2 ** 31]) {
      expect(
        await problemsOf({ ledgerRecordLimit: bad, jobs: [{ name: 'a', schedule: '* * * * *', run }] }),
      ).toEqual([
        `${file}: option "ledgerRecordLimit": expected a whole number from 1 to 1,000,000, got ${JSON.stringify(bad)}`,
      ]);
    }
  });

  it('applies them into the resolved config', async () => {
    const config = await resolveConfig({ jobs: [{ name: 'a', schedule: '* * * * *', run }] }, file);
    expect(config.store).toBeInstanceOf(MemoryLockStore);
    expect(config).toMatchObject({
      filepath: file,
      instance: `${hostname()}:${process.pid}`,
      shutdownGraceMs: 30_000,
      ledgerRetentionMs: 604_800_000,
      ledgerRecordLimit: 100,
    });
    expect(config.jobs).toEqual([
      {
        name: 'a',
        schedule: '* * * * *',
        timezone: undefined,
        run,
        lock: { key: 'a', ttlMs: 30_000, waitMs: 0 },
        timeoutMs: undefined,
        retry: false,
        enabled: true,
        catchUpMs: undefined,
        startingDeadlineMs: 60_000,
        overlap: 'skip',
        isolation: 'none',
        dst: 'shift',
      },
    ]);
  });

  it("reads lock.wait >= lock.ttl without an overlap as 'buffer-all'; an explicit overlap wins", async () => {
    const job = (extra: Record<string, unknown>) => ({ name: 'a', schedule: '* * * * *', run, ...extra });
    const overlapOf = async (extra: Record<string, unknown>) =>
      (await resolveConfig({ jobs: [job(extra)] }, file)).jobs[0]!.overlap;
    expect(await overlapOf({ lock: { ttl: '3s', wait: '3s' } })).toBe('buffer-all');
    expect(await overlapOf({ lock: { ttl: '3s', wait: '2s' } })).toBe('skip');
    expect(await overlapOf({ lock: { ttl: '3s', wait: '10s' }, overlap: 'skip' })).toBe('skip');
    expect(await overlapOf({ overlap: 'allow-all' })).toBe('allow-all');
  });

  it("refuses at load a job whose key the store cannot keep (store.checkKey), naming the store's rule", async () => {
    const long = 'k'.repeat(3_000);
    const pool = new pg.Pool();
    const redis = new Redis({ lazyConnect: true });
    try {
      const jobs = [
        { name: 'ok', schedule: '* * * * *', run },
        { name: 'long-key', schedule: '* * * * *', run, lock: { key: long } },
        { name: 'nul\u0000name', schedule: '* * * * *', run },
        { name: 'brace}', schedule: '* * * * *', run },
      ];
      expect(await problemsOf({ store: new PostgresLockStore(pool), jobs })).toEqual([
        `${file}: job "long-key": option "lock.key": PostgresLockStore cannot keep it as a key: it is 3000 bytes of UTF-8; the limit is 1000, got ${describeValue(long)}`,
        `${file}: job "nul\\u0000name": option "name": PostgresLockStore cannot keep it as a key: it contains a NUL character, which PostgreSQL text cannot hold, got "nul\\u0000name"`,
      ]);
      expect(await problemsOf({ store: new RedisLockStore(redis), jobs })).toEqual([
        `${file}: job "long-key": option "lock.key": RedisLockStore cannot keep it as a key: it is 3000 bytes of UTF-8; the limit is 1000, got ${describeValue(long)}`,
        `${file}: job "brace}": option "name": RedisLockStore cannot keep it as a key: it contains '}', which would end the {...} hash tag the store puts it in, got "brace}"`,
      ]);
      // The in-memory store keeps any key.
      expect((await resolveConfig({ jobs }, file)).jobs).toHaveLength(4);
    } finally {
      redis.disconnect();
      await pool.end();
    }
  });

  it('checks each distinct schedule once, and still reports a bad one for every job that has it', async () => {
    const problems = await problemsOf({
      timezone: 'UTC',
      jobs: [
        { name: 'a', schedule: '61 * * * *', run },
        { name: 'b', schedule: '0 2 * * *', run },
        { name: 'c', schedule: '61 * * * *', run },
        { name: 'd', schedule: '61 * * * *', timezone: 'Europe/Berlin', run },
      ],
    });
    expect(problems.filter((line) => line.includes('invalid cron expression "61 * * * *"'))).toHaveLength(3);
    expect(problems.join('\n')).toMatch(/job "a"[\s\S]*job "c"[\s\S]*job "d"/);
    expect(problems.join('\n')).not.toContain('job "b"');
  });

  it('rejects an unknown overlap policy, naming the policies and the closest one', async () => {
    const error = await resolveConfig(
      { jobs: [{ name: 'a', schedule: '* * * * *', run, overlap: 'buffer-al' }] },
      file,
    ).catch((caught: unknown) => caught);
    expect(String((error as Error).message)).toContain(
      `job "a": option "overlap": expected one of 'skip', 'buffer-one', 'buffer-all', 'cancel-other', 'allow-all' (did you mean 'buffer-all'?), got "buffer-al"`,
    );
  });

  it('concurrency: a whole number >= 1, never with allow-all; 1 unless given', async () => {
    const job = (extra: Record<string, unknown>) => ({ name: 'a', schedule: '* * * * *', run, ...extra });
    const concurrencyOf = async (extra: Record<string, unknown>) =>
      (await resolveConfig({ jobs: [job(extra)] }, file)).jobs[0]!.concurrency;
    expect(await concurrencyOf({})).toBeUndefined();
    expect(await concurrencyOf({ concurrency: 3, overlap: 'buffer-all' })).toBe(3);
    expect(await concurrencyOf({ concurrency: 2, lock: false })).toBe(2);
    expect(await concurrencyOf({ concurrency: 1 })).toBe(1);
    const expected = 'expected a whole number >= 1 (how many occurrences may run at once)';
    expect(await problemsOf({ jobs: [job({ concurrency: 0 })] })).toEqual([
      `${file}: job "a": option "concurrency": ${expected}, got 0`,
    ]);
    expect(await problemsOf({ jobs: [job({ concurrency: 1.5 })] })).toEqual([
      `${file}: job "a": option "concurrency": ${expected}, got 1.5`,
    ]);
    expect(await problemsOf({ jobs: [job({ concurrency: 'x' })] })).toEqual([
      `${file}: job "a": option "concurrency": ${expected}, got "x"`,
    ]);
    // Any concurrency, 1 too: allow-all is not bounded, and a concurrency says it would be.
    expect(await problemsOf({ jobs: [job({ concurrency: 1, overlap: 'allow-all' })] })).toEqual([
      `${file}: job "a": option "concurrency": does not apply with overlap: 'allow-all', which runs every occurrence at once, unbounded: remove concurrency, or bound the job with another overlap policy ('skip', 'buffer-one', 'buffer-all', 'cancel-other')`,
    ]);
  });

  it("isolation: the config's default for jobs without their own; resourceLimits for workers only, in positive MB", async () => {
    const config = await resolveConfig(
      {
        isolation: 'worker',
        jobs: [
          { name: 'a', schedule: '* * * * *', run, resourceLimits: { maxOldGenerationSizeMb: 64 } },
          { name: 'b', schedule: '* * * * *', run, isolation: 'none' },
        ],
      },
      file,
    );
    expect(config.jobs.map((job) => [job.isolation, job.resourceLimits])).toEqual([
      ['worker', { maxOldGenerationSizeMb: 64 }],
      ['none', undefined],
    ]);
    const job = (extra: Record<string, unknown>) => ({ name: 'a', schedule: '* * * * *', run, ...extra });
    expect(
      await problemsOf({
        isolation: 'thread',
        jobs: [
          job({ isolation: 'workers' }),
          { ...job({ resourceLimits: 64, isolation: 'worker' }), name: 'b' },
          {
            ...job({
              isolation: 'worker',
              resourceLimits: { maxOldGenerationSizeMb: -1, stackSizeMb: '4', maxOldGenerationSize: 1 },
            }),
            name: 'c',
          },
          { ...job({ isolation: 'none', resourceLimits: { maxOldGenerationSizeMb: 64 } }), name: 'd' },
        ],
      }),
    ).toEqual([
      `${file}: option "isolation": expected one of 'none', 'worker', got "thread"`,
      `${file}: job "a": option "isolation": expected one of 'none', 'worker' (did you mean 'worker'?), got "workers"`,
      `${file}: job "b": option "resourceLimits": expected an object of limits in MB such as { maxOldGenerationSizeMb: 256 }, got 64`,
      `${file}: job "c": option "resourceLimits.maxOldGenerationSize": unknown option (did you mean "resourceLimits.maxOldGenerationSizeMb"?); known options: maxOldGenerationSizeMb, maxYoungGenerationSizeMb, codeRangeSizeMb, stackSizeMb`,
      `${file}: job "c": option "resourceLimits.maxOldGenerationSizeMb": expected a number of MB greater than 0, got -1`,
      `${file}: job "c": option "resourceLimits.stackSizeMb": expected a number of MB greater than 0, got "4"`,
      `${file}: job "d": option "resourceLimits": limits a worker thread: they apply with isolation: 'worker' only (this job's isolation is 'none')`,
    ]);
  });

  it('converts durations and inherits the config timezone', async () => {
    const store = new MemoryLockStore();
    const retry = { maxRetryAttempts: 2, delay: '1s' as const };
    const config = await resolveConfig(
      {
        store,
        timezone: 'Europe/Paris',
        instance: 'worker-1',
        shutdownGrace: '5s',
        ledgerRetention: '1d',
        ledgerRecordLimit: 20,
        jobs: [
          {
            name: 'a',
            schedule: '0 2 * * *',
            run,
            lock: { key: 'k', ttl: '1m', wait: '2m' },
            timeout: '10s',
            retry,
            catchUp: '6h',
            startingDeadline: '30s',
            enabled: false,
          },
          { name: 'b', schedule: '0 2 * * *', timezone: 'UTC', lock: false, run },
        ],
      },
      file,
    );
    expect(config).toMatchObject({
      store,
      instance: 'worker-1',
      shutdownGraceMs: 5_000,
      ledgerRetentionMs: 86_400_000,
      ledgerRecordLimit: 20,
    });
    expect(config.jobs[0]).toMatchObject({
      timezone: 'Europe/Paris',
      lock: { key: 'k', ttlMs: 60_000, waitMs: 120_000 },
      timeoutMs: 10_000,
      retry,
      catchUpMs: 21_600_000,
      startingDeadlineMs: 30_000,
      enabled: false,
    });
    expect(config.jobs[1]).toMatchObject({ timezone: 'UTC', lock: false });
  });
});

describe('validation', () => {
  it('reports each problem with file, job, option and value', async () => {
    expect(
      await problemsOf({
        store: {},
        instance: '',
        jobs: [
          { name: 'a', schedule: '* * * * *', run, lock: { ttl: 0 }, enabled: 'yes' },
          { name: 'b', schedule: 5, run: 'nope' },
          'not-a-module-path-but-a-string.js',
        ],
      }),
    ).toEqual([
      `${file}: option "store": expected a LockStore (acquire, renew and release methods), such as new RedisLockStore(client), got {}`,
      `${file}: option "instance": expected a non-empty string, got ""`,
      expect.stringMatching(
        /^\/project\/resil.config.ts: job "jobs\[2\]": cannot load job module "not-a-module-path-but-a-string.js": /,
      ),
      `${file}: job "a": option "lock.ttl": expected a duration > 0: milliseconds or a string such as '250ms', '30s', '5m', '1h', got 0`,
      `${file}: job "a": option "enabled": expected true or false, got "yes"`,
      `${file}: job "b": option "run": expected a function, got "nope"`,
      `${file}: job "b": option "schedule": expected a cron expression string, got 5`,
    ]);
  });

  it('reports a bad schedule beside a bad timezone of the same job', async () => {
    expect(
      await problemsOf({ jobs: [{ name: 'a', schedule: '* * *', timezone: 'Mars/Olympus', run }] }),
    ).toEqual([
      `${file}: job "a": option "timezone": expected an IANA timezone such as "UTC" or "Europe/Paris", got "Mars/Olympus"`,
      expect.stringMatching(
        /^\/project\/resil\.config\.ts: job "a": option "schedule": invalid cron expression "\* \* \*": /,
      ),
    ]);
  });

  it('resolves jitter to ms; rejects a jitter that is not positive or not below startingDeadline', async () => {
    const config = await resolveConfig(
      { jobs: [{ name: 'a', schedule: '* * * * *', run, jitter: '30s' }] },
      file,
    );
    expect(config.jobs[0]).toMatchObject({ jitterMs: 30_000, startingDeadlineMs: 60_000 });
    expect(
      await problemsOf({
        jobs: [
          { name: 'zero', schedule: '* * * * *', run, jitter: 0 },
          { name: 'word', schedule: '* * * * *', run, jitter: 'soon' },
          { name: 'long', schedule: '* * * * *', run, jitter: '1m' },
          { name: 'longer', schedule: '* * * * *', run, jitter: '5m', startingDeadline: '2m' },
        ],
      }),
    ).toEqual([
      `${file}: job "zero": option "jitter": expected a duration > 0: milliseconds or a string such as '250ms', '30s', '5m', '1h', got 0`,
      expect.stringMatching(
        /^\/project\/resil.config.ts: job "word": option "jitter": expected .*got "soon"$/,
      ),
      `${file}: job "long": option "jitter": must be smaller than startingDeadline (1m): a fire delayed by its jitter would be skipped as missed; shorten jitter or raise startingDeadline`,
      `${file}: job "longer": option "jitter": must be smaller than startingDeadline (2m): a fire delayed by its jitter would be skipped as missed; shorten jitter or raise startingDeadline`,
    ]);
  });

  it('applies the config-level hooks to every job without its own, and rejects hooks that are not functions', async () => {
    const onSuccess = () => {};
    const onFailure = () => {};
    const onSkip = () => {};
    const own = () => {};
    const config = await resolveConfig(
      {
        onSuccess,
        onFailure,
        onSkip,
        jobs: [
          { name: 'plain', schedule: '* * * * *', run },
          { name: 'custom', schedule: '* * * * *', run, onSuccess: own },
        ],
      },
      file,
    );
    expect(config.jobs.map((job) => [job.name, job.onSuccess, job.onFailure, job.onSkip])).toEqual([
      ['plain', onSuccess, onFailure, onSkip],
      ['custom', own, onFailure, onSkip],
    ]);
    const bare = await resolveConfig({ jobs: [{ name: 'a', schedule: '* * * * *', run }] }, file);
    expect(bare.jobs[0]).toMatchObject({ onSuccess: undefined, onFailure: undefined, onSkip: undefined });

    expect(
      await problemsOf({
        onFailure: 'mail me',
        jobs: [{ name: 'a', schedule: '* * * * *', run, onSkip: {}, onSucess: () => {} }],
      }),
    ).toEqual([
      `${file}: option "onFailure": expected a function (event) => ..., got "mail me"`,
      `${file}: job "a": option "onSucess": unknown option (did you mean "onSuccess"?); known options: name, schedule, run, timezone, lock, timeout, retry, chaos, enabled, catchUp, startingDeadline, overlap, concurrency, jitter, isolation, dst, resourceLimits, onSuccess, onFailure, onSkip`,
      `${file}: job "a": option "onSkip": expected a function (event) => ..., got {}`,
    ]);
  });

  it('every bad retry option at once, not only the first the retry strategy finds', async () => {
    expect(
      await problemsOf({
        jobs: [
          {
            name: 'a',
            schedule: '* * * * *',
            run,
            retry: { backoffType: 'expo', delay: 'soon', maxRetryAttempts: -1, useJitter: 'yes', onRetry: 1 },
          },
          { name: 'b', schedule: '* * * * *', run, retry: { maxRetryAttempts: 2, delay: '1s' } },
        ],
      }),
    ).toEqual([
      `${file}: job "a": option "retry.maxRetryAttempts": expected a whole number >= 1, or Infinity, got -1`,
      `${file}: job "a": option "retry.delay": expected a duration: milliseconds (>= 0) or a string such as '250ms', '30s', '5m', '1h', got "soon"`,
      `${file}: job "a": option "retry.backoffType": expected 'constant', 'linear' or 'exponential', got "expo"`,
      `${file}: job "a": option "retry.useJitter": expected true or false, got "yes"`,
      `${file}: job "a": option "retry.onRetry": expected a function, got 1`,
    ]);
  });

  it('telemetry: a class instance with fields of its own fits; a plain object with a typo does not', async () => {
    class Sink {
      readonly events: string[] = [];
      onSchedulerEvent(event: { type: string }) {
        this.events.push(event.type);
      }
    }
    const sink = new Sink();
    const config = await resolveConfig(
      { telemetry: sink, jobs: [{ name: 'a', schedule: '* * * * *', run }] },
      file,
    );
    expect(config.telemetry).toBe(sink);
    expect(
      await problemsOf({ telemetry: { onSchedulerEvnt: () => {}, onSchedulerEvent: () => {} }, jobs: [] }),
    ).toEqual([
      `${file}: option "telemetry.onSchedulerEvnt": unknown option (did you mean "telemetry.onSchedulerEvent"?); known options: pipelineListener, onSchedulerEvent, flush`,
    ]);
  });

  it('ConfigError carries the first problem and every problem', () => {
    const error = new ConfigError([
      { file, job: 'a', option: 'timeout', value: 'x', message: 'bad' },
      { file, message: 'worse' },
    ]);
    expect(error).toMatchObject({ code: 'CONFIG_INVALID', file, job: 'a', option: 'timeout', value: 'x' });
    expect(error.message).toBe(`${file}: job "a": option "timeout": bad\n${file}: worse`);
  });

  it('suggests the closest known name only for a likely typo', () => {
    const known = ['timeout', 'timezone', 'schedule', 'startingDeadline'];
    expect(closestName('timout', known)).toBe('timeout');
    expect(closestName('timeZone', known)).toBe('timezone');
    expect(closestName('startingdeadline', known)).toBe('startingDeadline');
    expect(closestName('color', known)).toBeUndefined();
  });
});

describe('human time formatting', () => {
  it('keeps the two largest units', () => {
    expect(formatSpan(0)).toBe('0s');
    expect(formatSpan(45_900)).toBe('45s');
    expect(formatSpan(3 * 3_600_000 + 2 * 60_000 + 5_000)).toBe('3h 2m');
    expect(formatSpan(3 * 3_600_000 + 5_000)).toBe('3h');
    expect(formatSpan(2 * 86_400_000 + 4 * 3_600_000)).toBe('2d 4h');
    expect(formatRelative(new Date(10_000), 0)).toBe('in 10s');
    expect(formatRelative(new Date(0), 300_000)).toBe('5m ago');
  });
});
