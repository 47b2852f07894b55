import { InvalidOptionError } from '../../pipeline/errors.ts';
import { InvalidKeyError, StoreSetupError, StoreUnavailableError } from '../../strategies/lock/errors.ts';
import { storeKeyByteLimit } from '../../strategies/lock/store.ts';
import { redactCredentials } from '../credentials.ts';

/** What mysql2 puts on an error: the server's `errno` and `sqlState` only on errors the server sent. */
interface MysqlErrorFields {
  code?: unknown;
  errno?: unknown;
  sqlState?: unknown;
  message?: unknown;
}

/** ER_NO_SUCH_TABLE: a table of the store is not there (dropped since set-up, or never created). */
export function isMissingTable(error: unknown): boolean {
  return (error as MysqlErrorFields | null | undefined)?.errno === 1146;
}

/**
 * A transaction that lost to another one's row lock: chosen as a deadlock's victim
 * (ER_LOCK_DEADLOCK, InnoDB rolled it back), or it waited longer than `innodb_lock_wait_timeout`
 * (ER_LOCK_WAIT_TIMEOUT, the statement was rolled back). The store is busy, not down: the
 * transaction may be run again.
 */
export function isLockContention(error: unknown): boolean {
  const errno = (error as MysqlErrorFields | null | undefined)?.errno;
  return errno === 1213 || errno === 1205;
}

/** True for an error the server sent (as opposed to a lost or refused connection). */
export function isServerError(error: unknown): boolean {
  return typeof (error as MysqlErrorFields | null | undefined)?.sqlState === 'string';
}

/** What to do about each permanent set-up failure, by the server's error number. */
function setupAdvice(errno: unknown, createTable: boolean): string | undefined {
  switch (errno) {
    case 1046: // ER_NO_DB_ERROR
      return 'The pool has no database: give it one (the `database` option of createPool).';
    case 1049: // ER_BAD_DB_ERROR
      return "The pool's database does not exist: create it (CREATE DATABASE), or give the pool one that exists.";
    case 1044: // ER_DBACCESS_DENIED_ERROR
    case 1142: // ER_TABLEACCESS_DENIED_ERROR
      return createTable
        ? "The database user may not set the store up: grant it CREATE on the database and SELECT, INSERT, UPDATE, DELETE on the store's tables, or create them with mysqlLockStoreSql() and set createTable: false."
        : "The database user may not use the store's tables: grant it SELECT, INSERT, UPDATE, DELETE on them.";
    case 1146: // ER_NO_SUCH_TABLE
      return createTable
        ? "The store's tables are missing and could not be created."
        : 'The tables are missing: create them with the SQL from mysqlLockStoreSql(), or set createTable: true.';
    default:
      return undefined;
  }
}

/**
 * What a store operation failed with, as the lock sees it. A permanent set-up problem (no
 * database, a missing privilege, tables missing that the store may not create) is
 * `StoreSetupError`, with what to do; anything else is `StoreUnavailableError`: the lock fails
 * closed until the database answers again. The message keeps the error's code and (redacted)
 * message; only errors the server sent are kept as `cause`, because a client-side error may carry
 * connection settings in its properties.
 */
export function storeError(
  operation: string,
  error: unknown,
  createTable: boolean,
): StoreUnavailableError | StoreSetupError {
  const fields = (typeof error === 'object' && error !== null ? error : {}) as MysqlErrorFields;
  const code = typeof fields.code === 'string' ? fields.code : undefined;
  const message = redactCredentials(
    typeof fields.message === 'string' && fields.message !== '' ? fields.message : String(error),
  );
  const options = isServerError(error) ? { cause: error } : undefined;
  const text = `MySQL lock store: ${operation} failed: ${message}${code ? ` (${code})` : ''}.`;
  const advice = setupAdvice(fields.errno, createTable);
  return advice === undefined
    ? new StoreUnavailableError(text, options)
    : new StoreSetupError(`${text} ${advice}`, options);
}

/** With the `u` flag a pair is one code point: only a surrogate on its own matches. */
const loneSurrogate = /\p{Cs}/u;

/**
 * A key, job name or fenced resource as the tables keep it: at most {@link storeKeyByteLimit}
 * bytes of UTF-8 (the store's prefix comes on top), and well-formed (a lone surrogate has no UTF-8
 * form, so it could not be read back as it was given). Otherwise `InvalidKeyError`: refused before
 * the database, not taken for an outage.
 */
export function checkStoredKey(option: string, value: unknown): string {
  const refuse = (reason: string) => new InvalidKeyError('MysqlLockStore', option, value, reason);
  if (typeof value !== 'string') throw new InvalidOptionError(option, value, 'a string');
  if (loneSurrogate.test(value)) throw refuse('it holds a lone surrogate, which UTF-8 cannot encode');
  // A UTF-16 code unit is at most 3 bytes of UTF-8: a short key needs no counting.
  const bytes = value.length * 3 <= storeKeyByteLimit ? 0 : Buffer.byteLength(value);
  if (bytes > storeKeyByteLimit) {
    throw refuse(`it is ${bytes} bytes of UTF-8; the limit is ${storeKeyByteLimit}`);
  }
  return value;
}
