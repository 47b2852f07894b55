import { InvalidOptionError } from '../../pipeline/errors.ts';
import { InvalidKeyError, StoreUnavailableError } from '../../strategies/lock/errors.ts';
import { storeKeyByteLimit } from '../../strategies/lock/store.ts';
import { redactCredentials } from '../credentials.ts';

interface PgErrorFields {
  code?: unknown;
  severity?: unknown;
  message?: unknown;
}

/**
 * Wraps whatever a store operation failed with in `StoreUnavailableError`: the lock fails closed.
 * The message keeps the error's code and (redacted) message; only errors the server sent (which
 * never contain the client's password) are kept as `cause`, because a client-side error may carry
 * the connection string in its properties.
 */
export function storeUnavailable(operation: string, error: unknown): StoreUnavailableError {
  const fields = (typeof error === 'object' && error !== null ? error : {}) as PgErrorFields;
  const code = typeof fields.code === 'string' ? fields.code : undefined;
  const message = redactCredentials(
    typeof fields.message === 'string' && fields.message !== '' ? fields.message : String(error),
  );
  const fromServer = typeof fields.severity === 'string';
  let hint = '';
  if (code === '42P01') {
    hint =
      ' The table is missing: create it with the SQL from postgresLockStoreSql(), or set createTable: true.';
  }
  return new StoreUnavailableError(
    `PostgreSQL lock store: ${operation} failed: ${message}${code ? ` (${code})` : ''}.${hint}`,
    fromServer ? { cause: error } : undefined,
  );
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
  const bytes = Buffer.byteLength(value);
  if (bytes > storeKeyByteLimit) {
    throw refuse(`it is ${bytes} bytes of UTF-8; the limit is ${storeKeyByteLimit}`);
  }
  return value;
}
