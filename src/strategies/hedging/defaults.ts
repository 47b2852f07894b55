/** Hedging defaults, as in Polly v8. A test pins each of them. */
export const hedgingDefaults = {
  maxHedgedAttempts: 1,
  delay: 2_000,
} as const;

/** Polly's bounds: from 1 to 10 hedged attempts (on top of the primary one). */
export const hedgingLimits = {
  maxHedgedAttempts: { min: 1, max: 10 },
} as const;
