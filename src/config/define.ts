import type { JobDefinition, ResilConfig } from '../scheduler/job.ts';

/**
 * Types a `resil.config.ts` so editors complete every option. Returns its argument.
 *
 * @example
 * export default defineConfig({ timezone: 'UTC', jobs: [{ name: 'heartbeat', schedule: '*\/10 * * * * *', run: async () => {} }] });
 */
export function defineConfig(config: ResilConfig): ResilConfig {
  return config;
}

/**
 * Types one job (for a job in its own file). Returns its argument.
 *
 * @example
 * export default defineJob({ name: 'nightly-report', schedule: '0 2 * * *', lock: { ttl: '1m' }, run: async (ctx) => {} });
 */
export function defineJob(job: JobDefinition): JobDefinition {
  return job;
}
