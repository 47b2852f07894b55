import { checkOption, InvalidOptionError } from './errors.ts';

export type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

/** Milliseconds as a number, or a string such as `'250ms'`, `'30s'`, `'5m'`, `'1h'`, `'1d'`. */
export type Duration = number | `${number}${DurationUnit}`;

// Largest first, for formatDuration.
const unitMs: Record<DurationUnit, number> = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

/**
 * Milliseconds of a {@link Duration}, or `NaN` when `value` is not a finite, non-negative
 * duration. Never throws: for values that fall back to a default when invalid.
 */
export function durationMs(value: unknown): number {
  const match = typeof value === 'string' && /^\s*(\d+(?:\.\d+)?)\s*(ms|[smhd])\s*$/.exec(value);
  if (match) return Number(match[1]) * unitMs[match[2] as DurationUnit];
  return typeof value === 'number' && value >= 0 && value < Infinity ? value : NaN;
}

/**
 * Converts a {@link Duration} to milliseconds. Throws `InvalidOptionError` naming `option`
 * and the value when it is not a finite, non-negative duration, or not within `min` to `max`.
 *
 * @example
 * parseDuration('30s', 'timeout.timeout'); // 30_000
 * parseDuration(options.delay, 'retry.delay', 0, 86_400_000);
 */
export function parseDuration(value: unknown, option: string, min = 0, max = Infinity): number {
  const ms = durationMs(value);
  checkOption(
    option,
    value,
    ms >= 0,
    "a duration: milliseconds (>= 0) or a string such as '250ms', '30s', '5m', '1h'",
  );
  if (ms < min || ms > max) {
    throw new InvalidOptionError(
      option,
      value,
      `a duration from ${formatDuration(min)} to ${formatDuration(max)}`,
    );
  }
  return ms;
}

/**
 * {@link parseDuration} for options that must be greater than 0 (a lock's ttl, a rate limiter's
 * window): a negative, malformed and zero value all fail with the same message, `a duration > 0`.
 *
 * @example
 * parsePositiveDuration(options.ttl, 'lock.ttl'); // 0 throws, as -1 and 'soon' do
 */
export function parsePositiveDuration(value: unknown, option: string): number {
  const ms = durationMs(value);
  checkOption(
    option,
    value,
    ms > 0,
    "a duration > 0: milliseconds or a string such as '250ms', '30s', '5m', '1h'",
  );
  return ms;
}

/** Renders milliseconds in the largest unit that divides them: `30s`, `250ms`, `1h`. */
export function formatDuration(ms: number): string {
  for (const unit in unitMs) {
    const size = unitMs[unit as DurationUnit];
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
