import { dirname, resolve } from 'node:path';
import type { ConfigProblem } from './config-error.ts';

/** Imports a job module (an absolute path) and returns its default export: the job. */
export type ImportJob = (path: string) => Promise<unknown>;

/**
 * Loads the jobs given as module paths (`jobs: ['./jobs/heartbeat.ts']`, the only way a JSON or
 * YAML config can name one): one after another, as static imports would load them, so that a
 * module that fails to load does so alone (a problem each) and a module that several of them
 * import is evaluated once.
 */
export async function loadJobModules(
  jobs: readonly unknown[],
  file: string,
  problems: ConfigProblem[],
  importJob: ImportJob,
): Promise<unknown[]> {
  const entries = [...jobs];
  for (const [index, entry] of jobs.entries()) {
    if (typeof entry !== 'string') continue;
    try {
      entries[index] = await importJob(resolve(dirname(file), entry));
    } catch (error) {
      problems.push({
        file,
        job: `jobs[${index}]`,
        value: entry,
        message: `cannot load job module ${JSON.stringify(entry)}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
      });
      entries[index] = undefined;
    }
  }
  return entries;
}
