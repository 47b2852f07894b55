import { InvalidOptionError } from './errors.ts';

export type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

/** Milliseconds as a number, or a string such as `'250ms'`, `'30s'`, `'5m'`, `'1h'`, `'1d'`. */
export type Duration = number | `${number}${DurationUnit}`;

const unitMs: Record<DurationUnit, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const durationPattern = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;
const expectedDuration = "a duration: milliseconds (>= 0) or a string such as '250ms', '30s', '5m', '1h'";

/**
 * Converts a {@link Duration} to milliseconds. Throws `InvalidOptionError` naming `option`
 * and the value when it is not a finite, non-negative duration.
 */
export function parseDuration(value: unknown, option: string): number {
  if (typeof value === 'number') {
    if (Number.isFinite(value) && value >= 0) return value;
    throw new InvalidOptionError(option, value, expectedDuration);
  }
  if (typeof value === 'string') {
    const match = durationPattern.exec(value);
    if (match) return Number(match[1]) * unitMs[match[2] as DurationUnit];
  }
  throw new InvalidOptionError(option, value, expectedDuration);
}

/** {@link parseDuration}, then checks `min <= ms <= max`. */
export function parseDurationInRange(value: unknown, option: string, min: number, max: number): number {
  const ms = parseDuration(value, option);
  if (ms < min || ms > max) {
    throw new InvalidOptionError(
      option,
      value,
      `a duration from ${formatDuration(min)} to ${formatDuration(max)}`,
    );
  }
  return ms;
}

/** Renders milliseconds in the largest unit that divides them: `30s`, `250ms`, `1h`. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms >= unitMs[unit] && ms % unitMs[unit] === 0) return `${ms / unitMs[unit]}${unit}`;
  }
  return `${ms}ms`;
}
