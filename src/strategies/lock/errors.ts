import { describeValue, errorGuard, ResilienceError } from '../../pipeline/errors.ts';

/** The lock stayed held elsewhere for longer than `wait`. A rejection: the callback never ran. */
export class LockNotAcquiredError extends ResilienceError {
  readonly code = 'LOCK_NOT_ACQUIRED';
  constructor(readonly key: string) {
    super(`Lock "${key}" is held by another owner.`);
    this.name = 'LockNotAcquiredError';
  }
  override isRejection(): boolean {
    return true;
  }
}

/** The lease was lost while the callback ran. Also the abort reason of the callback's signal. */
export class LockLostError extends ResilienceError {
  readonly code = 'LOCK_LOST';
  constructor(
    readonly key: string,
    /** `cause`: what the callback failed with after the loss, when that was not this error itself. */
    options?: { cause?: unknown },
  ) {
    super(`Lock "${key}" was lost while the callback ran.`, options);
    this.name = 'LockLostError';
  }
}

/** A write carried a fencing token lower than one the resource has already seen; nothing was written. */
export class StaleTokenError extends ResilienceError {
  readonly code = 'STALE_TOKEN';
  constructor(
    readonly resource: string,
    readonly token: number,
    /** The highest token seen for `resource`, when the store reports it. */
    readonly highestToken?: number,
  ) {
    super(
      `Stale fencing token ${token} for "${resource}"${highestToken === undefined ? '' : ` (highest seen: ${highestToken})`}: write refused.`,
    );
    this.name = 'StaleTokenError';
  }
}

/**
 * The lock store could not be reached (or did not answer in time). The lock fails closed: the
 * callback does not run. The message never contains connection credentials.
 */
export class StoreUnavailableError extends ResilienceError {
  readonly code = 'STORE_UNAVAILABLE';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
  override isRejection(): boolean {
    return true;
  }
}

/**
 * A key the store cannot keep: too long, or with a character it cannot store or that would make it
 * ambiguous. Permanent (the same key fails the same way every time), so it is refused, not taken
 * for an outage. `resil run` refuses such a job when it loads the config (`LockStore.checkKey`).
 */
export class InvalidKeyError extends ResilienceError {
  readonly code = 'INVALID_KEY';
  constructor(
    /** The store's class name: `PostgresLockStore`. */
    readonly store: string,
    /** What the key is to the store: `key`, `lease.key`, `job`, `resource`. */
    readonly option: string,
    readonly key: unknown,
    /** Why, with the store's limit: `it is 3000 bytes of UTF-8; the limit is 1000`. */
    readonly reason: string,
  ) {
    super(`${store} cannot keep the ${option} ${describeValue(key)}: ${reason}.`);
    this.name = 'InvalidKeyError';
  }
}

/**
 * The store answers but is not set up, and cannot set itself up: its schema is missing, its
 * database user lacks a privilege, or its tables are missing where it may not create them. Unlike
 * an outage ({@link StoreUnavailableError}) it lasts until someone acts on the message, which says
 * what to do. The lock fails closed: the callback does not run.
 */
export class StoreSetupError extends ResilienceError {
  readonly code = 'STORE_SETUP';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreSetupError';
  }
  override isRejection(): boolean {
    return true;
  }
}

export const isStoreSetupError = errorGuard<StoreSetupError>('STORE_SETUP');
export const isInvalidKeyError = errorGuard<InvalidKeyError>('INVALID_KEY');
export const isLockNotAcquiredError = errorGuard<LockNotAcquiredError>('LOCK_NOT_ACQUIRED');
export const isLockLostError = errorGuard<LockLostError>('LOCK_LOST');
export const isStaleTokenError = errorGuard<StaleTokenError>('STALE_TOKEN');
export const isStoreUnavailableError = errorGuard<StoreUnavailableError>('STORE_UNAVAILABLE');
