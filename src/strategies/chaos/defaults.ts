// One constant per value, which the strategies read: a bundle then inlines the numbers instead of
// carrying the object below.
export const defaultInjectionRate = 0.001;
export const defaultEnabled = true;
export const defaultLatency = 30_000;

/** Chaos defaults, as in Polly v8 (`ChaosStrategyConstants`, `ChaosLatencyConstants`). A test pins each of them. */
export const chaosDefaults = {
  injectionRate: defaultInjectionRate,
  enabled: defaultEnabled,
  latency: defaultLatency,
} as const;
