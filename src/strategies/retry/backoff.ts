import type { BackoffType } from './options.ts';

const jitterFactor = 0.5;
const exponentialFactor = 2;
// The largest delay a computation may yield; the system clock waits for it in steps.
const maxComputedDelay = Number.MAX_SAFE_INTEGER;

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
  let delay = computeDelay(type, jitter, attempt, baseDelay, state, random);
  if (!(delay <= maxComputedDelay)) delay = maxComputedDelay; // also catches NaN and Infinity
  if (delay < 0) delay = 0;
  return maxDelay !== undefined && delay > maxDelay ? maxDelay : delay;
}

function computeDelay(
  type: BackoffType,
  jitter: boolean,
  attempt: number,
  baseDelay: number,
  state: BackoffState,
  random: () => number,
): number {
  if (baseDelay === 0) return 0;
  switch (type) {
    case 'constant':
      return jitter ? applyJitter(baseDelay, random) : baseDelay;
    case 'linear': {
      const delay = (attempt + 1) * baseDelay;
      return jitter ? applyJitter(delay, random) : delay;
    }
    case 'exponential':
      return jitter
        ? decorrelatedJitterV2(attempt, baseDelay, state, random)
        : exponentialFactor ** attempt * baseDelay;
  }
}

/** Spreads `delay` evenly over +-25% (`jitterFactor` / 2 either side). */
function applyJitter(delay: number, random: () => number): number {
  const offset = (delay * jitterFactor) / 2;
  return delay + delay * jitterFactor * random() - offset;
}

/**
 * "Decorrelated jitter backoff V2" (by George Polevoy, as used by Polly): exponential growth whose
 * median delay is near `baseDelay * 2^attempt`, spread smoothly so that callers who failed
 * together do not retry together.
 */
function decorrelatedJitterV2(
  attempt: number,
  baseDelay: number,
  state: BackoffState,
  random: () => number,
): number {
  const pFactor = 4; // smooths the first delay
  const scalingFactor = 1 / 1.4; // puts the medians near 1, 2, 4, ... times baseDelay
  const t = attempt + random();
  const next = 2 ** t * Math.tanh(Math.sqrt(pFactor * t));
  // From t >= 1024 `next` is Infinity and `next - previous` would be NaN (Polly issue #2163).
  if (next === Number.POSITIVE_INFINITY) {
    state.previous = next;
    return maxComputedDelay;
  }
  const delay = (next - state.previous) * scalingFactor * baseDelay;
  state.previous = next;
  return Math.min(delay, maxComputedDelay);
}
