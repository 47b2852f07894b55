/**
 * Cron in words, for the shapes most schedules take: `every 10 seconds`, `every 5 minutes`,
 * `every hour at :15`, `every day at 02:00`, `every Monday to Friday at 09:30`,
 * `every month on the 1st at 00:00`, `every year on January 1 at 00:00`. Anything else (lists of
 * hours, `L`, `W`, `#`, a day of month together with a day of week, which cron ORs) gets no
 * description: the dashboard then shows the expression alone. croner has no describer of its own.
 * The words are the schedule's, not a timezone's: the dashboard shows the job's timezone beside them.
 */

const weekdays = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const weekdayNames = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const months = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const monthNames = months.map((month) => month.slice(0, 3).toLowerCase());

/** croner's nicknames, as the patterns they stand for. */
const nicknames: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const isWildcard = (field: string) => field === '*' || field === '?';

/** A whole number in `[min, max]`, else undefined. */
function numberIn(field: string, min: number, max: number): number | undefined {
  if (!/^\d{1,2}$/.test(field)) return undefined;
  const value = Number(field);
  return value >= min && value <= max ? value : undefined;
}

/** `*\/N` with N in `[1, max]`: the N. */
function stepOf(field: string, max: number): number | undefined {
  const match = /^[*?]\/(\d{1,2})$/.exec(field);
  return match === null ? undefined : numberIn(match[1]!, 1, max);
}

/** A weekday number or name: 0 for Sunday (7 too), else undefined. */
function weekdayOf(field: string): number | undefined {
  const named = weekdayNames.indexOf(field.toLowerCase());
  if (named !== -1) return named;
  const value = numberIn(field, 0, 7);
  return value === undefined ? undefined : value % 7;
}

function monthOf(field: string): number | undefined {
  const named = monthNames.indexOf(field.toLowerCase());
  if (named !== -1) return named;
  const value = numberIn(field, 1, 12);
  return value === undefined ? undefined : value - 1;
}

/** `Monday`, `Monday and Friday`, `Monday, Wednesday and Friday`. */
function joinWords(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

/**
 * The day-of-week field in words: `Monday`, `Monday to Friday`, `Saturday and Sunday`; `day` when
 * it names all seven (`0-6`, `1-7`, `mon-sun`, a list of all), so the schedule reads `every day`.
 */
function describeWeekdays(field: string): string | undefined {
  const range = /^(\w+)-(\w+)$/.exec(field);
  if (range !== null) {
    // 7 is Sunday after Saturday; so is Sunday's name at the end of a range, as croner reads it.
    const from = range[1] === '7' ? 7 : weekdayOf(range[1]!);
    const end = weekdayOf(range[2]!);
    const to = end === 0 && range[2] !== '0' ? 7 : end;
    if (from === undefined || to === undefined || to <= from) return undefined;
    if (to - from >= 6) return 'day';
    return `${weekdays[from]} to ${weekdays[to % 7]}`;
  }
  const days = field.split(',').map(weekdayOf);
  if (days.some((day) => day === undefined) || new Set(days).size !== days.length) return undefined;
  if (days.length === 7) return 'day';
  // Monday first, Sunday last, as a week is read.
  const ordered = (days as number[]).sort((a, b) => ((a + 6) % 7) - ((b + 6) % 7));
  return joinWords(ordered.map((day) => weekdays[day]!));
}

/** `1st`, `2nd`, `3rd`, `11th`, `22nd`. */
function ordinal(day: number): string {
  const tens = day % 100;
  if (tens >= 11 && tens <= 13) return `${day}th`;
  return `${day}${['th', 'st', 'nd', 'rd'][day % 10] ?? 'th'}`;
}

const twoDigits = (value: number) => String(value).padStart(2, '0');

/**
 * The schedule in words, or `undefined` when it has none of the common shapes (see the module's
 * comment). Accepts what croner accepts: five fields, six with seconds first, seven with a year
 * last (only `*` is described), and the nicknames `@daily`, `@hourly`, ...
 *
 * @example describeSchedule('0 2 * * *') // 'every day at 02:00'
 * @example describeSchedule('*\/10 * * * * *') // 'every 10 seconds'
 */
export function describeSchedule(schedule: string): string | undefined {
  const expression = nicknames[schedule.trim().toLowerCase()] ?? schedule.trim();
  const fields = expression.split(/\s+/);
  if (fields.length === 7) {
    if (!isWildcard(fields[6]!)) return undefined;
    fields.pop();
  }
  if (fields.length === 5) fields.unshift('0');
  if (fields.length !== 6) return undefined;
  const [secondField, minuteField, hourField, dayField, monthField, weekdayField] = fields as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const everyDay = isWildcard(dayField) && isWildcard(monthField) && isWildcard(weekdayField);

  if (everyDay && isWildcard(hourField) && isWildcard(minuteField)) {
    if (isWildcard(secondField)) return 'every second';
    const secondStep = stepOf(secondField, 59);
    if (secondStep !== undefined) return secondStep === 1 ? 'every second' : `every ${secondStep} seconds`;
  }
  const second = numberIn(secondField, 0, 59);
  if (second === undefined) return undefined;
  const atSecond = second === 0 ? '' : `, at second ${second}`;

  if (everyDay && isWildcard(hourField)) {
    if (isWildcard(minuteField)) return `every minute${atSecond}`;
    const minuteStep = stepOf(minuteField, 59);
    if (minuteStep !== undefined) {
      return `${minuteStep === 1 ? 'every minute' : `every ${minuteStep} minutes`}${atSecond}`;
    }
  }
  const minute = numberIn(minuteField, 0, 59);
  if (minute === undefined) return undefined;
  const pastTheHour = `:${twoDigits(minute)}${second === 0 ? '' : `:${twoDigits(second)}`}`;

  if (everyDay) {
    if (isWildcard(hourField)) return `every hour at ${pastTheHour}`;
    const hourStep = stepOf(hourField, 23);
    if (hourStep !== undefined) {
      return `${hourStep === 1 ? 'every hour' : `every ${hourStep} hours`} at ${pastTheHour}`;
    }
  }
  const hour = numberIn(hourField, 0, 23);
  if (hour === undefined) return undefined;
  const time = `${twoDigits(hour)}${pastTheHour}`;

  if (everyDay) return `every day at ${time}`;
  if (isWildcard(dayField) && isWildcard(monthField)) {
    const days = describeWeekdays(weekdayField);
    return days === undefined ? undefined : `every ${days} at ${time}`;
  }
  if (!isWildcard(weekdayField)) return undefined;
  const day = dayField.toUpperCase() === 'L' ? 'L' : numberIn(dayField, 1, 31);
  if (day === undefined) return undefined;
  if (isWildcard(monthField)) {
    return `every month on the ${day === 'L' ? 'last day' : ordinal(day)} at ${time}`;
  }
  const month = monthOf(monthField);
  if (month === undefined) return undefined;
  const date = day === 'L' ? `the last day of ${months[month]}` : `${months[month]} ${day}`;
  return `every year on ${date} at ${time}`;
}
