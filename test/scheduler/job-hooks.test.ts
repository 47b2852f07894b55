/**
 * `onSuccess`, `onFailure`, `onSkip`: a subscriber of the runner's events, called once per
 * occurrence on the instance that decided it; a hook never changes an outcome or holds a fire up.
 */
import { describe, expect, it } from 'vitest';
import type { FinishedEvent, SchedulerEvent, SkippedEvent } from '../../src/scheduler/events.ts';
import type { ResolvedJob } from '../../src/scheduler/job.ts';
import { hookSettleWarnMs } from '../../src/scheduler/job-hooks.ts';
import { resolveConfigSync } from '../../src/scheduler/resolve.ts';
import { JobRunner } from '../../src/scheduler/runner.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';
import {
  ControlledStore,
  completeOccurrence,
  JobProbe,
  RecordingLogger,
  resolvedConfig,
  resolvedJob,
} from './fixtures.ts';

const start = Date.parse('2026-01-01T02:00:00.000Z');

function setup(
  jobs: (probe: JobProbe) => ResolvedJob[],
  { behaviour = 'immediate' }: { behaviour?: 'immediate' | 'hold' } = {},
) {
  const time = new FakeTimeProvider(start + 300);
  const store = new ControlledStore(time);
  const probe = new JobProbe(time, store, behaviour);
  const logger = new RecordingLogger();
  const config = resolvedConfig(store, jobs(probe));
  const runner = new JobRunner({ config, logger, timeProvider: time, abortSettleMs: 1_000 });
  return { time, store, probe, logger, runner };
}

/** A hook that records the events it gets. */
function recorder<Event extends SchedulerEvent>(result?: (event: Event) => unknown) {
  const events: Event[] = [];
  const hook = (event: Event) => {
    events.push(event);
    return result?.(event);
  };
  return { events, hook };
}

const iso = (event: SchedulerEvent) => event.scheduledAt.toISOString();

