/**
 * Rate limiter defaults. System.Threading.RateLimiting makes these options required; resil fills
 * them in so `{ tokenLimit: 10 }` or `{ permitLimit: 100 }` alone is a working limiter. A test pins
 * each of them.
 */
export const rateLimiterDefaults = {
  /** Token bucket: one period refills the whole bucket (`tokensPerPeriod` defaults to `tokenLimit`). */
  replenishmentPeriod: 1_000,
  /** Sliding window: one second, in ten segments. */
  window: 1_000,
  segmentsPerWindow: 10,
  /** Reject at once when no permit is free. */
  queueLimit: 0,
} as const;
