import { hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import { Cron } from 'croner';
import { formatDuration, parseDuration, parsePositiveDuration } from '../pipeline/duration.ts';
import { isInvalidOptionError } from '../pipeline/errors.ts';
import type { TelemetryListener } from '../pipeline/strategy.ts';
import { systemTimeProvider } from '../pipeline/time.ts';
import { isInvalidKeyError } from '../strategies/lock/errors.ts';
import { MemoryLockStore } from '../strategies/lock/memory-store.ts';
import { maxLedgerRecordLimit, type OverlapPolicy, overlapPolicies } from '../strategies/lock/run-ledger.ts';
import { isLockStore, type LockStore } from '../strategies/lock/store.ts';
import type { RetryStrategyOptions } from '../strategies/retry/options.ts';
import { retryStrategy } from '../strategies/retry/strategy.ts';
import { ConfigError, type ConfigProblem, got } from './config-error.ts';
import { describeError } from './credentials.ts';
import { closestName } from './did-you-mean.ts';
import {
  type JobDefinition,
  type JobIsolation,
  type JobLockOptions,
  type JobResourceLimits,
  ledgerKeyOf,
  type ResilConfig,
  type ResolvedConfig,
  type ResolvedJob,
  type SchedulerTelemetry,
} from './job.ts';
import { configDefaults } from './job-defaults.ts';
import { isValidTimezone, pausedCronOptions } from './timezone.ts';

/**
 * `names`, checked against the type: a key of `T` missing from the list, or a name `T` lacks, is a
 * compile error, so the lists of allowed option names cannot drift from the option types.
 */
function optionNames<T>() {
  return <const L extends readonly (keyof T & string)[]>(
    names: L &
      ([Exclude<keyof T, L[number]>] extends [never] ? unknown : { missing: Exclude<keyof T, L[number]> }),
  ): L => names;
}

const hookOptions = ['onSuccess', 'onFailure', 'onSkip'] as const;
export const configOptions = optionNames<ResilConfig>()([
  'store',
  'timezone',
  'instance',
  'shutdownGrace',
  'ledgerRetention',
  'ledgerRecordLimit',
  'isolation',
  ...hookOptions,
  'telemetry',
  'jobs',
]);
export const jobOptions = optionNames<JobDefinition>()([
  'name',
  'schedule',
  'run',
  'timezone',
  'lock',
  'timeout',
  'retry',
  'enabled',
  'catchUp',
  'startingDeadline',
  'overlap',
  'jitter',
  'isolation',
  'resourceLimits',
  ...hookOptions,
]);
export const lockOptions = optionNames<JobLockOptions>()(['key', 'ttl', 'wait']);
export const resourceLimitOptions = optionNames<JobResourceLimits>()([
  'maxOldGenerationSizeMb',
  'maxYoungGenerationSizeMb',
  'codeRangeSizeMb',
  'stackSizeMb',
]);
export const isolations: readonly JobIsolation[] = ['none', 'worker'];
export const retryOptions = optionNames<RetryStrategyOptions>()([
  'maxRetryAttempts',
  'delay',
  'backoffType',
  'useJitter',
  'maxDelay',
  'shouldHandle',
  'delayGenerator',
  'onRetry',
  'randomizer',
]);

const noTelemetry = { timeProvider: systemTimeProvider, report: () => {} };

type Report = (problem: { option?: string; value?: unknown; message: string }) => void;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkUnknownOptions(
  object: Record<string, unknown>,
  known: readonly string[],
  prefix: string,
  report: Report,
): void {
  for (const key of Object.keys(object)) {
    if (known.includes(key)) continue;
    const suggestion = closestName(key, known);
    report({
      option: `${prefix}${key}`,
      message: `unknown option${suggestion === undefined ? '' : ` (did you mean "${prefix}${suggestion}"?)`}; known options: ${known.join(', ')}`,
    });
  }
}

/** Milliseconds, or `undefined` after reporting a bad duration. */
function duration(
  value: unknown,
  option: string,
  report: Report,
  options: { positive: boolean },
): number | undefined {
  try {
    return options.positive ? parsePositiveDuration(value, option) : parseDuration(value, option);
  } catch (error) {
    if (!isInvalidOptionError(error)) throw error;
    report({ option, value, message: `expected ${error.expected}, ${got(value)}` });
    return undefined;
  }
}

/**
 * The problem with the key the store keeps `job`'s runs and lease under (`lock.key`, else its
 * name), when the store cannot keep it (`LockStore.checkKey`): refused at load, so that such a job
 * does not fail every fire.
 */
function refusedKey(
  store: LockStore,
  job: ResolvedJob,
): Pick<ConfigProblem, 'option' | 'value' | 'message'> | undefined {
  const key = ledgerKeyOf(job);
  try {
    store.checkKey?.(key);
    return undefined;
  } catch (error) {
    if (!isInvalidKeyError(error)) throw error;
    return {
      option: key === job.name ? 'name' : 'lock.key',
      value: key,
      message: `${error.store} cannot keep it as a key: ${error.reason}, ${got(key)}`,
    };
  }
}

function timezone(value: unknown, option: string, report: Report): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && value !== '' && isValidTimezone(value)) return value;
  report({
    option,
    value,
    message: `expected an IANA timezone such as "UTC" or "Europe/Paris", ${got(value)}`,
  });
  return undefined;
}

