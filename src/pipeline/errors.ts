const brand = Symbol.for('resil.error');

/**
 * Base class of every error resil raises. `code` is stable across versions; match on it
 * (or use the `isX` guards), not on the message.
 */
export abstract class ResilienceError extends Error {
  abstract readonly code: string;
  /** @internal Marks resil errors so guards work across duplicated copies of the package. */
  readonly [brand] = true;

  /** True when the callback never ran (the strategy rejected the execution up front). */
  isRejection(): boolean {
    return false;
  }
}

/** True for any error raised by resil, even from another copy of the package. */
export function isResilienceError(error: unknown): error is ResilienceError {
  return typeof error === 'object' && error !== null && (error as { [brand]?: unknown })[brand] === true;
}

/** True exactly for errors that mean the callback never ran (lock not acquired, circuit open, ...). */
export function isRejection(error: unknown): boolean {
  return isResilienceError(error) && error.isRejection();
}

/** Makes a brand-based guard for the resil error with `code`. */
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
