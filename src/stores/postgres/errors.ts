import { StoreUnavailableError } from '../../strategies/lock/errors.ts';
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
