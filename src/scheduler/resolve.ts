import { maxLedgerRecordLimit } from '../ledger/defaults.ts';
import { isInvalidKeyError } from '../strategies/lock/errors.ts';
import { isLockStore, type LockStore } from '../strategies/lock/store.ts';
import { ConfigError, type ConfigProblem, got } from './config-error.ts';
import { ledgerKeyOf, type ResolvedConfig, type ResolvedJob, type SchedulerTelemetry } from './job.ts';
import { configDefaults, defaultInstanceName, defaultStore } from './job-defaults.ts';
import { type ImportJob, loadJobModules } from './job-modules.ts';
import {
  checkUnknownOptions,
  duration,
  hooks,
  isolation,
  isPlainObject,
  type Report,
  timezone,
} from './option-checks.ts';
import { configOptions, telemetryMembers } from './option-names.ts';
import { resolveJob } from './validate-job.ts';

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

const telemetryExample = 'openTelemetry({ tracer, meter }) from resil/opentelemetry';

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

/**
 * Validates a loaded config and applies the defaults. Reports every problem at once in one
 * {@link ConfigError}, one line per problem naming the file, the job, the option and the value.
 */
export async function resolveConfig(
  raw: unknown,
  file: string,
  options: {
    /** Loads a job given as a module path (relative to `file`, passed resolved): its default export. */
    importJob?: ImportJob;
  } = {},
): Promise<ResolvedConfig> {
  if (options.importJob === undefined || !isPlainObject(raw) || !Array.isArray(raw.jobs)) {
    return resolveConfigSync(raw, file);
  }
  const problems: ConfigProblem[] = [];
  const entries = await loadJobModules(raw.jobs, file, problems, options.importJob);
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
    store: store ?? defaultStore(),
    instance: (raw.instance as string | undefined) ?? defaultInstanceName(),
    shutdownGraceMs: shutdownGraceMs!,
    ledgerRetentionMs: ledgerRetentionMs!,
    ledgerRecordLimit: ledgerRecordLimit as number,
    jobs,
    telemetry: telemetryConfig,
  };
}
