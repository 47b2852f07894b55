import { InvalidOptionError } from '../../pipeline/errors.ts';
import { InvalidKeyError, StoreSetupError, StoreUnavailableError } from '../../strategies/lock/errors.ts';
import { storeKeyByteLimit } from '../../strategies/lock/store.ts';
import { redactCredentials } from '../credentials.ts';

interface PgErrorFields {
  code?: unknown;
  severity?: unknown;
  message?: unknown;
}

/** SQLSTATEs of a schema, table or function that is not there. */
const missingObjectCodes = new Set(['42P01', '42883']);

/**
 * True when `error` says a table or function of the store is missing (undefined_table 42P01,
 * undefined_function 42883): dropped since the store set them up, or never created.
 */
export function isMissingObject(error: unknown): boolean {
  return missingObjectCodes.has((error as { code?: unknown } | null | undefined)?.code as string);
}

/** What to do about each permanent set-up failure, by SQLSTATE. */
function setupAdvice(code: string | undefined, createTable: boolean): string | undefined {
  switch (code) {
    case '3F000':
      return "The store's schema does not exist: create it (CREATE SCHEMA), or give the store a schema that exists.";
    case '42501':
      return createTable
        ? "The database user may not set the store up: grant it USAGE and CREATE on the schema and SELECT, INSERT, UPDATE, DELETE on the store's tables, or create them with postgresLockStoreSql() as their owner and set createTable: false."
        : "The database user may not use the store's tables: grant it USAGE on the schema and SELECT, INSERT, UPDATE, DELETE on them.";
    case '42P01':
    case '42883':
      return createTable
        ? "The store's tables or functions are missing and could not be created."
        : 'The tables are missing: create them with the SQL from postgresLockStoreSql(), or set createTable: true.';
    default:
      return undefined;
  }
}

/**
 * What a store operation failed with, as the lock sees it. A permanent set-up problem (a missing
 * schema, a missing privilege, tables missing that the store may not create) is
 * `StoreSetupError`, with what to do; anything else is `StoreUnavailableError`: the lock fails
 * closed until the database answers again. The message keeps the error's code and (redacted)
 * message; only errors the server sent (which never contain the client's password) are kept as
 * `cause`, because a client-side error may carry the connection string in its properties.
 */
export function storeError(
  operation: string,
  error: unknown,
  createTable: boolean,
): StoreUnavailableError | StoreSetupError {
  const fields = (typeof error === 'object' && error !== null ? error : {}) as PgErrorFields;
  const code = typeof fields.code === 'string' ? fields.code : undefined;
  const message = redactCredentials(
    typeof fields.message === 'string' && fields.message !== '' ? fields.message : String(error),
  );
  const options = typeof fields.severity === 'string' ? { cause: error } : undefined;
  const text = `PostgreSQL lock store: ${operation} failed: ${message}${code ? ` (${code})` : ''}.`;
  const advice = setupAdvice(code, createTable);
  return advice === undefined
    ? new StoreUnavailableError(text, options)
    : new StoreSetupError(`${text} ${advice}`, options);
}

/**
 * A key, job name or fenced resource as the tables keep it: text without NUL (PostgreSQL's text
 * cannot hold one), at most {@link storeKeyByteLimit} bytes of UTF-8 (an index row's limit).
 * Otherwise `InvalidKeyError`: refused before the database, not taken for an outage.
 */
export function checkStoredKey(option: string, value: unknown): string {
  const refuse = (reason: string) => new InvalidKeyError('PostgresLockStore', option, value, reason);
  if (typeof value !== 'string') throw new InvalidOptionError(option, value, 'a string');
  if (value.includes('\u0000'))
    throw refuse('it contains a NUL character, which PostgreSQL text cannot hold');
  // A UTF-16 code unit is at most 3 bytes of UTF-8: a short key needs no counting.
  const bytes = value.length * 3 <= storeKeyByteLimit ? 0 : Buffer.byteLength(value);
  if (bytes > storeKeyByteLimit) {
    throw refuse(`it is ${bytes} bytes of UTF-8; the limit is ${storeKeyByteLimit}`);
  }
  return value;
}
