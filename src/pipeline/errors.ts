/**
 * Marks resil errors. A registered symbol, so errors from another copy of the package (two
 * versions in node_modules, a bundled copy) still pass the guards where `instanceof` fails.
 */
const brand = /* @__PURE__ */ Symbol.for('resil.error');

/**
 * Base class of every error resil raises. `code` is stable across versions; match on it
 * (or use the `isX` guards, which work across copies of the package), not on the message.
 *
 * @example
 * if (isResilienceError(error) && error.code === 'TIMEOUT') { ... }
 */
export abstract class ResilienceError extends Error {
  abstract readonly code: string;

  /** True when the callback never ran (the strategy rejected the execution up front). */
  isRejection(): boolean {
    return false;
  }

  // A prototype getter rather than an instance field: no per-error cost and no noise in util.inspect().
  /** @internal */
  get [brand](): true {
    return true;
  }
}

/** True for any error raised by resil, even from another copy of the package. */
export function isResilienceError(error: unknown): error is ResilienceError {
  return (
    (error as { [brand]?: unknown } | undefined)?.[brand] === true &&
    typeof (error as { code?: unknown }).code === 'string'
  );
}

/**
 * True exactly for errors that mean the callback never ran (lock not acquired, circuit open, ...),
 * so a caller knows it is safe to run the work some other way.
 */
export function isRejection(error: unknown): boolean {
  return isResilienceError(error) && typeof error.isRejection === 'function' && error.isRejection() === true;
}

/**
 * Makes a brand-based guard for the resil error with `code`: true for that error from any copy of
 * the package.
 *
 * @example
 * export const isTimeoutRejectedError = errorGuard<TimeoutRejectedError>('TIMEOUT');
 */
export function errorGuard<E extends ResilienceError>(code: E['code']): (error: unknown) => error is E {
  return (error): error is E => isResilienceError(error) && error.code === code;
}

/** An option failed validation (at `build()` or config load). Names the option and the value. */
export class InvalidOptionError extends ResilienceError {
  readonly code = 'INVALID_OPTION';
  declare readonly option: string;
  declare readonly value: unknown;
  declare readonly expected: string;
  constructor(option: string, value: unknown, expected: string) {
    super(`Invalid option ${option}: expected ${expected}, got ${describeValue(value)}.`);
    this.name = 'InvalidOptionError';
    this.option = option;
    this.value = value;
    this.expected = expected;
  }
}

export const isInvalidOptionError = /* @__PURE__ */ errorGuard<InvalidOptionError>('INVALID_OPTION');

/**
 * The one option check: throws `InvalidOptionError(option, value, expected)` unless `valid`.
 *
 * @example
 * checkOption('retry.useJitter', useJitter, typeof useJitter === 'boolean', 'true or false');
 */
export function checkOption(option: string, value: unknown, valid: boolean, expected: string): void {
  if (!valid) throw new InvalidOptionError(option, value, expected);
}

/** Checks that `value` is a function or absent, naming it `option`. */
export function checkFunction(option: string, value: unknown): void {
  checkOption(option, value, value === undefined || typeof value === 'function', 'a function');
}

/** Checks that each of `names` is a function or absent in `options`, naming it `${prefix}.${name}`. */
export function checkCallbacks<O extends object>(
  options: O,
  prefix: string,
  names: readonly (keyof O & string)[],
): void {
  for (const name of names) checkFunction(`${prefix}.${name}`, options[name]);
}

/** A short, safe rendering of a user value for error messages. */
export function describeValue(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  try {
    // Numbers, booleans, undefined, symbols as String() renders them (NaN and Infinity included).
    const text =
      typeof value === 'string' || typeof value === 'object' ? JSON.stringify(value) : String(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    // Cyclic, or a toJSON() that throws or returns nothing.
    return Object.prototype.toString.call(value);
  }
}
