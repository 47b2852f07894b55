/**
 * Attribution of errors that escape a job's code: what the CLI's `unhandledRejection` and
 * `uncaughtException` handlers call, here called from the job's own async context as Node calls
 * those handlers.
 */
import { MemoryLockStore } from 'resil';
import {
  attributeStrayError,
  createScheduler,
  isConfigError,
  isStrayJobError,
  runningJob,
  type SchedulerEvent,
  type StrayErrorAttribution,
} from 'resil/scheduler';
import { describe, expect, it } from 'vitest';

function setup(run: (ctx: { signal: AbortSignal }) => unknown, retry = false) {
  const events: SchedulerEvent[] = [];
  const scheduler = createScheduler({
    store: new MemoryLockStore(),
    timezone: 'UTC',
    jobs: [
      {
        name: 'leaky',
        schedule: '0 2 * * *',
        run,
        ...(retry ? { retry: { maxRetryAttempts: 1, delay: '1ms' } } : {}),
      },
    ],
  });
  scheduler.on((event) => events.push(event));
  return { scheduler, events };
}

const nextMacrotask = () => new Promise((resolve) => setImmediate(resolve));

describe('stray errors of a job (attributeStrayError)', () => {
  it('while the run goes on: its attempt fails at once with a StrayJobError, and its signal aborts with it', async () => {
    let attributed: StrayErrorAttribution | undefined;
    let signal: AbortSignal | undefined;
    const { scheduler } = setup(async (ctx) => {
      signal = ctx.signal;
      setImmediate(() => {
        attributed = attributeStrayError(new Error('lost promise'), 'unhandled-rejection');
      });
      await new Promise(() => {}); // never settles by itself
    });
    const result = await scheduler.trigger('leaky');

    expect(result).toMatchObject({ outcome: 'failure', attempts: 1 });
    expect(isStrayJobError(result.error)).toBe(true);
    expect(result.error).toMatchObject({
      origin: 'unhandled-rejection',
      message: "an unhandled rejection escaped the job's run: lost promise",
    });
    expect((result.error as { error: Error }).error.message).toBe('lost promise');
    expect(attributed).toMatchObject({ job: 'leaky', failedRun: true });
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(result.error);
    await scheduler.stop();
  });

  it('a failed attempt is retried like any other failure: the retry runs in a context of its own', async () => {
    const contexts: Array<{ signal: AbortSignal }> = [];
    const { scheduler } = setup(async (ctx) => {
      contexts.push(ctx);
      if (contexts.length === 1)
        setImmediate(() => attributeStrayError(new Error('first'), 'uncaught-exception'));
      await nextMacrotask();
      await nextMacrotask();
    }, true);
    expect(await scheduler.trigger('leaky')).toMatchObject({ outcome: 'success', attempts: 2 });
    // Read only now, the first attempt's signal is still its own: aborted by the stray error.
    expect(contexts[0]!.signal.aborted).toBe(true);
    expect(isStrayJobError(contexts[0]!.signal.reason)).toBe(true);
    expect(contexts[1]!.signal.aborted).toBe(false);
    await scheduler.stop();
  });

  it('after the attempt ended: the recorded success stands and a stray-error event names the occurrence', async () => {
    let release!: () => void;
    const later = new Promise<void>((resolve) => {
      release = resolve;
    });
    let attributed: StrayErrorAttribution | undefined;
    const { scheduler, events } = setup(() => {
      void later.then(() => {
        attributed = attributeStrayError(new Error('too late'), 'unhandled-rejection');
      });
    });
    const result = await scheduler.trigger('leaky');
    release();
    await nextMacrotask();

    expect(result).toMatchObject({ outcome: 'success' });
    expect(attributed).toMatchObject({ job: 'leaky', failedRun: false });
    const stray = events.filter((event) => event.type === 'stray-error');
    expect(stray).toEqual([
      expect.objectContaining({
        job: 'leaky',
        kind: 'manual',
        origin: 'unhandled-rejection',
        error: new Error('too late'),
        scheduledAt: attributed!.scheduledAt,
      }),
    ]);
    await scheduler.stop();
  });

  it('outside any job nothing is attributed, and runningJob() names the job only inside its code', async () => {
    expect(attributeStrayError(new Error('nobody'), 'uncaught-exception')).toBeUndefined();
    expect(runningJob()).toBeUndefined();
    let inside: ReturnType<typeof runningJob>;
    const { scheduler } = setup(async () => {
      await nextMacrotask();
      inside = runningJob();
    });
    await scheduler.trigger('leaky');
    expect(inside?.job).toBe('leaky');
    expect(runningJob()).toBeUndefined();
    await scheduler.stop();
  });
});

describe("isolation: 'worker' in createScheduler()", () => {
  it('is a config error: a worker loads its job from a config file, and these options are none', () => {
    let error: unknown;
    try {
      createScheduler({
        jobs: [{ name: 'heavy', schedule: '0 2 * * *', isolation: 'worker', run: () => {} }],
      });
    } catch (caught) {
      error = caught;
    }
    expect(isConfigError(error)).toBe(true);
    expect((error as Error).message).toContain(
      `createScheduler() options: job "heavy": option "isolation": a worker loads its job from a config file, which createScheduler() options are not`,
    );
  });
});