type JobHooks = Pick<ResilConfig, (typeof hookOptions)[number]>;

/** The hooks of `object` that are functions (or absent); reports any other value. */
function hooks(object: Record<string, unknown>, report: Report): JobHooks {
  const valid: Record<string, unknown> = {};
  for (const option of hookOptions) {
    const value = object[option];
    if (value === undefined) continue;
    if (typeof value === 'function') valid[option] = value;
    else report({ option, value, message: `expected a function (event) => ..., ${got(value)}` });
  }
  return valid as JobHooks;
}

export const telemetryMembers = optionNames<SchedulerTelemetry>()([
  'pipelineListener',
  'onSchedulerEvent',
  'flush',
]);
const telemetryExample = 'openTelemetry({ tracer, meter }) from resil/opentelemetry';

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

/** The config's `telemetry`, or `undefined` after reporting what is wrong with it. */
function telemetry(value: unknown, report: Report): SchedulerTelemetry | undefined {
  if (value === undefined) return undefined;
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null || Array.isArray(value)) {
    report({
      option: 'telemetry',
      value,
      message: `expected a telemetry object such as ${telemetryExample}, ${got(value)}`,
    });
    return undefined;
  }
  const members = value as Record<string, unknown>;
  // Only a plain object literal's keys are options (a typo there is worth a message). openTelemetry()
  // returns a function that is also one, and a class instance keeps its own state in fields: their
  // own properties are not options.
  const prototype = typeof value === 'object' ? Object.getPrototypeOf(value) : undefined;
  if (prototype === Object.prototype || prototype === null)
    checkUnknownOptions(members, telemetryMembers, 'telemetry.', report);
  let valid = true;
  for (const member of telemetryMembers) {
    if (members[member] === undefined || typeof members[member] === 'function') continue;
    valid = false;
    report({
      option: `telemetry.${member}`,
      value: members[member],
      message: `expected a function, ${got(members[member])}`,
    });
  }
  if (valid && members.pipelineListener === undefined && members.onSchedulerEvent === undefined) {
    report({
      option: 'telemetry',
      value,
      message:
        typeof value === 'function'
          ? `expected pipelineListener(job) and/or onSchedulerEvent(event), as ${telemetryExample} has; a function alone is a pipeline's listener (new PipelineBuilder({ telemetry }))`
          : `expected pipelineListener(job) and/or onSchedulerEvent(event), as ${telemetryExample} has; got neither`,
    });
    return undefined;
  }
  return valid ? (value as SchedulerTelemetry) : undefined;
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

/** Loads job modules (absolute paths): each one's default export, or why it could not be loaded. */
export type ImportJobs = (paths: readonly string[]) => Promise<PromiseSettledResult<unknown>[]>;

