import { hostname } from 'node:os';
import type { InstanceRegistry } from '../ledger/contract.ts';
import type { TimeProvider, TimerHandle } from '../pipeline/time.ts';
import type { ConfigDriftWatch } from './config-drift.ts';

/** How often a running scheduler registers itself in the store's instance registry (`resil instances`). */
export const instanceHeartbeatMs = 5_000;
/** How long an entry outlives its last heartbeat: an instance disappears after missing about 3. */
export const instanceTtlMs = 15_000;

/**
 * Registers the instance in the store's registry now and every {@link instanceHeartbeatMs}; `stop()`
 * clears the timer and removes the entry. A failing registry is reported to `onError` only: it never
 * stops or delays the scheduler, and a heartbeat still in flight is not sent again.
 */
export function startInstanceHeartbeat(
  store: InstanceRegistry,
  options: {
    time: TimeProvider;
    instance: string;
    version: string;
    jobs: number;
    startedAt: number;
    /** Store clock minus this instance's clock, ms: read at each heartbeat, as the scheduler re-learns it. */
    clockOffsetMs: () => number;
    /**
     * Config drift: read before each registration (one registry read per heartbeat), it says what
     * to register as `definitions`; when it fails, its last value is registered again.
     */
    definitions?: Pick<ConfigDriftWatch, 'next' | 'published'>;
    onError: (error: unknown) => void;
  },
): { stop(): Promise<void> } {
  const { time, instance, version, jobs, startedAt, onError } = options;
  let inFlight: Promise<void> | undefined;
  let timer: TimerHandle | undefined;
  let stopped = false;
  const beat = () => {
    if (stopped) return;
    // Not unref'd: the scheduler keeps the process alive anyway, and stop() clears it.
    timer = time.setTimeout(beat, instanceHeartbeatMs);
    if (inFlight !== undefined) return;
    const info = {
      instance,
      host: hostname(),
      pid: process.pid,
      version,
      startedAt,
      jobs,
      clockOffsetMs: Math.round(options.clockOffsetMs()),
    };
    const { definitions } = options;
    // Through then(): a custom store that throws instead of rejecting must not crash the scheduler either.
    inFlight = Promise.resolve()
      .then(() =>
        definitions?.next().catch((error: unknown) => {
          onError(error);
          return definitions.published;
        }),
      )
      .then((published) =>
        store.registerInstance(published === undefined ? info : { ...info, definitions: published }, {
          ttlMs: instanceTtlMs,
        }),
      )
      .catch(onError)
      .finally(() => {
        inFlight = undefined;
      });
  };
  beat();
  return {
    async stop() {
      stopped = true;
      if (timer !== undefined) time.clearTimeout(timer);
      await inFlight;
      await Promise.resolve()
        .then(() => store.removeInstance(instance))
        .catch(onError);
    },
  };
}
