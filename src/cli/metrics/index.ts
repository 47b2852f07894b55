/**
 * `resil run --metrics [host:]port`: Prometheus metrics and health endpoints of one running
 * instance, on a small node:http server. Loaded only when the option is given.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import { hasRunLedger } from '../../ledger/contract.ts';
import { systemTimeProvider, type TimeProvider } from '../../pipeline/time.ts';
import type { SchedulerListener } from '../../scheduler/events.ts';
import type { JobLogger, ResolvedJob } from '../../scheduler/job.ts';
import type { StoreClock } from '../../scheduler/store-clock.ts';
import type { LockStore } from '../../strategies/lock/store.ts';
import { isLoopbackHost } from '../listen-address.ts';
import { describeStoreError } from '../views/store-read.ts';
import { formatMetricsAddress, type MetricsAddress } from './address.ts';
import { JobMetrics } from './job-metrics.ts';
import { type LastSuccessOptions, LastSuccessRefresher } from './last-success.ts';
import { readinessOf } from './readiness.ts';
import { closeServer, createMetricsServer, listen } from './server.ts';
import { StoreProbe, type StoreProbeOptions } from './store-probe.ts';

export type { MetricsAddress } from './address.ts';
export { parseMetricsAddress } from './address.ts';

/** The runner as the metrics see it (a `JobRunner`). */
export interface MetricsRunner {
  readonly jobs: readonly ResolvedJob[];
  readonly clock: Pick<StoreClock, 'now' | 'offset' | 'sync'>;
  readonly configDrift?: { has(job: string): boolean };
  on(listener: SchedulerListener): () => void;
}

export interface StartMetricsOptions {
  address: MetricsAddress;
  runner: MetricsRunner;
  store: LockStore;
  logger: JobLogger;
  /** The last error the store's client reported (see `watchStoreConnection`): names why it is down. */
  connectionError?: () => unknown;
  /** Defaults to the system clock. */
  time?: TimeProvider;
  probe?: Pick<StoreProbeOptions, 'intervalMs' | 'timeoutMs'>;
  lastSuccess?: Pick<LastSuccessOptions, 'refreshMs' | 'concurrency' | 'readTimeoutMs'>;
}

/** A running metrics server. */
export interface MetricsServer {
  /** `http://127.0.0.1:9464`. */
  readonly url: string;
  readonly registry: Registry;
  /** `resil run` received its stop signal: `/readyz` answers 503 from now on. */
  stopping(): void;
  /** Stops the probe and the refresh, unsubscribes, closes the server. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts the metrics server on `options.address`, subscribed to the runner's events, with the
 * store probe behind `/readyz` and `resil_store_up`. Rejects with a `UsageError` when it cannot
 * listen (port in use, no such address), having started nothing.
 */
export async function startMetrics(options: StartMetricsOptions): Promise<MetricsServer> {
  const { address, runner, store, logger } = options;
  const time = options.time ?? systemTimeProvider;
  const registry = new Registry();
  const metrics = new JobMetrics(registry, runner);
  const ledger = hasRunLedger(store) ? store : undefined;
  const lastSuccess = new LastSuccessRefresher({
    ...options.lastSuccess,
    ledger,
    jobs: runner.jobs,
    time,
    set: (job, epochMs) => metrics.setLastSuccess(job, epochMs),
    onError: (job, error) =>
      logger.debug(
        { job, error: describeStoreError(error, options.connectionError?.()) },
        'metrics: could not read the last success from the run ledger: keeping the last value',
      ),
  });
  metrics.onSucceeded = (job, scheduledAt) => lastSuccess.succeeded(job, scheduledAt);

  const probe =
    typeof store.now === 'function'
      ? new StoreProbe(() => store.now!(), {
          ...options.probe,
          time,
          describeError: (error) => describeStoreError(error, options.connectionError?.()),
          onResult: (state) => {
            metrics.setStoreUp(state.up);
            // A store that was down at start: learn the offset now, not at the runner's next refresh.
            if (state.up && runner.clock.offset === undefined) runner.clock.sync().catch(() => {});
          },
        })
      : undefined;
  if (probe === undefined) metrics.setStoreUp(true);

  let stopping = false;
  const server = createMetricsServer(
    {
      registry,
      readiness: (verbose) =>
        readinessOf({ store: probe?.state, clockOffset: runner.clock.offset, stopping }, verbose),
    },
    address,
  );
  await listen(server, address);

  collectDefaultMetrics({ register: registry });
  const unsubscribe = runner.on((event) => metrics.record(event));
  probe?.start();
  lastSuccess.start();
  const url = `http://${formatMetricsAddress(address)}`;
  logger.info(
    { metrics: `${url}/metrics`, livez: `${url}/livez`, readyz: `${url}/readyz` },
    isLoopbackHost(address.host)
      ? `metrics: listening on ${url} (/metrics, /livez, /readyz)`
      : `metrics: listening on ${url} (/metrics, /livez, /readyz), reachable from other machines`,
  );

  let closed: Promise<void> | undefined;
  return {
    url,
    registry,
    stopping() {
      stopping = true;
    },
    close() {
      closed ??= (async () => {
        stopping = true;
        unsubscribe();
        probe?.stop();
        lastSuccess.stop();
        await closeServer(server);
        logger.info('metrics: server closed');
      })();
      return closed;
    },
  };
}
