import { Cron } from 'croner';
import { type OverlapPolicy, overlapPolicies } from '../ledger/contract.ts';
import { formatDuration } from '../pipeline/duration.ts';
import { isInvalidOptionError } from '../pipeline/errors.ts';
import type { TelemetryListener } from '../pipeline/strategy.ts';
import { systemTimeProvider } from '../pipeline/time.ts';
import type { RetryStrategyOptions } from '../strategies/retry/options.ts';
import { retryStrategy } from '../strategies/retry/strategy.ts';
import { got } from './config-error.ts';
import { describeError } from './credentials.ts';
import { closestName } from './did-you-mean.ts';
import type {
  JobDefinition,
  JobIsolation,
  JobResourceLimits,
  ResolvedJob,
  SchedulerTelemetry,
} from './job.ts';
import { jobChaos } from './job-chaos.ts';
import { configDefaults } from './job-defaults.ts';
import {
  checkUnknownOptions,
  concurrency,
  dstPolicy,
  duration,
  hooks,
  isolation,
  isPlainObject,
  type JobHooks,
  type Report,
  timezone,
} from './option-checks.ts';
import { jobOptions, lockOptions, resourceLimitOptions, retryOptions } from './option-names.ts';
import { pausedCronOptions } from './timezone.ts';

const noTelemetry = { timeProvider: systemTimeProvider, report: () => {} };

/** True when the retry strategy accepts `options`; else reports the option it refused. */
function retryOptionsValid(options: RetryStrategyOptions, report: Report): boolean {
  try {
    retryStrategy(options).create(noTelemetry);
    return true;
  } catch (error) {
    if (!isInvalidOptionError(error)) throw error;
    report({
      option: error.option,
      value: error.value,
      message: `expected ${error.expected}, ${got(error.value)}`,
    });
    return false;
  }
}

/** `telemetry.pipelineListener(job)`, or `undefined` after reporting a listener that is not one. */
function pipelineListenerOf(
  config: SchedulerTelemetry | undefined,
  job: string,
  report: Report,
): TelemetryListener | undefined {
  if (config?.pipelineListener === undefined) return undefined;
  let listener: unknown;
  try {
    listener = config.pipelineListener(job);
  } catch (error) {
    report({
      option: 'telemetry.pipelineListener',
      message: `threw for job ${JSON.stringify(job)}: ${describeError(error)}`,
    });
    return undefined;
  }
  if (listener === undefined || typeof listener === 'function')
    return listener as TelemetryListener | undefined;
  report({
    option: 'telemetry.pipelineListener',
    value: listener,
    message: `expected it to return a telemetry listener function (or undefined) for job ${JSON.stringify(job)}, ${got(listener)}`,
  });
  return undefined;
}

/** A job's `resourceLimits`, or undefined after reporting what is wrong with them. */
function resourceLimits(value: unknown, report: Report): JobResourceLimits | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) {
    report({
      option: 'resourceLimits',
      value,
      message: `expected an object of limits in MB such as { maxOldGenerationSizeMb: 256 }, ${got(value)}`,
    });
    return undefined;
  }
  let valid = true;
  const problem: Report = (details) => {
    valid = false;
    report(details);
  };
  checkUnknownOptions(value, resourceLimitOptions, 'resourceLimits.', problem);
  for (const name of resourceLimitOptions) {
    const limit = value[name];
    if (limit === undefined || (typeof limit === 'number' && Number.isFinite(limit) && limit > 0)) continue;
    problem({
      option: `resourceLimits.${name}`,
      value: limit,
      message: `expected a number of MB greater than 0, ${got(limit)}`,
    });
  }
  return valid ? (value as JobResourceLimits) : undefined;
}

/**
 * croner's reason for refusing `schedule` in `zone`, or undefined when it parses: once per distinct
 * schedule and zone of a config (`checked`), since a parsed pattern holds a year table of ~80 KB
 * (10,000 jobs often share a thousand schedules).
 */
function cronErrorOf(
  schedule: string,
  zone: string | undefined,
  checked: Map<string, string | undefined>,
): string | undefined {
  const key = `${zone ?? ''} ${schedule}`;
  if (checked.has(key)) return checked.get(key);
  let message: string | undefined;
  try {
    new Cron(schedule, pausedCronOptions(zone)).stop();
  } catch (error) {
    message = (error as Error).message;
  }
  checked.set(key, message);
  return message;
}