/**
 * Loads the jobs given as module paths (`jobs: ['./jobs/heartbeat.ts']`, the only way a JSON or
 * YAML config can name one), all in one call: each module's default export is the job.
 */
async function loadJobModules(
  jobs: readonly unknown[],
  file: string,
  problems: ConfigProblem[],
  importJobs: ImportJobs,
): Promise<unknown[]> {
  const named = jobs.flatMap((entry, index) => (typeof entry === 'string' ? [{ entry, index }] : []));
  if (named.length === 0) return [...jobs];
  const loaded = await importJobs(named.map(({ entry }) => resolve(dirname(file), entry)));
  const entries = [...jobs];
  for (const [at, { entry, index }] of named.entries()) {
    const result = loaded[at]!;
    if (result.status === 'fulfilled') {
      entries[index] = result.value;
      continue;
    }
    const error: unknown = result.reason;
    problems.push({
      file,
      job: `jobs[${index}]`,
      value: entry,
      message: `cannot load job module ${JSON.stringify(entry)}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
    });
    entries[index] = undefined;
  }
  return entries;
}

/** The isolation `value` names, or undefined after reporting a value that is not one. */
function isolation(value: unknown, report: Report): JobIsolation | undefined {
  if (value === undefined) return undefined;
  if (isolations.includes(value as JobIsolation)) return value as JobIsolation;
  const suggestion = typeof value === 'string' ? closestName(value, isolations) : undefined;
  report({
    option: 'isolation',
    value,
    message: `expected one of ${isolations.map((name) => `'${name}'`).join(', ')}${suggestion === undefined ? '' : ` (did you mean '${suggestion}'?)`}, ${got(value)}`,
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

function resolveJob(
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
    enabled: job.enabled ?? true,
    catchUpMs,
    startingDeadlineMs: startingDeadlineMs!,
    overlap,
    jitterMs,
    isolation: jobIsolation,
    resourceLimits: limits,
    onSuccess: jobHooks.onSuccess ?? defaultHooks.onSuccess,
    onFailure: jobHooks.onFailure ?? defaultHooks.onFailure,
    onSkip: jobHooks.onSkip ?? defaultHooks.onSkip,
    telemetry: jobTelemetry,
  };
}

/**
 * Validates a loaded config and applies the defaults. Reports every problem at once in one
 * {@link ConfigError}, one line per problem naming the file, the job, the option and the value.
 */
export async function resolveConfig(
  raw: unknown,
  file: string,
  options: {
    /** Loads the jobs given as module paths (relative to `file`, passed resolved): their default exports. */
    importJobs?: ImportJobs;
  } = {},
): Promise<ResolvedConfig> {
  if (options.importJobs === undefined || !isPlainObject(raw) || !Array.isArray(raw.jobs)) {
    return resolveConfigSync(raw, file);
  }
  const problems: ConfigProblem[] = [];
  const entries = await loadJobModules(raw.jobs, file, problems, options.importJobs);
  return resolveConfigSync(raw, file, { entries, problems });
}

/**
 * {@link resolveConfig} for jobs given as objects (a job given as a module path is a problem):
 * what `createScheduler()` validates its options with.
 */
export function resolveConfigSync(
  raw: unknown,
  file: string,
  loaded?: { entries: unknown[]; problems: ConfigProblem[] },
): ResolvedConfig {
  const problems: ConfigProblem[] = [];
  const report: Report = (problem) => problems.push({ file, ...problem });
  if (!isPlainObject(raw)) {
    throw new ConfigError({
      file,
      value: raw,
      message: `the config must be an object (export default defineConfig({ jobs: [...] })), ${got(raw)}`,
    });
  }

  checkUnknownOptions(raw, configOptions, '', report);
  let store: LockStore | undefined;
  if (raw.store === undefined) {
    store = undefined;
  } else if (isLockStore(raw.store)) {
    store = raw.store;
  } else {
    report({
      option: 'store',
      value: raw.store,
      message: `expected a LockStore (acquire, renew and release methods), such as new RedisLockStore(client), ${got(raw.store)}`,
    });
  }
  const defaultTimezone = timezone(raw.timezone, 'timezone', report);
  if (raw.instance !== undefined && (typeof raw.instance !== 'string' || raw.instance === '')) {
    report({
      option: 'instance',
      value: raw.instance,
      message: `expected a non-empty string, ${got(raw.instance)}`,
    });
  }
  const shutdownGraceMs = duration(
    raw.shutdownGrace ?? configDefaults.shutdownGrace,
    'shutdownGrace',
    report,
    {
      positive: false,
    },
  );
  const ledgerRetentionMs = duration(
    raw.ledgerRetention ?? configDefaults.ledgerRetention,
    'ledgerRetention',
    report,
    { positive: true },
  );

  const ledgerRecordLimit = raw.ledgerRecordLimit ?? configDefaults.ledgerRecordLimit;
  if (
    !Number.isSafeInteger(ledgerRecordLimit) ||
    (ledgerRecordLimit as number) < 1 ||
    (ledgerRecordLimit as number) > maxLedgerRecordLimit
  ) {
    report({
      option: 'ledgerRecordLimit',
      value: ledgerRecordLimit,
      message: `expected a whole number from 1 to 1,000,000, ${got(ledgerRecordLimit)}`,
    });
  }

  const defaultHooks = hooks(raw, report);
  const defaultIsolation = isolation(raw.isolation, report) ?? configDefaults.isolation;
  const telemetryConfig = telemetry(raw.telemetry, report);

  const jobs: ResolvedJob[] = [];
  if (!Array.isArray(raw.jobs)) {
    report({
      option: 'jobs',
      value: raw.jobs,
      message:
        raw.jobs === undefined
          ? 'missing jobs: an array of jobs ({ name, schedule, run }) or job module paths'
          : `expected an array of jobs, ${got(raw.jobs)}`,
    });
  } else {
    // Problems loading job modules come where the jobs are checked, in the order of the file.
    if (loaded !== undefined) problems.push(...loaded.problems);
    const entries =
      loaded?.entries ??
      raw.jobs.map((entry, index) => {
        if (typeof entry !== 'string') return entry;
        problems.push({
          file,
          job: `jobs[${index}]`,
          value: entry,
          message: 'expected a job object ({ name, schedule, run }); module paths work in a config file only',
        });
        return undefined;
      });
    const firstIndexOfName = new Map<string, number>();
    const cronErrors = new Map<string, string | undefined>();
    entries.forEach((entry, index) => {
      if (entry === undefined && typeof (raw.jobs as unknown[])[index] === 'string') return;
      const job = resolveJob(
        entry,
        index,
        defaultTimezone,
        defaultIsolation,
        defaultHooks,
        telemetryConfig,
        cronErrors,
        (label, problem) => problems.push({ file, job: label, ...problem }),
      );
      const name = isPlainObject(entry) && typeof entry.name === 'string' ? entry.name : undefined;
      if (name !== undefined) {
        const first = firstIndexOfName.get(name);
        if (first === undefined) {
          firstIndexOfName.set(name, index);
        } else {
          problems.push({
            file,
            job: name,
            option: 'name',
            value: name,
            message: `duplicate job name: jobs[${first}] and jobs[${index}] are both ${JSON.stringify(name)}; names must be unique`,
          });
          return;
        }
      }
      if (job === undefined) return;
      const refused = store === undefined ? undefined : refusedKey(store, job);
      if (refused !== undefined) {
        problems.push({ file, job: job.name, ...refused });
        return;
      }
      jobs.push(job);
    });
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    filepath: file,
    store: store ?? new MemoryLockStore(),
    instance: (raw.instance as string | undefined) ?? `${hostname()}:${process.pid}`,
    shutdownGraceMs: shutdownGraceMs!,
    ledgerRetentionMs: ledgerRetentionMs!,
    ledgerRecordLimit: ledgerRecordLimit as number,
    jobs,
    telemetry: telemetryConfig,
  };
}
