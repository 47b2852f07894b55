import type { BackoffType } from './options.ts';

const jitterFactor = 0.5;
// The largest delay a computation may yield; the system clock waits for it in steps.
export const maxComputedDelay = Number.MAX_SAFE_INTEGER;

/** Carries the decorrelated-jitter state from one attempt to the next within one execution. */
export interface BackoffState {
  previous: number;
}

/**
 * The delay before the retry that follows attempt `attempt` (zero-based), with Polly v8's
 * formulas (`RetryHelper.GetRetryDelay`). `maxDelay` caps the result; a computation that
 * overflows yields `maxDelay`, or the largest delay when there is no cap.
 */
export function retryDelay(
  type: BackoffType,
  jitter: boolean,
  attempt: number,
  baseDelay: number,
  maxDelay: number | undefined,
  state: BackoffState,
  random: () => number,
): number {
  if (baseDelay === 0) return 0;
  let delay = baseDelay;
  if (type === 'exponential') {
    if (jitter) {
      // "Decorrelated jitter backoff V2" (by George Polevoy, as used by Polly): exponential growth
      // whose median delay is near `baseDelay * 2^attempt`, spread smoothly so that callers who
      // failed together do not retry together. 4 smooths the first delay; 1 / 1.4 puts the
      // medians near 1, 2, 4, ... times baseDelay.
      const t = attempt + random();
      const next = 2 ** t * Math.tanh(Math.sqrt(4 * t));
      // From t >= 1024 `next` is Infinity and the difference Infinity or NaN (Polly issue #2163):
      // the clamp below turns both into the largest delay.
      delay = (next - state.previous) * (1 / 1.4) * baseDelay;
      state.previous = next;
    } else {
      delay = 2 ** attempt * baseDelay;
    }
  } else {
    if (type === 'linear') delay = (attempt + 1) * baseDelay;
    // Spreads the delay evenly over +-25% (`jitterFactor` / 2 either side).
    if (jitter) delay = delay + delay * jitterFactor * random() - (delay * jitterFactor) / 2;
  }
  // `delay <= maxComputedDelay` is also false for NaN and Infinity.
  return Math.min(
    delay <= maxComputedDelay ? Math.max(delay, 0) : maxComputedDelay,
    maxDelay ?? maxComputedDelay,
  );
}
