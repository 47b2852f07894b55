import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { SchedulerEvent } from '../../scheduler/events.ts';
import type { ResolvedJob } from '../../scheduler/job.ts';
import { type JobSchedule, JobSchedules } from '../../scheduler/occurrence.ts';
import type { ClockOffset } from '../../scheduler/store-clock.ts';

/**
 * Run time of a job, seconds: from a 10 ms job to one of an hour. Fewer, wider buckets than
 * prom-client's defaults, since every job has its own series.
 */
export const durationBuckets = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600];

/** Start minus scheduledAt, seconds: a healthy fire starts within milliseconds. */
export const latenessBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The metric names of `resil run --metrics`, fixed by the public contract. */
export const metricNames = {
  runs: 'resil_job_runs_total',
  skips: 'resil_job_skips_total',
  duration: 'resil_job_duration_seconds',
  lateness: 'resil_job_lateness_seconds',
  lastSuccess: 'resil_job_last_success_timestamp_seconds',
  nextRun: 'resil_job_next_run_timestamp_seconds',
  running: 'resil_job_running',
  lockLost: 'resil_lock_lost_total',
  fenceRejections: 'resil_fence_rejections_total',
  strayErrors: 'resil_job_stray_errors_total',
  storeUp: 'resil_store_up',
  clockOffset: 'resil_store_clock_offset_seconds',
  configDrift: 'resil_job_config_drift',
} as const;

/** What the metrics read from the runner besides its events. */
export interface JobMetricsSource {
  readonly jobs: readonly ResolvedJob[];
  /** The store's clock as this instance estimates it (epoch ms), and the offset it learnt. */
  readonly clock: { now(): number; readonly offset: ClockOffset | undefined };
  /** The jobs that live instances run with other definitions, as of the last heartbeat (by name). */
  readonly configDrift?: { has(job: string): boolean };
}

/** One job's series, bound to its `job_name` once, so an event costs no label lookup. */
interface JobSeries {
  readonly success: Counter.Internal;
  readonly failure: Counter.Internal;
  readonly duration: Histogram.Internal<'job_name'>;
  readonly lateness: Histogram.Internal<'job_name'>;
  readonly running: Gauge.Internal<'job_name'>;
  readonly lockLost: Counter.Internal;
  readonly fenceRejections: Counter.Internal;
  readonly strayErrors: Counter.Internal;
  readonly skips: Map<string, Counter.Internal>;
  /** This instance's runs in progress, by scheduledAt (an occurrence started but not finished). */
  readonly inProgress: Map<number, number>;
}

/** How long computing next runs may hold the event loop before it yields to fires, ms. */
const nextRunSliceMs = 4;

/**
 * The `resil_*` metrics of one `resil run`, on `registry`: `record(event)` turns each scheduler
 * event into counter, histogram and gauge updates (synchronous; each job's series are bound to its
 * label values once, at the start or at its first event); next runs and the clock offset are read when scraped.
 *
 * @example
 * const metrics = new JobMetrics(registry, runner);
 * runner.on((event) => metrics.record(event));
 */
export class JobMetrics {
  readonly #source: JobMetricsSource;
  readonly #runs: Counter<'job_name' | 'outcome'>;
  readonly #skips: Counter<'job_name' | 'reason'>;
  readonly #duration: Histogram<'job_name'>;
  readonly #lateness: Histogram<'job_name'>;
  readonly #lastSuccess: Gauge<'job_name'>;
  readonly #running: Gauge<'job_name'>;
  readonly #lockLost: Counter<'job_name'>;
  readonly #fenceRejections: Counter<'job_name'>;
  readonly #strayErrors: Counter<'job_name'>;
  readonly #storeUp: Gauge;
  readonly #series = new Map<string, JobSeries>();
  /** `next`: the job's next instant, epoch ms; NaN before the first scrape, Infinity for never. */
  readonly #schedules: Array<{ name: string; schedule: JobSchedule; next: number }>;
  /** Told each `succeeded` event, after the counters moved (the last-success refresh). */
  onSucceeded: ((job: string, scheduledAt: number) => void) | undefined;

