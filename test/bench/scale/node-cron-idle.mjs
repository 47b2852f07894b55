// `node node-cron-idle.mjs jobs.json`: node-cron with the bench's jobs, one task per job, as its
// README shows. Prints `started` once every job is scheduled, then idles until killed.
import { readFileSync } from 'node:fs';
import cron from 'node-cron';

const { timezone, jobs } = JSON.parse(readFileSync(process.argv[2], 'utf8'));
for (const { schedule } of jobs) cron.schedule(schedule, () => {}, { timezone });
console.log(`started: ${jobs.length} jobs`);
