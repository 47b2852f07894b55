/** Timeout defaults, as in Polly v8. A test pins each of them. */
export const timeoutDefaults = {
  timeout: 30_000,
} as const;

/** Polly's bounds: from 10 ms to one day. */
export const timeoutLimits = {
  timeout: { min: 10, max: 86_400_000 },
} as const;