/**
 * One entry of the config's `jobs`, checked option by option (each problem reported, labelled with
 * the job's name or `jobs[i]`), with the defaults applied; undefined when it has any problem.
 */
export function resolveJob(
  raw: unknown,
  index: number,
  defaultTimezone: string | undefined,
  defaultIsolation: JobIsolation,
  defaultHooks: JobHooks,
  telemetryConfig: SchedulerTelemetry | undefined,
  cronErrors: Map<string, string | undefined>,
  report: (job: string, problem: { option?: string; value?: unknown; message: string }) => void,
): ResolvedJob | undefined {
  const fallbackLabel = `jobs[${index}]`;
  if (!isPlainObject(raw)) {
    report(fallbackLabel, {
      value: raw,
      message: `expected a job object ({ name, schedule, run }) or a module path, ${got(raw)}`,
    });
    return undefined;
  }
  const job = raw as Partial<JobDefinition> & Record<string, unknown>;
  const label = typeof job.name === 'string' && job.name !== '' ? job.name : fallbackLabel;
  let valid = true;
  const problem: Report = (details) => {
    valid = false;
    report(label, details);
  };

  checkUnknownOptions(job, jobOptions, '', problem);
  if (typeof job.name !== 'string' || job.name.trim() === '') {
    problem({
      option: 'name',
      value: job.name,
      message:
        job.name === undefined
          ? 'missing name: a unique, non-empty string'
          : `expected a non-empty string, ${got(job.name)}`,
    });
  }
  if (typeof job.run !== 'function') {
    problem({
      option: 'run',
      value: job.run,
      message:
        job.run === undefined
          ? 'missing run: the function (ctx) => ... that does the work'
          : `expected a function, ${got(job.run)}`,
    });
  }
  const zone = job.timezone === undefined ? defaultTimezone : timezone(job.timezone, 'timezone', problem);
  if (typeof job.schedule !== 'string' || job.schedule.trim() === '') {
    problem({
      option: 'schedule',
      value: job.schedule,
      message:
        job.schedule === undefined
          ? "missing schedule: a cron expression such as '0 2 * * *'"
          : `expected a cron expression string, ${got(job.schedule)}`,
    });
  } else {
    // Checked even where the timezone is not valid (then in this machine's zone): a pattern's
    // syntax does not depend on the zone, and every problem is reported at once.
    const message = cronErrorOf(job.schedule, zone, cronErrors);
    if (message !== undefined) {
      problem({
        option: 'schedule',
        value: job.schedule,
        message: `invalid cron expression ${JSON.stringify(job.schedule)}: ${message}`,
      });
    }
  }

  let lock: ResolvedJob['lock'] = false;
  if (job.lock !== false) {
    const options = job.lock ?? {};
    if (!isPlainObject(options)) {
      problem({
        option: 'lock',
        value: job.lock,
        message: `expected false or { key, ttl, wait }, ${got(job.lock)}`,
      });
    } else {
      checkUnknownOptions(options, lockOptions, 'lock.', problem);
      const key = options.key ?? job.name;
      if (options.key !== undefined && (typeof options.key !== 'string' || options.key === '')) {
        problem({
          option: 'lock.key',
          value: options.key,
          message: `expected a non-empty string, ${got(options.key)}`,
        });
      }
      const ttlMs = duration(options.ttl ?? configDefaults.lockTtl, 'lock.ttl', problem, { positive: true });
      const waitMs = duration(options.wait ?? configDefaults.lockWait, 'lock.wait', problem, {
        positive: false,
      });
      if (typeof key === 'string' && ttlMs !== undefined && waitMs !== undefined)
        lock = { key, ttlMs, waitMs };
    }
  }

  const timeoutMs =
    job.timeout === undefined || job.timeout === false
      ? undefined
      : duration(job.timeout, 'timeout', problem, { positive: true });

  let retry: false | RetryStrategyOptions = false;
  if (job.retry !== undefined && job.retry !== false) {
    if (!isPlainObject(job.retry)) {
      problem({
        option: 'retry',
        value: job.retry,
        message: `expected false or retry options, ${got(job.retry)}`,
      });
    } else {
      checkUnknownOptions(job.retry, retryOptions, 'retry.', problem);
      // The retry strategy's own validation, so the config accepts exactly what build() does. It
      // stops at the first bad option: each known option alone first, so every bad one is told.
      const options = job.retry as Record<string, unknown>;
      const known = retryOptions.filter((name) => options[name] !== undefined);
      const bad = known.filter((name) => !retryOptionsValid({ [name]: options[name] }, problem));
      if (bad.length === 0 && retryOptionsValid(options, problem)) retry = job.retry;
    }
  }

  const chaos = jobChaos(job.chaos, problem);

  if (job.enabled !== undefined && typeof job.enabled !== 'boolean') {
    problem({
      option: 'enabled',
      value: job.enabled,
      message: `expected true or false, ${got(job.enabled)}`,
    });
  }
  const catchUpMs =
    job.catchUp === undefined ? undefined : duration(job.catchUp, 'catchUp', problem, { positive: true });
  const startingDeadlineMs = duration(
    job.startingDeadline ?? configDefaults.startingDeadline,
    'startingDeadline',
    problem,
    { positive: true },
  );

  let overlap: OverlapPolicy = 'skip';
  if (job.overlap !== undefined) {
    if (overlapPolicies.includes(job.overlap)) overlap = job.overlap;
    else {
      const suggestion =
        typeof job.overlap === 'string' ? closestName(job.overlap, overlapPolicies) : undefined;
      problem({
        option: 'overlap',
        value: job.overlap,
        message: `expected one of ${overlapPolicies.map((policy) => `'${policy}'`).join(', ')}${suggestion === undefined ? '' : ` (did you mean '${suggestion}'?)`}, ${got(job.overlap)}`,
      });
    }
  } else if (lock !== false && lock.waitMs >= lock.ttlMs) {
    // Before overlap policies, waiting at least a ttl was how a job said "run every occurrence".
    overlap = 'buffer-all';
  }

  const jobConcurrency = concurrency(job.concurrency, job.overlap, problem);

  const jitterMs =
    job.jitter === undefined ? undefined : duration(job.jitter, 'jitter', problem, { positive: true });
  if (jitterMs !== undefined && startingDeadlineMs !== undefined && jitterMs >= startingDeadlineMs) {
    problem({
      option: 'jitter',
      value: job.jitter,
      message: `must be smaller than startingDeadline (${formatDuration(startingDeadlineMs)}): a fire delayed by its jitter would be skipped as missed; shorten jitter or raise startingDeadline`,
    });
  }
  const ownIsolation = isolation(job.isolation, problem);
  const jobIsolation = ownIsolation ?? defaultIsolation;
  const limits = resourceLimits(job.resourceLimits, problem);
  // Told only when the isolation is known: a misspelt one already has its message.
  if (
    limits !== undefined &&
    jobIsolation !== 'worker' &&
    (job.isolation === undefined || ownIsolation !== undefined)
  ) {
    problem({
      option: 'resourceLimits',
      value: job.resourceLimits,
      message: `limits a worker thread: they apply with isolation: 'worker' only (this job's isolation is '${jobIsolation}')`,
    });
  }
  const dst = dstPolicy(job.dst, problem) ?? configDefaults.dst;
  const jobHooks = hooks(job, problem);
  const jobTelemetry = valid ? pipelineListenerOf(telemetryConfig, job.name!, problem) : undefined;

  if (!valid) return undefined;
  return {
    name: job.name!,
    schedule: job.schedule!,
    timezone: zone,
    run: job.run!,
    lock,
    timeoutMs,
    retry,
    chaos: chaos === false ? undefined : chaos,
    enabled: job.enabled ?? true,
    catchUpMs,
    startingDeadlineMs: startingDeadlineMs!,
    overlap,
    concurrency: jobConcurrency,
    jitterMs,
    isolation: jobIsolation,
    dst,
    resourceLimits: limits,
    onSuccess: jobHooks.onSuccess ?? defaultHooks.onSuccess,
    onFailure: jobHooks.onFailure ?? defaultHooks.onFailure,
    onSkip: jobHooks.onSkip ?? defaultHooks.onSkip,
    telemetry: jobTelemetry,
  };
}
