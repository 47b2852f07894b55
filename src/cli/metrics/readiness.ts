import type { ClockOffset } from '../../scheduler/store-clock.ts';
import type { StoreProbeState } from './store-probe.ts';

/** One check of `/readyz`: `pass` or `fail`, with the reason for a failure and details. */
export interface ReadinessCheck {
  readonly status: 'pass' | 'fail';
  /** For `fail`: why, in one line, never a secret. */
  readonly reason?: string;
  readonly [detail: string]: unknown;
}

/** The body of `/readyz` (`application/json`). */
export interface ReadinessReport {
  readonly status: 'pass' | 'fail';
  /** Every check with `?verbose`; otherwise only the failing ones (absent when all pass). */
  readonly checks?: Readonly<Record<string, ReadinessCheck>>;
}

/** What readiness is judged on. */
export interface ReadinessInput {
  /** The store probe's last result, or `undefined` for a store without a clock to probe. */
  readonly store: StoreProbeState | undefined;
  /** The learnt offset to the store's clock, `undefined` until known. */
  readonly clockOffset: ClockOffset | undefined;
  /** True once `resil run` received SIGINT/SIGTERM and stops firing. */
  readonly stopping: boolean;
}

const iso = (epochMs: number | undefined) =>
  epochMs === undefined ? undefined : new Date(epochMs).toISOString();
const round = (ms: number | undefined) => (ms === undefined ? undefined : Math.round(ms * 10) / 10);

/**
 * `/readyz`: ready (200) once the store answered its last probe and the offset to its clock is
 * known, until `resil run` stops; otherwise 503. The body names each failing check and why; with
 * `verbose`, every check with its details.
 *
 * @example
 * readinessOf({ store: probe.state, clockOffset: clock.offset, stopping: false }, false)
 * // { statusCode: 503, report: { status: 'fail', checks: { store: { status: 'fail', reason: '...' } } } }
 */
export function readinessOf(
  input: ReadinessInput,
  verbose: boolean,
): { statusCode: 200 | 503; report: ReadinessReport } {
  const checks: Record<string, ReadinessCheck> = {
    store: storeCheck(input.store),
    clock:
      input.clockOffset === undefined
        ? {
            status: 'fail',
            reason: "the offset to the store's clock is not known yet (no answer from the store)",
          }
        : {
            status: 'pass',
            offsetMs: round(input.clockOffset.offsetMs),
            uncertaintyMs: round(input.clockOffset.uncertaintyMs),
          },
    runner: input.stopping
      ? { status: 'fail', reason: 'resil run is stopping: it fires no more jobs' }
      : { status: 'pass' },
  };
  const failing = Object.entries(checks).filter(([, check]) => check.status === 'fail');
  const status = failing.length === 0 ? 'pass' : 'fail';
  const listed = verbose ? checks : Object.fromEntries(failing);
  const report: ReadinessReport = Object.keys(listed).length === 0 ? { status } : { status, checks: listed };
  return { statusCode: status === 'pass' ? 200 : 503, report };
}

function storeCheck(state: StoreProbeState | undefined): ReadinessCheck {
  if (state === undefined) return { status: 'pass', probe: 'none: the store has no clock (now()) to ask' };
  const details = {
    since: iso(state.since),
    lastAnswerAt: iso(state.lastAnswerAt),
    roundTripMs: round(state.roundTripMs),
  };
  return state.up
    ? { status: 'pass', ...details }
    : { status: 'fail', reason: state.reason ?? 'the store does not answer', ...details };
}
