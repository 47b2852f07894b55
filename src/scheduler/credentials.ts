import { redactCredentials } from '../stores/credentials.ts';

export { redactCredentials };

/** A one-line description of `error` that is safe to store and log: no URL passwords, bounded length. */
export function describeError(error: unknown, maxLength = 500): string {
  const text =
    error instanceof Error
      ? `${error.name}: ${error.message}`
      : typeof error === 'string'
        ? error
        : String(error);
  const safe = redactCredentials(text);
  return safe.length > maxLength ? `${safe.slice(0, maxLength - 1)}…` : safe;
}
