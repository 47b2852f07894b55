import { Cron } from 'croner';
import type { DstPolicy, ResolvedJob } from './job.ts';
import { pausedCronOptions } from './timezone.ts';

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

/**
 * The delay in [0, job.jitterMs) after `scheduledAt` at which the occurrence's fires start: FNV-1a
 * (32-bit) of `name@scheduledAt` modulo the jitter, so every instance of the fleet waits the same
 * delay for the same occurrence (they still compete at one moment) and occurrences spread out.
 * 0 for a job without jitter.
 */
export function jitterOf(job: Pick<ResolvedJob, 'name' | 'jitterMs'>, scheduledAt: number | Date): number {
  const jitterMs = Math.floor(job.jitterMs ?? 0);
  if (jitterMs <= 1) return 0;
  const instant = typeof scheduledAt === 'number' ? scheduledAt : scheduledAt.getTime();
  return fnv1a(`${job.name}@${instant}`) % jitterMs;
}

/** The 32-bit FNV-1a hash of `text`'s UTF-16 code units, unsigned. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** `job@2026-01-01T02:00:00.000Z`, for logs. */
export function formatOccurrence(occurrence: Occurrence): string {
  return `${occurrence.job}@${new Date(occurrence.scheduledAt).toISOString()}`;
}

/**
 * Parsed patterns, least recently used first. croner 11 keeps a year table of ~80 KB in every
 * parsed pattern, so 1,300 distinct schedules kept parsed would hold ~110 MB: only the few in use
 * stay parsed, the others are parsed again when asked (~0.15 ms). Few, because a start parses
 * every distinct schedule once in a burst, and what the cache holds then outlives young garbage:
 * for 10,000 jobs on 1,320 schedules the burst peaks at 71 MB RSS with 4 kept, 123 MB with 16.
 */
const parsedPatterns = new Map<string, Cron>();
const parsedPatternsLimit = 4;

function parsedPattern(schedule: string, timezone: string | undefined): Cron {
  const key = `${timezone ?? ''} ${schedule}`;
  let cron = parsedPatterns.get(key);
  if (cron !== undefined) {
    parsedPatterns.delete(key);
  } else {
    cron = new Cron(schedule, pausedCronOptions(timezone));
    if (parsedPatterns.size >= parsedPatternsLimit) {
      parsedPatterns.delete(parsedPatterns.keys().next().value!);
    }
  }
  parsedPatterns.set(key, cron);
  return cron;
}

/** How many moved instants in a row a search steps over (one per DST gap it meets). */
const gapSteps = 8;

/**
 * croner's next instant after `instant`, without the instants croner moved out of a DST gap when
 * `skipGaps` (croner moves a fixed time that falls in a gap to the first instant after it, which
 * `match()` then rejects: its local time is not one the pattern names).
 */
function nextOf(cron: Cron, instant: number, skipGaps: boolean): number | undefined {
  let next = cron.nextRun(new Date(instant));
  if (skipGaps) {
    for (let step = 0; next !== null && !cron.match(next) && step < gapSteps; step++)
      next = cron.nextRun(next);
  }
  return next?.getTime() ?? undefined;
}

/**
 * A job's cron schedule as instants, computed by croner in the job's timezone. It only answers
 * questions about the schedule; firing is the runner's business. Jobs with the same schedule,
 * timezone and DST policy can share one: it remembers its last answer, which they all ask for in turn.
 *
 * DST (the rule for a fixed local time is `fixedTimeRule` in timezone.ts): a fixed local time that
 * does not exist (the spring-forward gap) runs at the first instant after the gap with
 * `dst: 'shift'` (`30 2 * * *` in Europe/Berlin on 2027-03-28 runs at 03:00 CEST, 01:00 UTC), and
 * not that day with `dst: 'skip'`. A fixed time that occurs twice runs once, at its first instant.
 * An interval schedule (`0 * * * *`, `*\/20 2 * * *`) runs once per real instant: nothing for the
 * local times in a gap, both passes of a repeated time. Every instance computes the same instants
 * from the same schedule, zone and policy, so a shifted occurrence has one identity fleet-wide.
 */
export class JobSchedule {
  readonly schedule: string;
  readonly timezone: string | undefined;
  readonly dst: DstPolicy;
  #askedAfter = Number.NaN;
  #nextAfter: number | undefined;

  /** The schedule is not parsed here: a resolved job's schedule was validated. */
  constructor(job: Pick<ResolvedJob, 'schedule' | 'timezone'> & { readonly dst?: DstPolicy | undefined }) {
    this.schedule = job.schedule;
    this.timezone = job.timezone;
    this.dst = job.dst ?? 'shift';
  }

  /**
   * True when `instant` is one of this schedule's instants that stands for a local time the
   * spring-forward gap skipped (`dst: 'shift'`): 03:00 CEST for a `30 2 * * *` job in Berlin.
   */
  isShifted(instant: number): boolean {
    return this.dst === 'shift' && !this.#cron().match(new Date(instant));
  }

  /**
   * The latest instant at or before `instant`: the occurrence a fire at `instant` belongs to.
   * A fire landing exactly on an instant (or late) maps back to that instant, never to a later one.
   */
  latestAtOrBefore(instant: number): number | undefined {
    // previousRuns() excludes an instant equal to its reference, so look from 1 ms later.
    const cron = this.#cron();
    let [latest] = cron.previousRuns(1, new Date(instant + 1));
    if (this.dst === 'shift') return latest?.getTime();
    for (let step = 0; latest !== undefined && !cron.match(latest) && step < gapSteps; step++) {
      [latest] = cron.previousRuns(1, latest);
    }
    return latest?.getTime();
  }

  /** The first instant strictly after `instant`. */
  nextAfter(instant: number): number | undefined {
    if (instant !== this.#askedAfter) {
      this.#nextAfter = nextOf(this.#cron(), instant, this.dst === 'skip');
      this.#askedAfter = instant;
    }
    return this.#nextAfter;
  }

  /**
   * The instants strictly between `after` and `before`, oldest first, at most `limit` of them
   * (a process frozen for a day must not enumerate 86,400 seconds).
   */
  between(after: number, before: number, limit: number): { instants: number[]; more: boolean } {
    const instants: number[] = [];
    const cron = this.#cron();
    const skipGaps = this.dst === 'skip';
    let cursor = after;
    for (;;) {
      const next = nextOf(cron, cursor, skipGaps);
      if (next === undefined || next >= before) return { instants, more: false };
      if (instants.length === limit) return { instants, more: true };
      instants.push(next);
      cursor = next;
    }
  }

  #cron(): Cron {
    return parsedPattern(this.schedule, this.timezone);
  }
}

/**
 * One {@link JobSchedule} per distinct schedule, timezone and DST policy: 10,000 jobs often share
 * a thousand schedules, and the jobs of one schedule ask it the same questions.
 */
export class JobSchedules {
  readonly #byKey = new Map<string, JobSchedule>();

  of(job: Pick<ResolvedJob, 'schedule' | 'timezone' | 'dst'>): JobSchedule {
    const key = `${job.dst ?? 'shift'} ${job.timezone ?? ''} ${job.schedule}`;
    let schedule = this.#byKey.get(key);
    if (schedule === undefined) {
      schedule = new JobSchedule(job);
      this.#byKey.set(key, schedule);
    }
    return schedule;
  }
}
