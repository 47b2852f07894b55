import { Cron, CronPattern } from 'croner';
import type { DstPolicy, ResolvedJob } from './job.ts';
import { JobSchedule } from './occurrence.ts';
import { fixedTimeRule, isUtcName, pausedCronOptions } from './timezone.ts';

/** A change of a zone's UTC offset: clocks jump forward (a gap) or fall back (a fold). */
export interface ZoneTransition {
  /** The first instant with the new offset, epoch ms. */
  readonly at: number;
  /** The offset before and after, in ms (east of UTC positive). */
  readonly offsetBeforeMs: number;
  readonly offsetAfterMs: number;
}

/** What a job's fixed local time does around one transition. */
export interface DstNotice {
  readonly kind: 'gap' | 'fold';
  /** The local date of the transition, `2027-03-28`. */
  readonly date: string;
  /** The job's local times that do not exist (gap) or occur twice (fold), `02:30`; at most 4. */
  readonly localTimes: readonly string[];
  /** The instant the job runs for them: after the gap (`'shift'`) or the first pass (fold); undefined when skipped. */
  readonly runsAt: number | undefined;
}

const wallClocks = new Map<string, Intl.DateTimeFormat>();

/** The zone's offset from UTC at `instant`, in ms (whole seconds). */
export function offsetAt(instant: number, timezone: string): number {
  let format = wallClocks.get(timezone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    wallClocks.set(timezone, format);
  }
  const part: Record<string, number> = {};
  for (const { type, value } of format.formatToParts(instant)) part[type] = Number(value);
  const wall = Date.UTC(part.year!, part.month! - 1, part.day!, part.hour!, part.minute!, part.second!);
  return wall - Math.floor(instant / 1_000) * 1_000;
}

const day = 86_400_000;

/**
 * The zone's offset changes in `[from, to)`, oldest first: the offset sampled once a day, each
 * change then narrowed to the second (no zone changes its offset twice within a day).
 */
export function zoneTransitions(timezone: string, from: number, to: number): ZoneTransition[] {
  if (isUtcName(timezone)) return [];
  const transitions: ZoneTransition[] = [];
  // Whole seconds, so the search lands on the transition itself, not on a second's fraction after it.
  let before = Math.floor(from / 1_000) * 1_000;
  let offsetBefore = offsetAt(before, timezone);
  for (let after = before + day; before < to; after += day) {
    const offsetAfter = offsetAt(after, timezone);
    if (offsetAfter !== offsetBefore) {
      let low = before;
      let high = after;
      while (high - low > 1_000) {
        const middle = low + Math.floor((high - low) / 2_000) * 1_000;
        if (offsetAt(middle, timezone) === offsetBefore) low = middle;
        else high = middle;
      }
      if (high < to) transitions.push({ at: high, offsetBeforeMs: offsetBefore, offsetAfterMs: offsetAfter });
    }
    before = after;
    offsetBefore = offsetAfter;
  }
  return transitions;
}

/** True when the schedule names a fixed local time (`fixedTimeRule`: no `*` or step in its second, minute and hour). */
export function isFixedTime(schedule: string): boolean {
  return new CronPattern(schedule, undefined, { fixedTimeRule }).isFixedTime;
}

/** `02:30`, or `02:30:15` when the seconds matter; `wall` is a local time written as a UTC instant. */
function formatWall(wall: number): string {
  const text = new Date(wall).toISOString().slice(11, 19);
  return text.endsWith(':00') ? text.slice(0, 5) : text;
}

/** How many local times a notice names. */
const localTimesShown = 4;

/**
 * What the job's fixed local time does on each DST transition of its zone in `[from, to)`; empty for
 * an interval schedule, a zone without transitions, or a time no transition touches. Told from the
 * schedule's own instants, so a config of many schedules parses each once: croner moves a fixed
 * time in a gap onto the transition (an instant whose local time the pattern does not name), and
 * gives a fixed time that occurs twice its first pass only (an interval schedule gets both).
 */
