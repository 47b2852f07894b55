/** RedisLockStore defaults. A test pins each of them. */
export const redisLockStoreDefaults = {
  /** Namespace of every key the store writes. */
  prefix: 'resil:',
  /** Bound on one store operation, waiting for the connection to be ready included. */
  commandTimeout: 2_000,
  /** Replicas that must acknowledge a write (`WAIT`) before it counts: 0 does not wait. */
  waitForReplicas: 0,
  /** How long `WAIT` may block when `waitForReplicas` > 0. */
  replicaTimeout: 500,
  /** Wake waiters on release through pub/sub, on a connection opened only while someone waits. */
  releaseNotifications: true,
  /** `finishOccurrence`'s default retention (7 days): older records are dropped, as `RunLedger` documents. */
  retentionMs: 7 * 86_400_000,
  /** `runHistory`'s default limit, as `RunLedger` documents. */
  historyLimit: 20,
} as const;

/** Bounds of the options, in ms. */
export const redisLockStoreLimits = {
  commandTimeout: { min: 10, max: 3_600_000 },
  replicaTimeout: { min: 1, max: 3_600_000 },
} as const;

/**
 * Run ledger reads (and, apart, writes) per script call, and script calls of each kind in flight at
 * once (see ../call-batches.ts): 100 of them take Redis a few ms, so a store keeps Redis busy with
 * at most a few hundred queued there, and a reply that takes `commandTimeout` means Redis is not
 * answering, not that our own backlog is long.
 */
export const redisLedgerBatchLimits = { maxBatch: 100, maxInFlight: 4 } as const;
