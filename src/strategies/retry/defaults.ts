/** Retry defaults, as in Polly v8 (`RetryConstants`). A test pins each of them. */
export const retryDefaults = {
  maxRetryAttempts: 3,
  delay: 2_000,
  backoffType: 'constant',
  useJitter: false,
} as const;

/** Polly's bounds: at least one retry (Infinity for no limit); delays from zero to one day. */
export const retryLimits = {
  maxRetryAttempts: { min: 1, max: Infinity },
  delay: { min: 0, max: 86_400_000 },
} as const;
