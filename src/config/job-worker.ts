/**
 * The worker thread of a job with `isolation: 'worker'` (see scheduler/worker-run.ts): loads the
 * config through the CLI's loader, as `resil run` did, and runs one attempt of the job it is
 * named. A job written inline in the config file is found there like one imported from a module.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { JobContext, JobLogger } from '../scheduler/job.ts';
import {
  deserializeError,
  type FromJobWorker,
  type JobWorkerData,
  serializeError,
  type ToJobWorker,
} from '../scheduler/worker-run.ts';
import { loadConfig } from './load.ts';

const port = parentPort!;
const data = workerData as JobWorkerData;
const controller = new AbortController();

port.on('message', (message: ToJobWorker) => {
  if (message.type === 'abort') controller.abort(deserializeError(message.reason));
});

function post(message: FromJobWorker): void {
  try {
    port.postMessage(message);
  } catch {
    // A field that cannot cross threads (a function, a socket): its JSON form still can.
    port.postMessage(JSON.parse(JSON.stringify(message)) as FromJobWorker);
  }
}

const line =
  (level: keyof JobLogger) =>
  (object: object | string, message?: string): void =>
    post({ type: 'log', level, object, message });
const logger: JobLogger = {
  debug: line('debug'),
  info: line('info'),
  warn: line('warn'),
  error: line('error'),
};

try {
  const config = await loadConfig({ configPath: data.configPath });
  const job = config.jobs.find((candidate) => candidate.name === data.job);
  if (job === undefined) {
    throw new Error(`the config ${data.configPath} no longer defines a job named "${data.job}"`);
  }
  const ctx: JobContext = {
    signal: controller.signal,
    job: data.job,
    scheduledAt: new Date(data.scheduledAt),
    attempt: data.attempt,
    logger,
    token: data.token,
  };
  await job.run(ctx);
  post({ type: 'done' });
} catch (error) {
  post({ type: 'failed', error: serializeError(error) });
}
