import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';
import { describeSchedule } from '../../src/cli/dashboard/describe-schedule.ts';

describe('describeSchedule', () => {
  it.each([
    // seconds
    ['* * * * * *', 'Every second'],
    ['*/1 * * * * *', 'Every second'],
    ['*/10 * * * * *', 'Every 10 seconds'],
    ['15 * * * * *', 'At 15 seconds past the minute'],
    // minutes and hours
    ['* * * * *', 'Every minute'],
    ['0 * * * * *', 'Every minute'],
    ['*/5 * * * *', 'Every 5 minutes'],
    ['30 */5 * * * *', 'At 30 seconds past the minute, every 5 minutes'],
    ['0 * * * *', 'Every hour'],
    ['15 * * * *', 'At 15 minutes past the hour'],
    ['10 15 * * * *', 'At 10 seconds past the minute, at 15 minutes past the hour'],
    ['0 */6 * * *', 'On the hour, every 6 hours'],
    ['? * * * *', 'Every minute'],
    // days
    ['0 2 * * *', 'At 02:00'],
    ['30 14 * * ?', 'At 14:30'],
    ['5 30 2 * * *', 'At 02:30:05'],
    ['30 6 * * 1', 'At 06:30, only on Monday'],
    ['0 9 * * 1-5', 'At 09:00, Monday through Friday'],
    ['0 9 * * MON-FRI', 'At 09:00, Monday through Friday'],
    ['0 10 * * 5-7', 'At 10:00, Friday through Sunday'],
    ['0 8 * * 0', 'At 08:00, only on Sunday'],
    ['0 8 * * 7', 'At 08:00, only on Sunday'],
    ['0 8 * * sun,sat', 'At 08:00, only on Sunday and Saturday'],
    ['0 12 * * 5,1,3', 'At 12:00, only on Monday, Wednesday, and Friday'],
    // months and years
    ['0 0 1 * *', 'At 00:00, on day 1 of the month'],
    ['0 3 22 * *', 'At 03:00, on day 22 of the month'],
    ['0 3 13 * *', 'At 03:00, on day 13 of the month'],
    ['0 23 L * *', 'At 23:00, on the last day of the month'],
    ['0 0 1 1 *', 'At 00:00, on day 1 of the month, only in January'],
    ['0 6 24 DEC *', 'At 06:00, on day 24 of the month, only in December'],
    ['0 6 L feb *', 'At 06:00, on the last day of the month, only in February'],
    ['0 0 2 * * * *', 'At 02:00'],
    ['0 0 31 2 *', 'At 00:00, on day 31 of the month, only in February'], // croner accepts it; it never comes
    // nicknames
    ['@daily', 'At 00:00'],
    ['@hourly', 'Every hour'],
    ['@weekly', 'At 00:00, only on Sunday'],
    ['@monthly', 'At 00:00, on day 1 of the month'],
    ['@yearly', 'At 00:00, on day 1 of the month, only in January'],
  ])('%s: %s', (schedule, description) => {
    new Cron(schedule, { paused: true }); // a schedule croner accepts
    expect(describeSchedule(schedule)).toBe(description);
  });

  it.each([
    ['0 9,17 * * *', 'a list of hours', 'At 09:00 and 17:00'],
    ['0 9-17 * * *', 'a range of hours', 'Every hour, between 09:00 and 17:00'],
    [
      '0 0 1 * MON',
      'a day of month and a day of week (cron ORs them)',
      'At 00:00, on day 1 of the month, and on Monday',
    ],
    ['0 0 * * 5#2', 'the nth weekday', 'At 00:00, on the second Friday of the month'],
    ['0 0 15W * *', 'the nearest weekday', 'At 00:00, on the weekday nearest day 15 of the month'],
    [
      '0 0 * * 1-3,5',
      'a list with a range of weekdays',
      'At 00:00, only on Monday through Wednesday and Friday',
    ],
    ['0 0 0 1 1 * 2030', 'a year', 'At 00:00, on day 1 of the month, only in January, only in 2030'],
    ['0 0 * * 1,1', 'a repeated weekday', 'At 00:00, only on Monday and Monday'],
    ['0 0 * * 7-7', 'a range of one day', 'At 00:00, Sunday through Sunday'],
    ['*/7 9 * * *', 'a step in one hour', 'Every 7 minutes, between 09:00 and 09:59'],
  ])('%s (%s): %s', (schedule, _shape, description) => {
    new Cron(schedule, { paused: true });
    expect(describeSchedule(schedule)).toBe(description);
  });

  const weekdayNames = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
  /** The weekdays that `At <time>[, <days>]` names. */
  function daysIn(description: string): number[] {
    const days = /^At [\d:]+(?:, (.+))?$/.exec(description)![1];
    if (days === undefined) return [0, 1, 2, 3, 4, 5, 6];
    const range = /^(\w+) through (\w+)$/.exec(days);
    if (range !== null) {
      const [from, to] = [weekdayNames.indexOf(range[1]!), weekdayNames.indexOf(range[2]!)];
      return Array.from({ length: ((to - from + 7) % 7) + 1 }, (_, step) => (from + step) % 7).sort();
    }
    return days
      .replace(/^only on /, '')
      .split(/, and |, | and /)
      .map((name) => weekdayNames.indexOf(name))
      .sort();
  }

  it.each([
    ['0 0 * * 0-6', 'At 00:00, Sunday through Saturday'],
    ['0 0 * * 0-7', 'At 00:00'],
    ['0 0 * * 1-7', 'At 00:00, Monday through Sunday'],
    ['0 0 * * SUN-SAT', 'At 00:00, Sunday through Saturday'],
    ['0 0 * * mon-sun', 'At 00:00, Monday through Sunday'],
    ['0 0 * * sun-sun', 'At 00:00'],
    [
      '0 0 * * 0,1,2,3,4,5,6',
      'At 00:00, only on Sunday, Monday, Tuesday, Wednesday, Thursday, Friday, and Saturday',
    ],
    [
      '0 0 * * 6,5,4,3,2,1,7',
      'At 00:00, only on Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, and Sunday',
    ],
    ['0 0 * * *', 'At 00:00'],
    ['0 0 * * 1-5', 'At 00:00, Monday through Friday'],
    ['0 0 * * 5-7', 'At 00:00, Friday through Sunday'],
    ['0 0 * * fri-sun', 'At 00:00, Friday through Sunday'],
    ['0 0 * * sat-sun', 'At 00:00, Saturday through Sunday'],
    ['0 0 * * 0-1', 'At 00:00, Sunday through Monday'],
    ['0 0 * * sun,sat', 'At 00:00, only on Sunday and Saturday'],
  ])('%s: %s, the days croner fires on', (schedule, description) => {
    expect(describeSchedule(schedule)).toBe(description);
    const fires = new Cron(schedule, { timezone: 'UTC', paused: true }).nextRuns(
      21,
      new Date('2026-01-05T12:00:00Z'),
    );
    expect([...new Set(fires.map((fire) => fire.getUTCDay()))].sort()).toEqual(daysIn(description));
  });

  it('is undefined for what is no cron expression', () => {
    for (const schedule of ['', 'every day', '* * *', '60 * * * *', '0 24 * * *', '0 0 32 * *', '0 0 1 13 *'])
      expect(describeSchedule(schedule), schedule).toBeUndefined();
  });
});
