import { hash } from 'node:crypto';
import type { InstanceRegistry } from '../ledger/contract.ts';
import { durationMs } from '../pipeline/duration.ts';
import type { RetryStrategyOptions } from '../strategies/retry/options.ts';
import type { JobChaosOptions, JobLogger, ResolvedJob } from './job.ts';
import { chaosKinds } from './option-names.ts';

/** A field's value in a job's definition, as JSON carries it. */
export type DefinitionValue =
  | string
  | number
  | boolean
  | null
  | { readonly [field: string]: DefinitionValue };

/** The fields of a job's definition, by name, as `jobs list --json` `drift` names them. */
export type JobDefinition = Readonly<Record<string, DefinitionValue>>;

/**
 * What every instance of a fleet must agree on for a job to fire the same way everywhere, read
 * from the job as the config resolved it. A new option that changes when or how a job fires is
 * one line here; its name is the field's name in `drift`. A field read as `undefined` is left out
 * of the definition: an option added later counts only for the jobs that use it, so the
 * fingerprints of the others stay those of the release before it.
 */
const definitionFields: Readonly<Record<string, (job: ResolvedJob) => DefinitionValue | undefined>> = {
  schedule: (job) => job.schedule,
  // The machine's zone when the job names none: two machines in different zones fire differently.
  timezone: (job) => job.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
  dst: (job) => job.dst ?? 'shift',
  overlap: (job) => job.overlap,
  // Absent at 1, the default: a job that does not bound its runs has the fingerprint it had before.
  concurrency: (job) => ((job.concurrency ?? 1) > 1 ? job.concurrency! : undefined),
  lockKey: (job) => (job.lock === false ? null : job.lock.key),
  lockTtlMs: (job) => (job.lock === false ? null : job.lock.ttlMs),
  timeoutMs: (job) => job.timeoutMs ?? null,
  retry: (job) => retryDefinitionOf(job.retry),
  chaos: (job) => chaosDefinitionOf(job.chaos),
};

/**
 * The chaos options that are data, per strategy the job has (`latency` in ms); undefined when it
 * has none. `fault` and the generators are values and callbacks that cannot be compared across processes.
 */
function chaosDefinitionOf(chaos: JobChaosOptions | undefined): DefinitionValue | undefined {
  if (chaos === undefined) return undefined;
  const definition: Record<string, DefinitionValue> = {};
  for (const kind of chaosKinds) {
    const options = chaos[kind];
    if (options === undefined) continue;
    definition[kind] = {
      injectionRate: options.injectionRate ?? null,
      enabled: options.enabled ?? null,
      ...(kind === 'latency'
        ? { latencyMs: chaos.latency?.latency === undefined ? null : durationMs(chaos.latency.latency) }
        : {}),
    };
  }
  return Object.keys(definition).length === 0 ? undefined : definition;
}

/** The retry options that are data (callbacks cannot be compared across processes), durations in ms. */
function retryDefinitionOf(retry: false | RetryStrategyOptions): DefinitionValue {
  if (retry === false) return false;
  const delay = (value: RetryStrategyOptions['delay']) => (value === undefined ? null : durationMs(value));
  return {
    // Infinity has no JSON number.
    maxRetryAttempts:
      retry.maxRetryAttempts === undefined
        ? null
        : Number.isFinite(retry.maxRetryAttempts)
          ? retry.maxRetryAttempts
          : String(retry.maxRetryAttempts),
    delayMs: delay(retry.delay),
    backoffType: retry.backoffType ?? null,
    useJitter: retry.useJitter ?? null,
    maxDelayMs: delay(retry.maxDelay),
  };
}

const definitionEntries = Object.entries(definitionFields);

/** The job's definition: each of {@link definitionFields}, in their order. */
export function definitionOf(job: ResolvedJob): JobDefinition {
  const definition: Record<string, DefinitionValue> = {};
  for (const [field, read] of definitionEntries) {
    const value = read(job);
    if (value !== undefined) definition[field] = value;
  }
  return definition;
}

