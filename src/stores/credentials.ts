/**
 * The one place that removes passwords from text resil logs, stores or throws: connection URLs
 * (`scheme://user:password@host`, also `redis://:password@host`) and libpq key/value strings
 * (`password=secret`, `password='se cret'`). The user name stays: it says which account failed.
 */

/** `scheme://user:` then the password, up to the last `@` before the host (a password may hold a raw `@`). */
const urlPassword = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/?#@]*:)[^\s/]+@/gi;
/** `password=...`, the value bare, single-quoted (with `\'` or `''` inside, as libpq reads it) or double-quoted. */
const keywordPassword = /\b(password\s*=\s*)('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"|[^\s'"][^\s]*)/gi;

/** What a password is replaced with. */
export const redacted = '[redacted]';

/** `text` with every password it quotes replaced by `[redacted]`. */
export function redactCredentials(text: string): string {
  let safe = text.includes('://') ? text.replace(urlPassword, `$1${redacted}@`) : text;
  if (/password/i.test(safe)) safe = safe.replace(keywordPassword, `$1${redacted}`);
  return safe;
}

/**
 * What a store shows of what it was given instead of its client or pool, in an
 * `InvalidOptionError`: a connection URL or a config given by mistake holds the password, so a
 * string is redacted, a plain object shows its field names only and another object its class.
 */
export function shownArgument(value: unknown): unknown {
  if (typeof value === 'string') return redactCredentials(value);
  if (typeof value !== 'object' || value === null) return value;
  if (Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.keys(value).map((field) => [field, '…']));
  }
  return `an instance of ${(value as { constructor?: { name?: string } }).constructor?.name || 'an unnamed class'}`;
}
