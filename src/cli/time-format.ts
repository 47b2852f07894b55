/**
 * How the commands and the dashboard page show times and spans. Nothing here imports a Node
 * module: the page's script (page-script.ts) is bundled for the browser with these functions.
 */

/** `3h 2m`, `45s`, `2d 4h`: the largest unit and the next one when it is not zero; `0s` under a second. */
export function formatSpan(ms: number): string {
  const units = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const;
  let rest = Math.floor(Math.abs(ms) / 1_000) * 1_000;
  const counts = units.map(([unit, size]) => {
    const count = Math.floor(rest / size);
    rest -= count * size;
    return [unit, count] as const;
  });
  const first = counts.findIndex(([, count]) => count > 0);
  if (first === -1) return '0s';
  return counts
    .slice(first, first + 2)
    .filter(([, count]) => count > 0)
    .map(([unit, count]) => `${count}${unit}`)
    .join(' ');
}

/** `in 3h 2m` for a future instant, `5m ago` for a past one. */
export function formatRelative(at: Date, now: number): string {
  const ms = at.getTime() - now;
  return ms >= 0 ? `in ${formatSpan(ms)}` : `${formatSpan(ms)} ago`;
}

/** `250ms`, `1.2s`, then `3m 2s`: a run's duration, where a second is coarse. */
export function formatElapsed(ms: number): string {
  if (ms < 1_000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`;
  return formatSpan(ms);
}

const zonedFormats = new Map<string, Intl.DateTimeFormat>();

/**
 * `2026-12-01 02:00:00 UTC` (or `... GMT+1`, `... EST`): the wall-clock time in the IANA zone
 * `timeZone`, with the zone's short name so that it is never mistaken for this machine's time.
 */
export function formatTimeIn(at: Date, timeZone: string): string {
  // UTC without Intl (its first use loads the timezone data, ~18 ms of a command's start); Intl
  // names every one of these four "UTC" too.
  if (timeZone === 'UTC' || timeZone === 'Etc/UTC' || timeZone === 'GMT' || timeZone === 'Etc/GMT') {
    const iso = at.toISOString();
    return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
  }
  let format = zonedFormats.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'short',
    });
    zonedFormats.set(timeZone, format);
  }
  const parts: Record<string, string> = {};
  for (const { type, value } of format.formatToParts(at)) parts[type] = value;
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${parts.timeZoneName}`;
}

/** The machine's IANA timezone, for jobs that do not name one. */
export function localTimezone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}
