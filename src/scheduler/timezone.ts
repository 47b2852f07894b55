import type { CronOptions } from 'croner';

/**
 * Names of the UTC zone that are answered without `Intl`: the runtime's first
 * `Intl.DateTimeFormat` loads its timezone data, about 18 ms of a CLI command's start, and a
 * fixed offset of 0 needs none of it. Other spellings (`utc`, `Zulu`, ...) go through `Intl` as
 * before and behave the same.
 */
const utcNames: ReadonlySet<string> = new Set(['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT']);

/** True for the common names of UTC (see {@link utcNames}). */
export function isUtcName(timezone: string): boolean {
  return utcNames.has(timezone);
}

/** True for an IANA zone name this runtime knows (`Intl` throws a RangeError otherwise). */
export function isValidTimezone(timezone: string): boolean {
  if (isUtcName(timezone)) return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Which schedules name a fixed local time (see docs/scheduler.md, "Daylight saving time"): those
 * whose second, minute and hour fields hold no `*` and no step, so `30 2 * * *`, `0 2,14 * * *`
 * and `0 1-3 * * 1` do and `0 * * * *`, `*\/15 * * * *` and `*\/20 2 * * *` do not. croner moves
 * a fixed time inside a spring-forward gap to the first instant after it and runs a fixed time that
 * occurs twice at its first instant only; an interval schedule gets one instant per real instant.
 */
export const fixedTimeRule = 'no-wildcard';

/**
 * croner's options for a paused schedule in `timezone` (only its instants are asked for): UTC as a
 * fixed offset of 0 (the same instants, computed without `Intl`), any other zone by name, none for
 * the machine's local time. Object literals, not a spread: every job is validated through here,
 * and with a spread a 10,000-job `resil run` started about 50 % slower, its peak RSS 30 MB higher.
 */
export function pausedCronOptions(timezone: string | undefined): CronOptions {
  if (timezone === undefined) return { paused: true, fixedTimeRule };
  return isUtcName(timezone)
    ? { utcOffset: 0, paused: true, fixedTimeRule }
    : { timezone, paused: true, fixedTimeRule };
}
