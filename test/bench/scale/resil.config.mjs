// The bench's jobs as a resil config (the default MemoryLockStore): `resil run` and
// `resil jobs list --config resil.config.mjs`, with RESIL_BENCH_JOBS naming the jobs file.
import { readFileSync } from 'node:fs';

const { timezone, jobs } = JSON.parse(readFileSync(process.env.RESIL_BENCH_JOBS, 'utf8'));
export default {
  timezone,
  jobs: jobs.map(({ name, schedule }) => ({ name, schedule, run: () => {} })),
};
