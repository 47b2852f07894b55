import { describe, expect, it } from 'vitest';
import { MemoryLockStore } from '../../src/ledger/memory-store.ts';
import {
  ConfigDriftWatch,
  definitionOf,
  FleetDefinitions,
  findConfigDrift,
  parsePublishedDefinitions,
} from '../../src/scheduler/config-drift.ts';
import type { ResolvedJob } from '../../src/scheduler/job.ts';
import { resolveConfigSync } from '../../src/scheduler/resolve.ts';

const run = async () => {};

function jobsOf(jobs: Array<Record<string, unknown>>): readonly ResolvedJob[] {
  return resolveConfigSync({ timezone: 'UTC', jobs: jobs.map((job) => ({ run, ...job })) }, 'resil.config.ts')
    .jobs;
}

/** A logger that keeps what it was told. */
function recordingLogger() {
  const lines: Array<{ level: string; object: unknown; message: string | undefined }> = [];
  const log = (level: string) => (object: object | string, message?: string) =>
    lines.push({ level, object, message });
  return { lines, warn: log('warn'), info: log('info') };
}

/** One `resil run` as the registry sees it: a heartbeat registers what the watch says. */
function instance(store: MemoryLockStore, name: string, jobs: readonly ResolvedJob[]) {
  const logger = recordingLogger();
  const watch = new ConfigDriftWatch({
    own: new FleetDefinitions(jobs),
    registry: store,
    instance: name,
    logger,
  });
  return {
    watch,
    logger,
    async beat() {
      const definitions = await watch.next();
      await store.registerInstance(
        {
          instance: name,
          host: 'h',
          pid: 1,
          version: '1',
          startedAt: 0,
          jobs: jobs.length,
          clockOffsetMs: 0,
          definitions,
        },
        { ttlMs: 60_000 },
      );
    },
  };
}

