// `scheme://user:password@` -> `scheme://user:[redacted]@` (also `redis://:password@`).
const urlCredentials = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s:/@]*):([^\s@/]+)@/gi;

/** `text` with the password of every URL in it replaced, for logs and the run ledger. */
export function redactCredentials(text: string): string {
  return text.includes('://') ? text.replace(urlCredentials, '$1$2:[redacted]@') : text;
}

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