/** 8 characters of a SHA-256 (48 bits): variants of one job tell apart, a collision is 1 in 2^48. */
function shortHash(text: string, length = 8): string {
  return hash('sha256', text, 'base64url').slice(0, length);
}

/** The definitions one instance publishes in the instance registry's `definitions` string. */
export interface PublishedDefinitions {
  /** One hash of every job's name and fingerprint: equal digests, no drift between two instances. */
  readonly digest: string;
  /** Each job's fingerprint, by name: published only while some live instance has another digest. */
  readonly fingerprints?: Readonly<Record<string, string>>;
  /** The full definitions of the jobs in drift only. */
  readonly definitions?: Readonly<Record<string, JobDefinition>>;
}

/** Format version of the published string: a reader skips what it does not know. */
const formatVersion = 1;

/**
 * An instance's own job definitions, fingerprinted once at start: nothing of this runs per fire.
 *
 * @example
 * const own = new FleetDefinitions(config.jobs);
 * own.publish({ fingerprints: false, definitionsOf: [] }); // '{"v":1,"d":"Qm1x2k9aZ0rT"}'
 */
export class FleetDefinitions {
  readonly digest: string;
  /** Each job's fingerprint, by name. */
  readonly fingerprints: ReadonlyMap<string, string>;
  /** The jobs, by name: a definition is made again when it is published (only during drift), not kept. */
  readonly #jobs = new Map<string, ResolvedJob>();

  constructor(jobs: readonly ResolvedJob[]) {
    const fingerprints = new Map<string, string>();
    for (const job of jobs) {
      this.#jobs.set(job.name, job);
      fingerprints.set(job.name, shortHash(JSON.stringify(definitionOf(job))));
    }
    this.fingerprints = fingerprints;
    const names = [...fingerprints.keys()].sort();
    this.digest = shortHash(names.map((name) => `${name}\n${fingerprints.get(name)}`).join('\n'), 12);
  }

  definition(job: string): JobDefinition | undefined {
    const resolved = this.#jobs.get(job);
    return resolved === undefined ? undefined : definitionOf(resolved);
  }

  /** The string to register: the digest, and the fingerprints and definitions asked for. */
  publish(options: { fingerprints: boolean; definitionsOf: Iterable<string> }): string {
    const published: { v: number; d: string; h?: Record<string, string>; f?: Record<string, JobDefinition> } =
      {
        v: formatVersion,
        d: this.digest,
      };
    if (options.fingerprints) published.h = Object.fromEntries(this.fingerprints);
    const definitions: Record<string, JobDefinition> = {};
    for (const job of options.definitionsOf) {
      const definition = this.definition(job);
      if (definition !== undefined) definitions[job] = definition;
    }
    if (Object.keys(definitions).length > 0) published.f = definitions;
    return JSON.stringify(published);
  }
}

/** Reads a published string; undefined for none, or one this release cannot read. */
export function parsePublishedDefinitions(text: string | undefined): PublishedDefinitions | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed = JSON.parse(text) as { v?: unknown; d?: unknown; h?: unknown; f?: unknown };
    if (parsed?.v !== formatVersion || typeof parsed.d !== 'string') return undefined;
    const isRecord = (value: unknown): value is Record<string, never> =>
      typeof value === 'object' && value !== null && !Array.isArray(value);
    return {
      digest: parsed.d,
      ...(isRecord(parsed.h) ? { fingerprints: parsed.h } : {}),
      ...(isRecord(parsed.f) ? { definitions: parsed.f } : {}),
    };
  } catch {
    return undefined;
  }
}

/** One definition of a job in drift, and the live instances that run it. */
export interface DriftVariant {
  /** The definition's fingerprint (8 characters). */
  fingerprint: string;
  /** The instances that run the job with this definition, by name. */
  instances: string[];
  /**
   * The fields in which the variants differ, with this variant's values (null where it has no such
   * field). null until an instance of every variant has published its definition (within one
   * heartbeat of the drift appearing).
   */
  fields: Record<string, DefinitionValue> | null;
}