describe('job definitions', () => {
  it('names the fields a fleet must agree on, durations in ms, the retry options that are data', () => {
    const [job] = jobsOf([
      {
        name: 'report',
        schedule: '0 2 * * *',
        timezone: 'Europe/Paris',
        timeout: '30s',
        lock: { ttl: '1m' },
        retry: { maxRetryAttempts: 5, delay: '2s', backoffType: 'exponential', shouldHandle: () => true },
      },
    ]);
    expect(definitionOf(job!)).toEqual({
      schedule: '0 2 * * *',
      timezone: 'Europe/Paris',
      dst: 'shift',
      overlap: 'skip',
      lockKey: 'report',
      lockTtlMs: 60_000,
      timeoutMs: 30_000,
      retry: {
        maxRetryAttempts: 5,
        delayMs: 2_000,
        backoffType: 'exponential',
        useJitter: null,
        maxDelayMs: null,
      },
    });
  });

  it('an equal definition has an equal fingerprint; a callback does not count, a field does', () => {
    const a = new FleetDefinitions(
      jobsOf([{ name: 'a', schedule: '* * * * *', retry: { shouldHandle: () => true } }]),
    );
    const b = new FleetDefinitions(
      jobsOf([{ name: 'a', schedule: '* * * * *', retry: { shouldHandle: () => false } }]),
    );
    const c = new FleetDefinitions(jobsOf([{ name: 'a', schedule: '*/2 * * * *', retry: {} }]));
    expect(a.digest).toBe(b.digest);
    expect(a.fingerprints.get('a')).toMatch(/^[\w-]{8}$/);
    expect(a.fingerprints.get('a')).toBe(b.fingerprints.get('a'));
    expect(c.fingerprints.get('a')).not.toBe(a.fingerprints.get('a'));
    expect(c.digest).not.toBe(a.digest);
  });

  it('fingerprints concurrency, absent at 1 so that a job that does not bound its runs keeps its fingerprint', () => {
    const [one, given, three] = jobsOf([
      { name: 'a', schedule: '* * * * *' },
      { name: 'b', schedule: '* * * * *', concurrency: 1 },
      { name: 'c', schedule: '* * * * *', concurrency: 3 },
    ]);
    expect(definitionOf(one!)).not.toHaveProperty('concurrency');
    expect(definitionOf(given!)).not.toHaveProperty('concurrency');
    expect(definitionOf(three!)).toMatchObject({ concurrency: 3 });
    const fingerprint = (concurrency: number) =>
      new FleetDefinitions(jobsOf([{ name: 'a', schedule: '* * * * *', concurrency }])).fingerprints.get('a');
    expect(fingerprint(2)).not.toBe(fingerprint(1));
    expect(fingerprint(1)).toBe(new FleetDefinitions([one!]).fingerprints.get('a'));
  });

  it('publishes the digest alone unless asked for more; a reader skips what it cannot read', () => {
    const own = new FleetDefinitions(
      jobsOf([
        { name: 'a', schedule: '* * * * *' },
        { name: 'b', schedule: '0 * * * *' },
      ]),
    );
    const digestOnly = own.publish({ fingerprints: false, definitionsOf: [] });
    expect(parsePublishedDefinitions(digestOnly)).toEqual({ digest: own.digest });
    const full = parsePublishedDefinitions(
      own.publish({ fingerprints: true, definitionsOf: ['b', 'unknown'] }),
    );
    expect(full?.fingerprints).toEqual(Object.fromEntries(own.fingerprints));
    expect(Object.keys(full?.definitions ?? {})).toEqual(['b']);
    expect(parsePublishedDefinitions('{"v":2,"d":"x"}')).toBeUndefined();
    expect(parsePublishedDefinitions('not json')).toBeUndefined();
    expect(parsePublishedDefinitions(undefined)).toBeUndefined();
  });

  it('stays small for 10,000 jobs: the digest alone in agreement, one fingerprint a job while in drift', () => {
    const jobs = jobsOf(
      Array.from({ length: 10_000 }, (_, index) => ({
        name: `job-${String(index).padStart(5, '0')}`,
        schedule: `${index % 60} ${index % 24} * * *`,
      })),
    );
    const own = new FleetDefinitions(jobs);
    const agreeing = Buffer.byteLength(own.publish({ fingerprints: false, definitionsOf: [] }));
    const drifting = Buffer.byteLength(own.publish({ fingerprints: true, definitionsOf: ['job-00042'] }));
    // The figures of docs/scheduler.md (Config drift).
    expect(agreeing).toBe(26);
    expect(drifting).toBeGreaterThan(225_000);
    expect(drifting).toBeLessThan(235_000);
  });
});

describe('findConfigDrift', () => {
  const v1 = new FleetDefinitions(
    jobsOf([
      { name: 'a', schedule: '* * * * *' },
      { name: 'b', schedule: '0 * * * *' },
    ]),
  );
  const v2 = new FleetDefinitions(
    jobsOf([
      { name: 'a', schedule: '*/5 * * * *', timeout: '10s' },
      { name: 'b', schedule: '0 * * * *' },
    ]),
  );
  const digestOnly = (own: FleetDefinitions) => own.publish({ fingerprints: false, definitionsOf: [] });

  it('none while every instance has the same digest, or publishes none', () => {
    expect(
      findConfigDrift([
        { instance: 'w1', definitions: digestOnly(v1) },
        { instance: 'w2', definitions: digestOnly(v1) },
        { instance: 'old', definitions: undefined },
      ]).size,
    ).toBe(0);
  });

  it('one variant per definition, with its instances and the fields that differ, once both are published', () => {
    const drift = findConfigDrift([
      { instance: 'w2', definitions: v1.publish({ fingerprints: true, definitionsOf: ['a'] }) },
      { instance: 'w1', definitions: digestOnly(v1) },
      { instance: 'w3', definitions: v2.publish({ fingerprints: true, definitionsOf: ['a'] }) },
    ]);
    expect([...drift.keys()]).toEqual(['a']);
    expect(drift.get('a')).toEqual([
      {
        fingerprint: v1.fingerprints.get('a'),
        instances: ['w1', 'w2'],
        fields: { schedule: '* * * * *', timeoutMs: null },
      },
      {
        fingerprint: v2.fingerprints.get('a'),
        instances: ['w3'],
        fields: { schedule: '*/5 * * * *', timeoutMs: 10_000 },
      },
    ]);
  });

  it('fields null while a variant has not published its definition; own definitions fill in', () => {
    const instances = [
      { instance: 'w1', definitions: v1.publish({ fingerprints: true, definitionsOf: [] }) },
      { instance: 'w3', definitions: v2.publish({ fingerprints: true, definitionsOf: ['a'] }) },
    ];
    expect(
      findConfigDrift(instances)
        .get('a')
        ?.map((variant) => variant.fields),
    ).toEqual([null, null]);
    expect(findConfigDrift(instances, v1).get('a')?.[0]?.fields).toEqual({
      schedule: '* * * * *',
      timeoutMs: null,
    });
  });

  it('a job that only some instances run is not drift', () => {
    const only = new FleetDefinitions(jobsOf([{ name: 'b', schedule: '0 * * * *' }]));
    const drift = findConfigDrift([
      { instance: 'w1', definitions: v1.publish({ fingerprints: true, definitionsOf: [] }) },
      { instance: 'w2', definitions: only.publish({ fingerprints: true, definitionsOf: [] }) },
    ]);
    expect(drift.size).toBe(0);
  });
});

