/** Lock defaults, as the lock strategy documents them. A test pins each of them. */
export const lockDefaults = {
  /** Lease length in ms. */
  ttl: 30_000,
  /** How long to wait for a held lock, in ms: 0 fails fast. */
  wait: 0,
} as const;

/**
 * Timing of the strategy's store calls. Waiting for a held lock polls (a release is noticed up to
 * `maxDelay` late); renewal runs every `ttl / renewDivisor`, and a renewal that hits a store
 * error is retried on the same doubling backoff while the lease is still valid.
 */
export const lockTiming = {
  pollInitialDelay: 50,
  pollMaxDelay: 1_000,
  renewDivisor: 3,
} as const;
