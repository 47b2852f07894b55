import type { TimeProvider } from '../pipeline/time.ts';
import type { SchedulerEvent, SchedulerListener } from './events.ts';
import type { SchedulerLogger } from './fire.ts';
import type { ResolvedJob } from './job.ts';

/** A hook still pending after this long is logged once (it is never awaited, so it blocks nothing). */
export const hookSettleWarnMs = 10_000;

type HookName = 'onSuccess' | 'onFailure' | 'onSkip';

/** The hook an event calls, if any: `already-done` is another instance's decision, not this one's. */
function hookFor(event: SchedulerEvent): HookName | undefined {
  switch (event.type) {
    case 'succeeded':
      return 'onSuccess';
    case 'failed':
      return 'onFailure';
    case 'skipped':
      return event.reason === 'already-done' ? undefined : 'onSkip';
    default:
      return undefined;
  }
}

/**
 * The jobs' `onSuccess`, `onFailure` and `onSkip` hooks as a subscriber of the scheduler's events:
 * each is called once per occurrence on the instance that decided it, with the event. A hook is
 * not awaited: one that throws or rejects is logged (warn) and ignored, one still pending after
 * {@link hookSettleWarnMs} is logged; neither changes the outcome, delays a fire or holds up `stop()`.
 *
 * @example
 * events.on(runJobHooks(config.jobs, logger, time));
 */
export function runJobHooks(
  jobs: readonly ResolvedJob[],
  logger: SchedulerLogger,
  time: TimeProvider,
): SchedulerListener {
  const byName = new Map<string, ResolvedJob>();
  for (const job of jobs) if (job.onSuccess ?? job.onFailure ?? job.onSkip) byName.set(job.name, job);
  return (event) => {
    if (byName.size === 0) return;
    const name = hookFor(event);
    if (name === undefined) return;
    const hook = byName.get(event.job)?.[name] as ((event: SchedulerEvent) => unknown) | undefined;
    if (hook === undefined) return;
    const fields = { job: event.job, hook: name, scheduledAt: event.scheduledAt.toISOString() };
    let result: unknown;
    try {
      result = hook(event);
    } catch (error) {
      logger.warn({ ...fields, err: error }, `the job's ${name} hook threw: ignored`);
      return;
    }
    if (!isPromiseLike(result)) return;
    let settled = false;
    // Cleared as soon as the hook settles; a hook that never does leaves it to fire once.
    const watch = time.setTimeout(() => {
      if (!settled) {
        logger.warn(
          { ...fields, pendingMs: hookSettleWarnMs },
          `the job's ${name} hook has not settled after ${hookSettleWarnMs} ms: it is not awaited`,
        );
      }
    }, hookSettleWarnMs);
    // Only a warning: it must not keep a process alive that has nothing else left to do.
    (watch as { unref?: () => void } | undefined)?.unref?.();
    const done = () => {
      settled = true;
      time.clearTimeout(watch);
    };
    Promise.resolve(result).then(done, (error: unknown) => {
      done();
      logger.warn({ ...fields, err: error }, `the job's ${name} hook rejected: ignored`);
    });
  };
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