describe('ConfigDriftWatch on a shared registry', () => {
  it('drift with its fields after one heartbeat of each, logged once; gone when the other instance leaves', async () => {
    const store = new MemoryLockStore();
    const old = instance(store, 'w1', jobsOf([{ name: 'a', schedule: '* * * * *' }]));
    await old.beat();
    expect(old.watch.drift.size).toBe(0);
    expect(parsePublishedDefinitions(old.watch.published)?.fingerprints).toBeUndefined();

    // A new instance starts with another schedule: it reads before its first registration.
    const fresh = instance(store, 'w2', jobsOf([{ name: 'a', schedule: '*/2 * * * *' }]));
    await fresh.beat();
    expect(parsePublishedDefinitions(fresh.watch.published)?.fingerprints).toBeDefined();
    await old.beat();
    await fresh.beat();
    const expected = [
      { fingerprint: expect.any(String), instances: ['w1'], fields: { schedule: '* * * * *' } },
      { fingerprint: expect.any(String), instances: ['w2'], fields: { schedule: '*/2 * * * *' } },
    ];
    expect(fresh.watch.drift.get('a')).toEqual(expected);
    expect(findConfigDrift(await store.listInstances()).get('a')).toEqual(expected);
    await old.beat();
    expect(old.watch.drift.get('a')).toEqual(expected);
    const warnings = old.logger.lines.filter((line) => line.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      object: { job: 'a', drift: expected },
      message: expect.stringMatching(/^config drift/),
    });

    await store.removeInstance('w2');
    await old.beat();
    expect(old.watch.drift.size).toBe(0);
    expect(old.watch.published).toBe(old.watch.published.replace(/"h":.*/, ''));
    expect(old.logger.lines.at(-1)).toMatchObject({ level: 'info', object: { job: 'a' } });
  });

  it('of the instances with one digest, one publishes the fingerprints; the drift names them all', async () => {
    const store = new MemoryLockStore();
    const jobs = jobsOf([{ name: 'a', schedule: '* * * * *' }]);
    const fleet = [instance(store, 'w1', jobs), instance(store, 'w2', jobs)];
    for (const each of fleet) await each.beat();
    const fresh = instance(store, 'w3', jobsOf([{ name: 'a', schedule: '*/2 * * * *' }]));
    await fresh.beat();
    for (const each of [...fleet, ...fleet, fresh]) await each.beat();
    const told = (each: (typeof fleet)[number]) =>
      parsePublishedDefinitions(each.watch.published)?.fingerprints !== undefined;
    expect(fleet.map(told)).toEqual([true, false]);
    expect(fresh.watch.drift.get('a')?.map((variant) => [variant.instances, variant.fields])).toEqual([
      [['w1', 'w2'], { schedule: '* * * * *' }],
      [['w3'], { schedule: '*/2 * * * *' }],
    ]);
  });
});