export function dstNoticesOf(
  job: Pick<ResolvedJob, 'schedule' | 'dst'> & { readonly timezone: string },
  from: number,
  to: number,
  transitions = zoneTransitions(job.timezone, from, to),
): DstNotice[] {
  if (transitions.length === 0) return [];
  const shifting = new JobSchedule({ ...job, dst: 'shift' });
  const notices: DstNotice[] = [];
  for (const { at, offsetBeforeMs, offsetAfterMs } of transitions) {
    const date = new Date(at + offsetAfterMs).toISOString().slice(0, 10);
    if (offsetAfterMs > offsetBeforeMs) {
      if (shifting.nextAfter(at - 1_000) !== at || !shifting.isShifted(at)) continue;
      // Which local times the gap skips: the pattern's times on a clock at UTC+0, parsed only here.
      const wallClock = new Cron(job.schedule, pausedCronOptions('UTC'));
      const localTimes: string[] = [];
      const endWall = at + offsetAfterMs;
      let next = wallClock.nextRun(new Date(at + offsetBeforeMs - 1_000));
      while (next !== null && next.getTime() < endWall && localTimes.length < localTimesShown) {
        localTimes.push(formatWall(next.getTime()));
        next = wallClock.nextRun(next);
      }
      wallClock.stop();
      notices.push({ kind: 'gap', date, localTimes, runsAt: job.dst === 'skip' ? undefined : at });
    } else {
      const foldMs = offsetBeforeMs - offsetAfterMs;
      const firstPasses = shifting.between(at - foldMs - 1, at, localTimesShown).instants;
      if (firstPasses.length === 0) continue;
      // An interval schedule also fires on the second pass: nothing to tell.
      const secondPass = shifting.nextAfter(at - 1);
      if (secondPass !== undefined && secondPass < at + foldMs) continue;
      const localTimes = firstPasses.map((instant) => formatWall(instant + offsetBeforeMs));
      notices.push({ kind: 'fold', date, localTimes, runsAt: firstPasses[0] });
    }
  }
  return notices;
}

/** `03:00 CEST (01:00 UTC)`. */
function formatInstant(instant: number, timezone: string): string {
  const local = new Intl.DateTimeFormat('en-GB', {
    timeZone: timezone,
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'short',
  }).format(instant);
  return `${local} (${new Date(instant).toISOString().slice(11, 16)} UTC)`;
}

/** One sentence per notice: the date, the local times and what the job does. */
export function describeDstNotice(notice: DstNotice, timezone: string, dst: DstPolicy): string {
  const times = notice.localTimes.join(', ');
  if (notice.kind === 'fold') {
    const first = notice.runsAt === undefined ? '' : `: ${formatInstant(notice.runsAt, timezone)}`;
    return `on ${notice.date} ${times} occurs twice in ${timezone}: it runs once, at the first pass${first}`;
  }
  const what =
    notice.runsAt !== undefined
      ? `it runs once right after the gap, at ${formatInstant(notice.runsAt, timezone)} (dst: 'shift')`
      : dst === 'skip'
        ? `it does not run for it that day (dst: 'skip')`
        : 'it does not run for it that day';
  return `on ${notice.date} ${times} does not exist in ${timezone} (clocks spring forward): ${what}`;
}

/** How far ahead `resil run` looks at start for DST transitions that touch a job's fixed time. */
export const dstNoticeHorizonMs = 365 * day;

/** A job whose fixed local time a DST transition of the next 12 months touches, and how. */
export interface JobDstNotices {
  readonly job: string;
  readonly timezone: string;
  readonly dst: DstPolicy;
  readonly notices: readonly DstNotice[];
}

/**
 * For each job whose fixed local time falls in a gap or a fold within `dstNoticeHorizonMs` after
 * `from`, what happens then; computed once per zone, and once per schedule, zone and policy. Asked
 * right after the job's next instant, it finds the schedule still parsed (see `parsedPatterns`).
 */
export class DstNoticeFinder {
  readonly #from: number;
  readonly #transitionsByZone = new Map<string, ZoneTransition[]>();
  readonly #noticesByKey = new Map<string, DstNotice[]>();

  constructor(from: number) {
    this.#from = from;
  }

  of(job: Pick<ResolvedJob, 'name' | 'schedule' | 'timezone' | 'dst'>): JobDstNotices | undefined {
    const timezone = job.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
    const to = this.#from + dstNoticeHorizonMs;
    let transitions = this.#transitionsByZone.get(timezone);
    if (transitions === undefined) {
      transitions = zoneTransitions(timezone, this.#from, to);
      this.#transitionsByZone.set(timezone, transitions);
    }
    if (transitions.length === 0) return undefined;
    const dst = job.dst ?? 'shift';
    const key = `${dst} ${timezone} ${job.schedule}`;
    let notices = this.#noticesByKey.get(key);
    if (notices === undefined) {
      notices = dstNoticesOf({ schedule: job.schedule, timezone, dst }, this.#from, to, transitions);
      this.#noticesByKey.set(key, notices);
    }
    return notices.length === 0 ? undefined : { job: job.name, timezone, dst, notices };
  }
}
