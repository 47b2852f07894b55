import type { BackoffType } from './options.ts';

const jitterFactor = 0.5;
const maxDelay = Number.MAX_SAFE_INTEGER;

/**
 * Carries the decorrelated-jitter state from one attempt to the next within one execution.
 */
export interface BackoffState {
  previous: number;
}

/**
 * The delay before retry number `attempt` (zero-based), following Polly v8's formulas.
 * `cap` applies to the computed delay; overflow yields the cap (or the largest safe delay).
 */
export function retryDelay(
  type: BackoffType,
  jitter: boolean,
  attempt: number,
  baseDelay: number,
  cap: number | undefined,
  state: BackoffState,
  random: () => number,
): number {
  let delay = computeDelay(type, jitter, attempt, baseDelay, state, random);
  if (!Number.isFinite(delay) || delay > maxDelay) delay = maxDelay;
  return cap !== undefined && delay > cap ? cap : delay;
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
      return jitter ? decorrelatedJitter(attempt, baseDelay, state, random) : baseDelay * 2 ** attempt;
  }
}

/** +-25% around `delay`. */
function applyJitter(delay: number, random: () => number): number {
  const offset = (delay * jitterFactor) / 2;
  return delay + delay * jitterFactor * random() - offset;
}

/**
 * "Decorrelated jitter backoff V2" (the formula Polly uses): exponential growth whose median is
 * close to `baseDelay * 2^attempt`, with evenly spread retries and no spikes at the start.
 */
function decorrelatedJitter(attempt: number, baseDelay: number, state: BackoffState, random: () => number) {
  const scalingFactor = 1 / 1.4;
  const t = attempt + random();
  const next = 2 ** t * Math.tanh(Math.sqrt(4 * t));
  const delay = (next - state.previous) * scalingFactor * baseDelay;
  state.previous = next;
  return Math.min(delay, maxDelay);
}
