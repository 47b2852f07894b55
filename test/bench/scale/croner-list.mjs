// `node croner-list.mjs jobs.json`: what `resil jobs list` prints, with croner alone: each job's
// name, schedule, timezone and next run.
import { readFileSync } from 'node:fs';
import { Cron } from 'croner';

const { timezone, jobs } = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const now = new Date();
const lines = jobs.map(({ name, schedule }) => {
  const next = new Cron(schedule, { timezone, paused: true }).nextRun(now);
  return `${name}  ${schedule}  ${timezone}  ${next?.toISOString() ?? 'never'}`;
});
process.stdout.write(`${lines.join('\n')}\n`);
