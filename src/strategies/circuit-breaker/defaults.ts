/** Circuit breaker defaults, as in Polly v8. A test pins each of them. */
export const circuitBreakerDefaults = {
  failureRatio: 0.1,
  minimumThroughput: 100,
  samplingDuration: 30_000,
  breakDuration: 5_000,
} as const;

/**
 * Polly's bounds: a failure ratio above 0 up to 1, at least 2 executions sampled, sampling and
 * break durations from 500 ms to one day. `consecutiveFailures` (cockatiel's ConsecutiveBreaker)
 * needs at least one failure.
 */
export const circuitBreakerLimits = {
  minimumThroughput: { min: 2, max: Number.MAX_SAFE_INTEGER },
  samplingDuration: { min: 500, max: 86_400_000 },
  breakDuration: { min: 500, max: 86_400_000 },
  consecutiveFailures: { min: 1, max: Number.MAX_SAFE_INTEGER },
} as const;

/**
 * How the sampling duration is cut into windows (Polly's HealthMetrics): ten windows, unless a
 * window would be shorter than the 20 ms a timer can resolve, then one window for the whole duration.
 */
export const healthMetricsLayout = {
  numberOfWindows: 10,
  windowResolution: 20,
} as const;