describe('job hooks', () => {
  it('onSuccess gets the succeeded event once per occurrence', async () => {
    const success = recorder<FinishedEvent>();
    const { time, runner } = setup((probe) => [resolvedJob({ run: probe.run, onSuccess: success.hook })]);
    await runner.start();
    await time.advance(2_000);
    await runner.stop();

    expect(success.events.map(iso)).toEqual(['2026-01-01T02:00:01.000Z', '2026-01-01T02:00:02.000Z']);
    expect(success.events[0]).toMatchObject({
      type: 'succeeded',
      job: 'report',
      instance: 'test-instance',
      kind: 'scheduled',
      token: 1,
      attempts: 1,
    });
  });

  it('onFailure gets the failed event with the final error and the attempts', async () => {
    const failure = recorder<FinishedEvent>();
    const success = recorder<FinishedEvent>();
    const boom = new Error('boom');
    const { time, runner } = setup(() => [
      resolvedJob({
        run: () => {
          throw boom;
        },
        retry: { maxRetryAttempts: 1, delay: 100 },
        onFailure: failure.hook,
        onSuccess: success.hook,
      }),
    ]);
    await runner.start();
    await time.advance(1_500);
    await runner.stop();

    expect(success.events).toHaveLength(0);
    expect(failure.events).toHaveLength(1);
    expect(failure.events[0]).toMatchObject({ type: 'failed', error: boom, attempts: 2, token: 1 });
  });

  it('onSkip gets the skipped event with its reason, but not already-done (another instance decided that)', async () => {
    const skip = recorder<SkippedEvent>();
    const { time, store, probe, logger, runner } = setup(
      (probe) => [resolvedJob({ run: probe.run, onSkip: skip.hook })],
      { behaviour: 'hold' },
    );
    await completeOccurrence(store.inner, 'report', start + 3_000);
    await runner.start();
    await time.advance(2_000);
    probe.finishAll();
    await time.advance(1_000);
    probe.finishAll();
    await runner.stop();

    expect(logger.fires().map((line) => [line.scheduledAt, line.outcome, line.reason])).toEqual([
      ['2026-01-01T02:00:02.000Z', 'skipped', 'overlap'],
      ['2026-01-01T02:00:01.000Z', 'success', undefined],
      ['2026-01-01T02:00:03.000Z', 'skipped', 'already-done'],
    ]);
    expect(skip.events.map((event) => [iso(event), event.type, event.reason])).toEqual([
      ['2026-01-01T02:00:02.000Z', 'skipped', 'overlap'],
    ]);
  });

  it('config-level hooks apply to every job; a job own hook replaces the default', async () => {
    const time = new FakeTimeProvider(start + 300);
    const store = new ControlledStore(time);
    const fallback = recorder<FinishedEvent>();
    const own = recorder<FinishedEvent>();
    const config = resolveConfigSync(
      {
        store,
        instance: 'test-instance',
        onSuccess: fallback.hook,
        jobs: [
          { name: 'plain', schedule: '* * * * * *', run: () => {} },
          { name: 'custom', schedule: '* * * * * *', run: () => {}, onSuccess: own.hook },
        ],
      },
      '/virtual/resil.config.ts',
    );
    const runner = new JobRunner({ config, logger: new RecordingLogger(), timeProvider: time });
    await runner.start();
    await time.advance(1_000);
    await runner.stop();

    expect(fallback.events.map((event) => event.job)).toEqual(['plain']);
    expect(own.events.map((event) => event.job)).toEqual(['custom']);
  });

  it('a hook that throws or rejects is logged with the job and the hook, and changes nothing', async () => {
    const { time, store, logger, runner } = setup((probe) => [
      resolvedJob({
        name: 'throws',
        run: probe.run,
        onSuccess: () => {
          throw new Error('hook bug');
        },
      }),
      resolvedJob({
        name: 'rejects',
        run: probe.run,
        onSuccess: async () => Promise.reject(new Error('nope')),
      }),
    ]);
    await runner.start();
    await time.advance(2_000);
    await runner.stop();

    for (const job of ['throws', 'rejects']) {
      expect(
        logger
          .fires()
          .filter((line) => line.job === job)
          .map((line) => line.outcome),
      ).toEqual(['success', 'success']);
      expect((await store.runHistory(job)).map((record) => record.outcome)).toEqual(['success', 'success']);
    }
    const warnings = logger.lines.filter((line) => line.level === 'warn' && line.hook !== undefined);
    expect(warnings.map((line) => [line.job, line.hook, line.msg])).toEqual(
      expect.arrayContaining([
        ['throws', 'onSuccess', "the job's onSuccess hook threw: ignored"],
        ['rejects', 'onSuccess', "the job's onSuccess hook rejected: ignored"],
      ]),
    );
    expect(warnings).toHaveLength(4);
  });

  it('a hook that hangs does not hold up the next fires or stop(), and is logged once it has not settled', async () => {
    const hanging = recorder<FinishedEvent>(() => new Promise(() => {}));
    const { time, logger, runner, probe } = setup((probe) => [
      resolvedJob({ run: probe.run, onSuccess: hanging.hook }),
    ]);
    await runner.start();
    await time.advance(3_000);

    expect(probe.calls).toHaveLength(3);
    expect(hanging.events).toHaveLength(3);
    const pendingWarnings = () => logger.lines.filter((line) => line.pendingMs !== undefined);
    expect(pendingWarnings()).toHaveLength(0);
    await time.advance(hookSettleWarnMs);
    expect(pendingWarnings().length).toBeGreaterThanOrEqual(3);
    expect(pendingWarnings()[0]).toMatchObject({ level: 'warn', job: 'report', hook: 'onSuccess' });

    let stopped = false;
    const stopping = runner.stop().then(() => {
      stopped = true;
    });
    await time.advance(0);
    await stopping;
    expect(stopped).toBe(true);
  });
});