/** A live instance as {@link findConfigDrift} reads it. */
export interface PublishingInstance {
  readonly instance: string;
  readonly definitions?: string | undefined;
}

/**
 * The jobs that live instances run with different definitions, each with its variants (sorted by
 * their first instance). A job that only some instances run is not drift (`resil run --job` runs a
 * subset); instances that publish no definitions are left out. `own`, this process's definitions,
 * fills in what a live instance with the same digest has not published.
 */
export function findConfigDrift(
  instances: readonly PublishingInstance[],
  own?: FleetDefinitions,
): Map<string, DriftVariant[]> {
  const drift = new Map<string, DriftVariant[]>();
  const published = instances.flatMap(({ instance, definitions }) => {
    const parsed = parsePublishedDefinitions(definitions);
    return parsed === undefined ? [] : [{ instance, parsed }];
  });
  const digests = new Set(published.map(({ parsed }) => parsed.digest));
  if (digests.size < 2) return drift;

  const fingerprintsByDigest = new Map<string, ReadonlyMap<string, string>>();
  if (own !== undefined) fingerprintsByDigest.set(own.digest, own.fingerprints);
  const definitions = new Map<string, JobDefinition>();
  for (const { parsed } of published) {
    if (parsed.fingerprints !== undefined && !fingerprintsByDigest.has(parsed.digest)) {
      fingerprintsByDigest.set(parsed.digest, new Map(Object.entries(parsed.fingerprints)));
    }
    for (const [job, definition] of Object.entries(parsed.definitions ?? {})) {
      const fingerprint = parsed.fingerprints?.[job];
      if (fingerprint !== undefined) definitions.set(`${job}\n${fingerprint}`, definition);
    }
  }

  // Instances by fingerprint, by job; only jobs whose fingerprints differ are kept below.
  const byJob = new Map<string, Map<string, string[]>>();
  for (const { instance, parsed } of published) {
    const fingerprints = fingerprintsByDigest.get(parsed.digest);
    if (fingerprints === undefined) continue;
    for (const [job, fingerprint] of fingerprints) {
      let variants = byJob.get(job);
      if (variants === undefined) {
        variants = new Map();
        byJob.set(job, variants);
      }
      const runners = variants.get(fingerprint);
      if (runners === undefined) variants.set(fingerprint, [instance]);
      else runners.push(instance);
    }
  }

  for (const [job, variants] of byJob) {
    if (variants.size < 2) continue;
    const known = [...variants.keys()].map(
      (fingerprint) =>
        definitions.get(`${job}\n${fingerprint}`) ??
        (own?.fingerprints.get(job) === fingerprint ? own.definition(job) : undefined),
    );
    const complete = known.every((definition) => definition !== undefined);
    const differing = complete ? differingFields(known as JobDefinition[]) : [];
    drift.set(
      job,
      [...variants]
        .map(([fingerprint, runners], index) => ({
          fingerprint,
          instances: runners.sort(),
          fields: complete
            ? Object.fromEntries(differing.map((field) => [field, known[index]![field] ?? null]))
            : null,
        }))
        .sort((a, b) => compareNames(a.instances[0]!, b.instances[0]!)),
    );
  }
  return drift;
}

function differingFields(definitions: readonly JobDefinition[]): string[] {
  const fields = new Set(definitions.flatMap((definition) => Object.keys(definition)));
  return [...fields].filter((field) => {
    const values = new Set(definitions.map((definition) => JSON.stringify(definition[field] ?? null)));
    return values.size > 1;
  });
}

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A running instance's side of config drift, once per heartbeat (never per fire): reads the
 * registry, finds the drift, logs where it starts, changes or ends, and says what to publish, so
 * that the fleet's instances learn each other's fingerprints and definitions only while they differ.
 */
