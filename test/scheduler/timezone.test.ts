import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';
import { formatTimeIn } from '../../src/cli/time-format.ts';
import { isUtcName, isValidTimezone, pausedCronOptions } from '../../src/scheduler/timezone.ts';

/** Instants across years, DST dates elsewhere, leap days and the ends of days. */
const instants = [
  '2026-01-01T00:00:00.000Z',
  '2026-03-29T00:59:59.999Z',
  '2026-03-29T01:00:00.000Z',
  '2026-10-25T01:30:00.000Z',
  '2028-02-29T23:59:59.500Z',
  '1999-12-31T23:59:59.000Z',
  '2100-07-04T12:34:56.789Z',
].map((text) => new Date(text));

const utcNames = ['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT'];

describe('UTC without Intl', () => {
  it('knows the four common names of UTC, and only those', () => {
    for (const name of utcNames) expect(isUtcName(name)).toBe(true);
    for (const name of ['utc', 'Zulu', 'Europe/London', 'UTC+1', '']) expect(isUtcName(name)).toBe(false);
  });

  it('validates other zones through Intl as before', () => {
    for (const name of [...utcNames, 'utc', 'Europe/Paris', 'America/New_York']) {
      expect(isValidTimezone(name)).toBe(true);
    }
    for (const name of ['Mars/Olympus', 'UTC+25', 'Europe/Pariss']) expect(isValidTimezone(name)).toBe(false);
  });

  it('computes the same runs as croner given the zone by name', () => {
    for (const schedule of ['0 2 * * *', '*/7 * * * * *', '30 1 * * 0', '0 0 29 2 *', '15 3 L * *']) {
      for (const name of utcNames) {
        const fast = new Cron(schedule, pausedCronOptions(name));
        const named = new Cron(schedule, { timezone: name, paused: true });
        for (const from of instants) {
          expect(
            fast.nextRuns(3, from).map(String),
            `${schedule} in ${name} from ${from.toISOString()}`,
          ).toEqual(named.nextRuns(3, from).map(String));
        }
      }
    }
    expect(pausedCronOptions(undefined)).toEqual({ paused: true, fixedTimeRule: 'no-wildcard' });
    expect(pausedCronOptions('Europe/Paris')).toEqual({
      timezone: 'Europe/Paris',
      paused: true,
      fixedTimeRule: 'no-wildcard',
    });
  });

  it('formats UTC times exactly as Intl does', () => {
    // 'utc' is not one of the four names: it takes the Intl path, with the same format.
    for (const at of instants) {
      const throughIntl = formatTimeIn(at, 'utc');
      expect(throughIntl).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
      for (const name of utcNames) expect(formatTimeIn(at, name)).toBe(throughIntl);
    }
    // Another zone still goes through Intl.
    expect(formatTimeIn(instants[0]!, 'Europe/Paris')).toBe('2026-01-01 01:00:00 GMT+1');
  });
});
