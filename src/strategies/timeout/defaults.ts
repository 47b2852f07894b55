// One constant per value, which the strategy reads: a bundle then inlines the numbers instead of
// carrying the objects below.
export const defaultTimeout = 30_000;
// Polly's bounds: from 10 ms to one day.
export const minTimeout = 10;
export const maxTimeout = 86_400_000;

/** Timeout defaults, as in Polly v8. A test pins each of them. */
export const timeoutDefaults = {
  timeout: defaultTimeout,
} as const;