export class ConfigDriftWatch {
  readonly #own: FleetDefinitions;
  readonly #registry: Pick<InstanceRegistry, 'listInstances'>;
  readonly #instance: string;
  readonly #logger: Pick<JobLogger, 'warn' | 'info'>;
  readonly #digestOnly: string;
  #drift: ReadonlyMap<string, DriftVariant[]> = new Map();
  /** The live instances that run the same jobs by the last registry read, this one included. */
  #sameJobsInstances: readonly string[];
  /** What was logged of each job in drift, to log again only when it changes. */
  readonly #logged = new Map<string, string>();
  #published: string;

  constructor(options: {
    own: FleetDefinitions;
    registry: Pick<InstanceRegistry, 'listInstances'>;
    instance: string;
    logger: Pick<JobLogger, 'warn' | 'info'>;
  }) {
    this.#own = options.own;
    this.#registry = options.registry;
    this.#instance = options.instance;
    this.#logger = options.logger;
    this.#sameJobsInstances = [this.#instance];
    this.#digestOnly = this.#own.publish({ fingerprints: false, definitionsOf: [] });
    this.#published = this.#digestOnly;
  }

  /**
   * The live instances that published the same definitions of the same jobs (the same digest) at
   * the last registry read, this one included (alone before the first).
   */
  get sameJobsInstances(): readonly string[] {
    return this.#sameJobsInstances;
  }

  /** The jobs this instance runs that live instances run with other definitions. */
  get drift(): ReadonlyMap<string, DriftVariant[]> {
    return this.#drift;
  }

  /**
   * Reads the registry and returns what the heartbeat registers as `definitions`; logs a warning
   * when a job's drift is known in full (each variant's fields) or changes, and a line when it
   * ends. A failed read
   * rejects; the heartbeat then registers {@link published} again.
   */
  async next(): Promise<string> {
    const live = await this.#registry.listInstances();
    const others = live.filter((entry) => entry.instance !== this.#instance);
    const found = findConfigDrift(
      [...others, { instance: this.#instance, definitions: this.#digestOnly }],
      this.#own,
    );
    const drift = new Map([...found].filter(([job]) => this.#own.fingerprints.has(job)));
    this.#log(drift);
    this.#drift = drift;
    const published = others.map((entry) => ({
      instance: entry.instance,
      parsed: parsePublishedDefinitions(entry.definitions),
    }));
    this.#sameJobsInstances = [
      this.#instance,
      ...published
        .filter(({ parsed }) => parsed?.digest === this.#own.digest)
        .map(({ instance }) => instance),
    ];
    const disagreeing = published.some(
      ({ parsed }) => parsed !== undefined && parsed.digest !== this.#own.digest,
    );
    // One instance of each digest tells the fleet its fingerprints (the first by name): the others
    // with that digest have the same ones, and 10,000 jobs' fingerprints are some 230 kB.
    const toldByAnother = published.some(
      ({ instance, parsed }) =>
        parsed?.digest === this.#own.digest && parsed.fingerprints !== undefined && instance < this.#instance,
    );
    const fingerprints = disagreeing && !toldByAnother;
    this.#published = this.#own.publish({ fingerprints, definitionsOf: drift.keys() });
    return this.#published;
  }

  /** What the last heartbeat published (the digest alone before the first). */
  get published(): string {
    return this.#published;
  }

  #log(drift: ReadonlyMap<string, DriftVariant[]>): void {
    for (const [job, variants] of drift) {
      // Logged once every variant's definition is known: within a heartbeat, and worth one line.
      if (variants.some((variant) => variant.fields === null)) continue;
      const described = JSON.stringify(variants);
      if (this.#logged.get(job) === described) continue;
      this.#logged.set(job, described);
      this.#logger.warn(
        { job, drift: variants },
        'config drift: live instances run different definitions of this job (a rolling deploy in progress, or instances left behind)',
      );
    }
    for (const job of this.#logged.keys()) {
      if (drift.has(job)) continue;
      this.#logged.delete(job);
      this.#logger.info(
        { job },
        'config drift ended: every live instance runs the same definition of this job',
      );
    }
  }
}
