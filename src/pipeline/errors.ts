/**
 * Marks resil errors. A registered symbol, so errors from another copy of the package (two
 * versions in node_modules, a bundled copy) still pass the guards where `instanceof` fails.
 */
const brand = Symbol.for('resil.error');

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
}

// On the prototype rather than each instance: no per-error cost and no noise in util.inspect().
Object.defineProperty(ResilienceError.prototype, brand, { value: true });

/** True for any error raised by resil, even from another copy of the package. */
export function isResilienceError(error: unknown): error is ResilienceError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { [brand]?: unknown })[brand] === true &&
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
  constructor(
    readonly option: string,
    readonly value: unknown,
    readonly expected: string,
  ) {
    super(`Invalid option ${option}: expected ${expected}, got ${describeValue(value)}.`);
    this.name = 'InvalidOptionError';
  }
}

export const isInvalidOptionError = errorGuard<InvalidOptionError>('INVALID_OPTION');

/** A short, safe rendering of a user value for error messages. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (value === null || typeof value !== 'object') return String(value);
  try {
    const text = JSON.stringify(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return Object.prototype.toString.call(value);
  }
}
