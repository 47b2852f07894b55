/** Concurrency limiter defaults, as in Polly v8 (`AddConcurrencyLimiter`). A test pins each of them. */
export const concurrencyLimiterDefaults = {
  permitLimit: 1_000,
  queueLimit: 0,
} as const;
