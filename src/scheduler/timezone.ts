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
 * croner's options for a schedule in `timezone`: UTC as a fixed offset of 0 (the same instants,
 * computed without `Intl`), any other zone by name, none for the machine's local time.
 */
export function cronZoneOptions(timezone: string | undefined): Pick<CronOptions, 'timezone' | 'utcOffset'> {
  if (timezone === undefined) return {};
  return isUtcName(timezone) ? { utcOffset: 0 } : { timezone };
}
