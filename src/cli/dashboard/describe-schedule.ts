import { toString as describeCron } from 'cronstrue';

/** A weekday range from Sunday to Sunday: every day for croner, `Sunday through Sunday` for cronstrue. */
const sundayToSunday = /^(?:0|sun)-(?:7|sun)$/i;

/**
 * A cron schedule in words, by cronstrue (`Every 10 seconds`, `At 02:00`, `At 09:00, Monday through
 * Friday`, `At 00:00, on the last day of the month`), or `undefined` for what it cannot read: the
 * dashboard then shows the expression alone. The words are the schedule's, not a timezone's: the
 * dashboard shows the job's timezone beside them.
 *
 * Two shapes croner reads otherwise than cronstrue are given to it as croner means them: `?`, a
 * wildcard in every field for croner (cronstrue takes it in the day fields only), and a weekday
 * range from Sunday to Sunday (`0-7`, `sun-sun`).
 *
 * @example describeSchedule('0 2 * * *') // 'At 02:00'
 */
export function describeSchedule(schedule: string): string | undefined {
  const fields = schedule.trim().replaceAll('?', '*').split(/\s+/);
  const weekday = fields.length === 5 ? 4 : 5;
  if (sundayToSunday.test(fields[weekday] ?? '')) fields[weekday] = '*';
  try {
    return describeCron(fields.join(' '), { use24HourTimeFormat: true, throwExceptionOnParseError: true });
  } catch {
    return undefined;
  }
}
