// `node croner-idle.mjs jobs.json`: croner alone with the bench's jobs, one Cron per job, as its
// README shows. Prints `started` once every job is scheduled, then idles until killed.
import { readFileSync } from 'node:fs';
import { Cron } from 'croner';

const { timezone, jobs } = JSON.parse(readFileSync(process.argv[2], 'utf8'));
for (const { schedule } of jobs) new Cron(schedule, { timezone }, () => {});
console.log(`started: ${jobs.length} jobs`);
