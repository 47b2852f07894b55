import { dirname, resolve } from 'node:path';
import type { ConfigProblem } from './config-error.ts';

/** Loads job modules (absolute paths): each one's default export, or why it could not be loaded. */
export type ImportJobs = (paths: readonly string[]) => Promise<PromiseSettledResult<unknown>[]>;

/**
 * Loads the jobs given as module paths (`jobs: ['./jobs/heartbeat.ts']`, the only way a JSON or
 * YAML config can name one), all in one call: each module's default export is the job.
 */
export async function loadJobModules(
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
