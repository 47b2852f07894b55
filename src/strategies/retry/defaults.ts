// One constant per value, which the strategy reads: a bundle then inlines the numbers instead of
// carrying the objects below.
export const defaultMaxRetryAttempts = 3;
export const defaultDelay = 2_000;
export const defaultBackoffType = 'constant';
export const defaultUseJitter = false;
// Polly's bounds: at least one retry (Infinity for no limit); delays from zero to one day.
export const minRetryAttempts = 1;
export const minRetryDelay = 0;
export const maxRetryDelay = 86_400_000;

/** Retry defaults, as in Polly v8 (`RetryConstants`). A test pins each of them. */
export const retryDefaults = {
  maxRetryAttempts: defaultMaxRetryAttempts,
  delay: defaultDelay,
  backoffType: defaultBackoffType,
  useJitter: defaultUseJitter,
} as const;