  constructor(registry: Registry, source: JobMetricsSource) {
    this.#source = source;
    const registers = [registry];
    this.#runs = new Counter({
      name: metricNames.runs,
      help: 'Runs of the job on this instance that ended, by outcome (success, failure; all attempts of a run count once).',
      labelNames: ['job_name', 'outcome'],
      registers,
    });
    this.#skips = new Counter({
      name: metricNames.skips,
      help: 'Fires of the job on this instance that did not run it, by skip reason (overlap, already-done, missed, paused, store-unavailable, store-setup, shutdown, ...).',
      labelNames: ['job_name', 'reason'],
      registers,
    });
    this.#duration = new Histogram({
      name: metricNames.duration,
      help: 'Run time of the job on this instance, all attempts of a run, in seconds.',
      labelNames: ['job_name'],
      buckets: durationBuckets,
      registers,
    });
    this.#lateness = new Histogram({
      name: metricNames.lateness,
      help: "Start of a run minus its scheduled instant, by the store's clock, in seconds.",
      labelNames: ['job_name'],
      buckets: latenessBuckets,
      registers,
    });
    this.#lastSuccess = new Gauge({
      name: metricNames.lastSuccess,
      help: 'Scheduled instant of the latest occurrence of the job that succeeded anywhere in the fleet (from the run ledger), Unix time in seconds.',
      labelNames: ['job_name'],
      registers,
    });
    const metrics = this;
    new Gauge({
      name: metricNames.nextRun,
      help: "The job's next scheduled instant, Unix time in seconds.",
      labelNames: ['job_name'],
      registers,
      collect(): Promise<void> {
        return metrics.#collectNextRuns(this);
      },
    });
    this.#running = new Gauge({
      name: metricNames.running,
      help: '1 while a run of the job is in progress on this instance, else 0.',
      labelNames: ['job_name'],
      registers,
    });
    this.#lockLost = new Counter({
      name: metricNames.lockLost,
      help: 'Runs of the job on this instance whose lease was lost while they ran (their signal was aborted).',
      labelNames: ['job_name'],
      registers,
    });
    this.#fenceRejections = new Counter({
      name: metricNames.fenceRejections,
      help: 'Runs of the job on this instance whose finish the run ledger refused: another instance had taken the occurrence over with a higher fencing token.',
      labelNames: ['job_name'],
      registers,
    });
    this.#strayErrors = new Counter({
      name: metricNames.strayErrors,
      help: "Errors that escaped the job's code on this instance after the attempt they came from had ended (a rejection or a throw from a timer it left behind); the recorded outcome stands.",
      labelNames: ['job_name'],
      registers,
    });
    this.#storeUp = new Gauge({
      name: metricNames.storeUp,
      help: "1 while the store answers this instance's probe within its timeout, else 0.",
      registers,
    });
    this.#storeUp.set(0);
    new Gauge({
      name: metricNames.clockOffset,
      help: "The store's clock minus this instance's clock, in seconds, as the instance learnt it (absent until known).",
      registers,
      collect() {
        const offset = source.clock.offset;
        if (offset === undefined) this.remove();
        else this.set(offset.offsetMs / 1000);
      },
    });
    new Gauge({
      name: metricNames.configDrift,
      help: 'While live instances run different definitions of the job (schedule, timezone, overlap, lock, timeout, retry), 1, else 0; read at each heartbeat.',
      labelNames: ['job_name'],
      registers,
      collect() {
        for (const job of source.jobs)
          this.set({ job_name: job.name }, source.configDrift?.has(job.name) ? 1 : 0);
      },
    });
    const schedules = new JobSchedules();
    this.#schedules = source.jobs.map((job) => ({
      name: job.name,
      schedule: schedules.of(job),
      next: Number.NaN,
    }));
    // Every scheduled job reports from the start, so that rate() and increase() see its first event.
    for (const job of source.jobs) this.#seriesOf(job.name);
  }

  /** Moves the metrics for one scheduler event. Never throws on a well-formed event. */
  record(event: SchedulerEvent): void {
    switch (event.type) {
      case 'started': {
        const series = this.#seriesOf(event.job);
        const at = event.scheduledAt.getTime();
        series.inProgress.set(at, (series.inProgress.get(at) ?? 0) + 1);
        series.running.set(1);
        if (event.lateMs !== undefined) series.lateness.observe(Math.max(0, event.lateMs) / 1000);
        return;
      }
      case 'succeeded':
      case 'failed': {
        const series = this.#seriesOf(event.job);
        (event.type === 'succeeded' ? series.success : series.failure).inc();
        series.duration.observe(event.durationMs / 1000);
        if (event.fenceRejected === true) series.fenceRejections.inc();
        const at = event.scheduledAt.getTime();
        const count = series.inProgress.get(at);
        if (count !== undefined) {
          if (count > 1) series.inProgress.set(at, count - 1);
          else series.inProgress.delete(at);
          if (series.inProgress.size === 0) series.running.set(0);
        }
        if (event.type === 'succeeded') this.onSucceeded?.(event.job, at);
        return;
      }
      case 'skipped': {
        const series = this.#seriesOf(event.job);
        let skips = series.skips.get(event.reason);
        if (skips === undefined) {
          skips = this.#skips.labels({ job_name: event.job, reason: event.reason });
          series.skips.set(event.reason, skips);
        }
        skips.inc();
        return;
      }
      case 'lock-lost':
        this.#seriesOf(event.job).lockLost.inc();
        return;
      case 'stray-error':
        this.#seriesOf(event.job).strayErrors.inc();
        return;
      default:
        // retrying, timed-out, store-error, finish-failed: in the logs; the run's end is counted once.
        return;
    }
  }

  /** Sets `resil_job_last_success_timestamp_seconds` (epoch ms), or removes it when unknown. */
  setLastSuccess(job: string, epochMs: number | undefined): void {
    if (epochMs === undefined) this.#lastSuccess.remove({ job_name: job });
    else this.#lastSuccess.set({ job_name: job }, epochMs / 1000);
  }

  /** Sets `resil_store_up`. */
  setStoreUp(up: boolean): void {
    this.#storeUp.set(up ? 1 : 0);
  }

  #seriesOf(job: string): JobSeries {
    let series = this.#series.get(job);
    if (series !== undefined) return series;
    const labels = { job_name: job };
    series = {
      success: this.#runs.labels({ job_name: job, outcome: 'success' }),
      failure: this.#runs.labels({ job_name: job, outcome: 'failure' }),
      duration: this.#duration.labels(labels),
      lateness: this.#lateness.labels(labels),
      running: this.#running.labels(labels),
      lockLost: this.#lockLost.labels(labels),
      fenceRejections: this.#fenceRejections.labels(labels),
      strayErrors: this.#strayErrors.labels(labels),
      skips: new Map(),
      inProgress: new Map(),
    };
    for (const counter of [
      series.success,
      series.failure,
      series.lockLost,
      series.fenceRejections,
      series.strayErrors,
    ])
      counter.inc(0);
    series.running.set(0);
    this.#series.set(job, series);
    return series;
  }

  /**
   * Recomputes the next instant of each job whose last one passed, in slices of a few ms so that
   * a scrape of many jobs never holds a fire up. Jobs on one schedule share its computation.
   */
  async #collectNextRuns(gauge: Gauge<'job_name'>): Promise<void> {
    // Whole seconds: every job of one schedule asks for the same instant, which JobSchedule remembers.
    const now = Math.floor(this.#source.clock.now() / 1000) * 1000;
    let sliceStart = performance.now();
    for (let index = 0; index < this.#schedules.length; index++) {
      const entry = this.#schedules[index]!;
      if (entry.next > now) continue;
      const next = entry.schedule.nextAfter(now);
      entry.next = next ?? Number.POSITIVE_INFINITY;
      if (next === undefined) gauge.remove({ job_name: entry.name });
      else gauge.set({ job_name: entry.name }, next / 1000);
      if ((index & 63) === 63 && performance.now() - sliceStart > nextRunSliceMs) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
    }
  }
}
