import { Cron } from 'croner';
import type { ResolvedJob } from './job.ts';

/**
 * One scheduled run of a job: the job's name and the instant its schedule named. Every instance
 * computes the same occurrence for the same fire, whatever its clock says and however late it fires,
 * so the run ledger can tell whether this exact run already completed somewhere in the fleet.
 */
export interface Occurrence {
  readonly job: string;
  /** The schedule's instant, epoch ms (whole seconds: cron has no finer unit). */
  readonly scheduledAt: number;
}

/** The occurrence `(job, scheduledAt)`. */
export function occurrenceOf(
  job: Pick<ResolvedJob, 'name'> | string,
  scheduledAt: number | Date,
): Occurrence {
  return {
    job: typeof job === 'string' ? job : job.name,
    scheduledAt: typeof scheduledAt === 'number' ? scheduledAt : scheduledAt.getTime(),
  };
}

/** `job@2026-01-01T02:00:00.000Z`, for logs. */
export function formatOccurrence(occurrence: Occurrence): string {
  return `${occurrence.job}@${new Date(occurrence.scheduledAt).toISOString()}`;
}

/**
 * A job's cron schedule as instants, computed by croner in the job's timezone. It only answers
 * questions about the schedule; firing is the runner's business.
 */
export class JobSchedule {
  readonly #cron: Cron;

  constructor(job: Pick<ResolvedJob, 'schedule' | 'timezone'>) {
    this.#cron = new Cron(job.schedule, { timezone: job.timezone, paused: true });
  }

  /**
   * The latest instant at or before `instant`: the occurrence a fire at `instant` belongs to.
   * Croner fires once its clock has reached the instant, so a fire landing exactly on it (or late)
   * maps back to that instant, never to a later one.
   */
  latestAtOrBefore(instant: number): number | undefined {
    // previousRuns() excludes an instant equal to its reference, so look from 1 ms later.
    return this.#cron.previousRuns(1, new Date(instant + 1))[0]?.getTime();
  }

  /** The first instant strictly after `instant`. */
  nextAfter(instant: number): number | undefined {
    return this.#cron.nextRun(new Date(instant))?.getTime() ?? undefined;
  }

  /**
   * The instants strictly between `after` and `before`, oldest first, at most `limit` of them
   * (a process frozen for a day must not enumerate 86,400 seconds).
   */
  between(after: number, before: number, limit: number): { instants: number[]; more: boolean } {
    const instants: number[] = [];
    let cursor = after;
    for (;;) {
      const next = this.nextAfter(cursor);
      if (next === undefined || next >= before) return { instants, more: false };
      if (instants.length === limit) return { instants, more: true };
      instants.push(next);
      cursor = next;
    }
  }
}
