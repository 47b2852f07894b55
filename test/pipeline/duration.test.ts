import { formatDuration, InvalidOptionError, parseDuration } from 'resil';
import { describe, expect, it } from 'vitest';

describe('parseDuration', () => {
  it.each([
    [250, 250],
    [0, 0],
    [1.5, 1.5],
    ['250ms', 250],
    ['30s', 30_000],
    ['1.5s', 1_500],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    [' 10 s ', 10_000],
  ])('reads %j as %d ms', (value, ms) => {
    expect(parseDuration(value, 'x')).toBe(ms);
  });

  it.each([
    -1,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    '',
    '250',
    '10 seconds',
    '-5s',
    '5S',
    'abc',
    null,
    undefined,
    true,
    {},
  ])('rejects %j, naming the option and the value', (value) => {
    const error = (() => {
      try {
        parseDuration(value, 'retry.delay');
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect((error as InvalidOptionError).option).toBe('retry.delay');
    expect((error as InvalidOptionError).value).toBe(value);
    expect((error as Error).message).toMatch(/^Invalid option retry\.delay: expected a duration/);
  });

  it('quotes a bad string value in the message', () => {
    expect(() => parseDuration('10 seconds', 'timeout.timeout')).toThrow(
      `Invalid option timeout.timeout: expected a duration: milliseconds (>= 0) or a string such as '250ms', '30s', '5m', '1h', got "10 seconds".`,
    );
  });

  it('checks a range, naming it in readable units', () => {
    expect(parseDuration('1d', 'timeout.timeout', 10, 86_400_000)).toBe(86_400_000);
    expect(() => parseDuration(5, 'timeout.timeout', 10, 86_400_000)).toThrow(
      'Invalid option timeout.timeout: expected a duration from 10ms to 1d, got 5.',
    );
    expect(() => parseDuration('2d', 'timeout.timeout', 10, 86_400_000)).toThrow(/from 10ms to 1d, got "2d"/);
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0ms'],
    [250, '250ms'],
    [1_500, '1500ms'],
    [30_000, '30s'],
    [300_000, '5m'],
    [3_600_000, '1h'],
    [86_400_000, '1d'],
  ])('renders %d as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
