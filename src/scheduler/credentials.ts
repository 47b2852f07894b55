import { redactCredentials } from '../stores/credentials.ts';

export { redactCredentials };

/** The first line of `text` that is not blank (an error message's summary); `text` when none is. */
export function firstLine(text: string): string {
  return text.split('\n').find((line) => line.trim() !== '') ?? text;
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
