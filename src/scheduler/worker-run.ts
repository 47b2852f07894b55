import { Worker } from 'node:worker_threads';
import { errorGuard, ResilienceError } from '../pipeline/errors.ts';
import type { JobContext, JobLogger, JobResourceLimits } from './job.ts';

/** After the signal of an isolated run aborts, how long its worker gets to settle before it is terminated. */
export const workerAbortGraceMs = 1_000;

/** What the runner tells an isolated run's worker when it starts it (`workerData`). */
export interface JobWorkerData {
  /** The config file the worker loads, through the same loader as the CLI. */
  readonly configPath: string;
  readonly job: string;
  /** `ctx.scheduledAt`, epoch ms. */
  readonly scheduledAt: number;
  readonly attempt: number;
  readonly token: number | undefined;
}

/** An error as it crosses the thread boundary: what a log line and the run ledger show of it. */
export interface SerializedError {
  readonly name: string;
  readonly message: string;
  readonly stack?: string | undefined;
  readonly code?: unknown;
}

/** The runner to the worker. */
export type ToJobWorker = { readonly type: 'abort'; readonly reason: SerializedError };

/** The worker to the runner. */
export type FromJobWorker =
  | {
      readonly type: 'log';
      readonly level: keyof JobLogger;
      readonly object: object | string;
      readonly message?: string | undefined;
    }
  | { readonly type: 'done' }
  | { readonly type: 'failed'; readonly error: SerializedError };

export function serializeError(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const { code } = error as { code?: unknown };
  return {
    name: error.name,
    message: error.message,
    stack: error.stack,
    ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
  };
}

export function deserializeError(serialized: SerializedError): Error {
  const error = new Error(serialized.message);
  error.name = serialized.name;
  if (serialized.stack !== undefined) error.stack = serialized.stack;
  if (serialized.code !== undefined) Object.assign(error, { code: serialized.code });
  return error;
}

/**
 * The worker of an isolated run ended before the run settled: the job called `process.exit()`
 * (`exitCode`), or the worker crashed (an uncaught error, memory exhaustion: its message and stack
 * are this error's).
 */
export class JobWorkerError extends ResilienceError {
  readonly code = 'JOB_WORKER';
  constructor(
    message: string,
    /** The worker's exit code, when it exited. */
    readonly exitCode?: number,
    crash?: unknown,
  ) {
    super(message);
    this.name = 'JobWorkerError';
    const frames = crash instanceof Error ? crash.stack?.split('\n').slice(1) : undefined;
    if (frames !== undefined && frames.length > 0)
      this.stack = [`${this.name}: ${message}`, ...frames].join('\n');
  }
}

export const isJobWorkerError = errorGuard<JobWorkerError>('JOB_WORKER');

export interface WorkerRunOptions {
  /** The worker's module (`ResolvedConfig.jobWorker`). */
  readonly entry: string | URL;
  readonly configPath: string;
  readonly resourceLimits?: JobResourceLimits | undefined;
  /** Defaults to {@link workerAbortGraceMs}. */
  readonly abortGraceMs?: number;
}

/**
 * Runs one attempt of a job in a worker thread of its own: the worker loads the config and runs
 * the job of `ctx.job` with a context rebuilt from `ctx` (its logger lines come back to
 * `ctx.logger`). Settles as the job does; rejects when the worker crashes or exits first. When
 * `ctx.signal` aborts, the worker's signal aborts too, and a worker that has not settled
 * `abortGraceMs` later (a blocked event loop) is terminated: the attempt rejects with the abort's
 * reason. The worker is terminated once the attempt settles, whatever it left running.
 */
export function runInWorker(ctx: JobContext, options: WorkerRunOptions): Promise<void> {
  const { signal, logger } = ctx;
  const workerData: JobWorkerData = {
    configPath: options.configPath,
    job: ctx.job,
    scheduledAt: ctx.scheduledAt.getTime(),
    attempt: ctx.attempt,
    token: ctx.token,
  };
  return new Promise<void>((resolve, reject) => {
    const worker = new Worker(options.entry, {
      workerData,
      ...(options.resourceLimits === undefined ? {} : { resourceLimits: { ...options.resourceLimits } }),
    });
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;
    const settle = (error?: unknown) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      clearTimeout(graceTimer);
      void worker.terminate();
      if (error === undefined) resolve();
      else reject(error);
    };
    const onAbort = () => {
      const message: ToJobWorker = { type: 'abort', reason: serializeError(signal.reason) };
      worker.postMessage(message);
      graceTimer = setTimeout(() => settle(signal.reason), options.abortGraceMs ?? workerAbortGraceMs);
    };
    worker.on('message', (message: FromJobWorker) => {
      if (message.type === 'log') {
        if (typeof message.object === 'string') logger[message.level](message.object);
        else logger[message.level](message.object, message.message);
      } else if (message.type === 'done') {
        settle();
      } else {
        // The job settled after its signal aborted: the runner's own reason (a timeout, a lost lease,
        // shutdown) says what happened, as it does for a job in the runner's process.
        settle(signal.aborted ? signal.reason : deserializeError(message.error));
      }
    });
    worker.on('error', (error) => {
      const cause = error instanceof Error ? error.message : String(error);
      settle(new JobWorkerError(`the job's worker crashed: ${cause}`, undefined, error));
    });
    worker.on('exit', (code) => {
      settle(
        signal.aborted
          ? signal.reason
          : new JobWorkerError(`the job's worker exited with code ${code} before its run settled`, code),
      );
    });
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}
