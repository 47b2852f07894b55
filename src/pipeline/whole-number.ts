import { InvalidOptionError } from './errors.ts';

/** Returns `value` when it is a whole number >= `min`; otherwise throws `InvalidOptionError` naming `option`. */
export function wholeNumber(
  value: unknown,
  option: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max) return value;
  throw new InvalidOptionError(
    option,
    value,
    max === Number.MAX_SAFE_INTEGER ? `a whole number >= ${min}` : `a whole number from ${min} to ${max}`,
  );
}
