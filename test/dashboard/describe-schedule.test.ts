import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';
import { describeSchedule } from '../../src/cli/dashboard/describe-schedule.ts';

describe('describeSchedule', () => {
  it.each([
    // seconds
    ['* * * * * *', 'every second'],
    ['*/1 * * * * *', 'every second'],
    ['*/10 * * * * *', 'every 10 seconds'],
    ['15 * * * * *', 'every minute, at second 15'],
    // minutes and hours
    ['* * * * *', 'every minute'],
    ['0 * * * * *', 'every minute'],
    ['*/5 * * * *', 'every 5 minutes'],
    ['30 */5 * * * *', 'every 5 minutes, at second 30'],
    ['0 * * * *', 'every hour at :00'],
    ['15 * * * *', 'every hour at :15'],
    ['10 15 * * * *', 'every hour at :15:10'],
    ['0 */6 * * *', 'every 6 hours at :00'],
    ['? * * * *', 'every minute'],
    // days
    ['0 2 * * *', 'every day at 02:00'],
    ['30 14 * * ?', 'every day at 14:30'],
    ['5 30 2 * * *', 'every day at 02:30:05'],
    ['30 6 * * 1', 'every Monday at 06:30'],
    ['0 9 * * 1-5', 'every Monday to Friday at 09:00'],
    ['0 9 * * MON-FRI', 'every Monday to Friday at 09:00'],
    ['0 10 * * 5-7', 'every Friday to Sunday at 10:00'],
    ['0 8 * * 0', 'every Sunday at 08:00'],
    ['0 8 * * 7', 'every Sunday at 08:00'],
    ['0 8 * * sun,sat', 'every Saturday and Sunday at 08:00'],
    ['0 12 * * 5,1,3', 'every Monday, Wednesday and Friday at 12:00'],
    // months and years
    ['0 0 1 * *', 'every month on the 1st at 00:00'],
    ['0 3 22 * *', 'every month on the 22nd at 03:00'],
    ['0 3 13 * *', 'every month on the 13th at 03:00'],
    ['0 23 L * *', 'every month on the last day at 23:00'],
    ['0 0 1 1 *', 'every year on January 1 at 00:00'],
    ['0 6 24 DEC *', 'every year on December 24 at 06:00'],
    ['0 6 L feb *', 'every year on the last day of February at 06:00'],
    ['0 0 2 * * * *', 'every day at 02:00'],
    ['0 0 31 2 *', 'every year on February 31 at 00:00'], // croner accepts it; it never comes
    // nicknames
    ['@daily', 'every day at 00:00'],
    ['@hourly', 'every hour at :00'],
    ['@weekly', 'every Sunday at 00:00'],
    ['@monthly', 'every month on the 1st at 00:00'],
    ['@yearly', 'every year on January 1 at 00:00'],
  ])('%s: %s', (schedule, description) => {
    new Cron(schedule, { paused: true }); // a schedule croner accepts
    expect(describeSchedule(schedule)).toBe(description);
  });

  it.each([
    ['0 9,17 * * *', 'a list of hours'],
    ['0 9-17 * * *', 'a range of hours'],
    ['0 0 1 * MON', 'a day of month and a day of week (cron ORs them)'],
    ['0 0 * * 5#2', 'the nth weekday'],
    ['0 0 15W * *', 'the nearest weekday'],
    ['0 0 * * 1-3,5', 'a list with a range of weekdays'],
    ['0 0 0 1 1 * 2030', 'a year'],
    ['0 0 * * 1,1', 'a repeated weekday'],
    ['0 0 * * 7-7', 'a range of one day'],
    ['*/7 9 * * *', 'a step in one hour'],
  ])('%s (%s): no description, the page shows the expression', (schedule) => {
    new Cron(schedule, { paused: true });
    expect(describeSchedule(schedule)).toBeUndefined();
  });

  const weekdayNames = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
  /** The weekdays that `every <days> at ...` names. */
  function daysIn(description: string): number[] {
    const days = /^every (.+) at /.exec(description)![1]!;
    if (days === 'day') return [0, 1, 2, 3, 4, 5, 6];
    const range = /^(\w+) to (\w+)$/.exec(days);
    if (range !== null) {
      const [from, to] = [weekdayNames.indexOf(range[1]!), weekdayNames.indexOf(range[2]!)];
      return Array.from({ length: ((to - from + 7) % 7) + 1 }, (_, step) => (from + step) % 7).sort();
    }
    return days
      .split(/, | and /)
      .map((name) => weekdayNames.indexOf(name))
      .sort();
  }

  it.each([
    ['0 0 * * 0-6', 'every day at 00:00'],
    ['0 0 * * 0-7', 'every day at 00:00'],
    ['0 0 * * 1-7', 'every day at 00:00'],
    ['0 0 * * SUN-SAT', 'every day at 00:00'],
    ['0 0 * * mon-sun', 'every day at 00:00'],
    ['0 0 * * sun-sun', 'every day at 00:00'],
    ['0 0 * * 0,1,2,3,4,5,6', 'every day at 00:00'],
    ['0 0 * * 6,5,4,3,2,1,7', 'every day at 00:00'],
    ['0 0 * * *', 'every day at 00:00'],
    ['0 0 * * 1-5', 'every Monday to Friday at 00:00'],
    ['0 0 * * 5-7', 'every Friday to Sunday at 00:00'],
    ['0 0 * * fri-sun', 'every Friday to Sunday at 00:00'],
    ['0 0 * * sat-sun', 'every Saturday to Sunday at 00:00'],
    ['0 0 * * 0-1', 'every Sunday to Monday at 00:00'],
    ['0 0 * * sun,sat', 'every Saturday and Sunday at 00:00'],
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
