import { JobSchedule, jitterOf } from '../../scheduler/occurrence.ts';
import type { CommandHelpers } from '../command-helpers.ts';
import { formatTable } from '../output.ts';
import { formatRelative, formatSpan, formatTimeIn, localTimezone } from '../time-format.ts';
import { jobNamed, nextRuns } from '../views/jobs.ts';

/** `+250ms`, `+42s`, `+3m 12s`: the delay after the instant. */
function formatJitter(ms: number): string {
  return `+${ms < 1_000 ? `${ms}ms` : formatSpan(ms)}`;
}

/** `resil jobs next <name> [-n N] [--json]`: exit 0, or 2 for an unknown job. */
export async function showNextRuns(
  helpers: CommandHelpers,
  name: string,
  options: { count: number; json: boolean },
): Promise<void> {
  const config = await helpers.loadConfig();
  const job = jobNamed(config, name);
  const now = Date.now();
  const instants = nextRuns(job, now, options.count);
  if (options.json) {
    helpers.stdout.write(
      `${JSON.stringify(
        instants.map((instant) => new Date(instant).toISOString()),
        null,
        2,
      )}\n`,
    );
    return;
  }
  const { styles } = helpers;
  const timezone = job.timezone ?? localTimezone();
  if (instants.length === 0) {
    helpers.stdout.write(`${name}: the schedule ${job.schedule} (${timezone}) has no future occurrence\n`);
  } else {
    // Only a job with jitter gets the column: the delay each occurrence's fires wait after the instant.
    const jittered = (job.jitterMs ?? 0) > 0;
    // Only while an instant stands for a local time a spring-forward gap skipped (dst: 'shift').
    const schedule = new JobSchedule(job);
    const shifted = instants.map((instant) => schedule.isShifted(instant));
    const withDst = shifted.includes(true);
    const header = [
      `NEXT RUN (${timezone})`,
      'UTC',
      'IN',
      ...(jittered ? ['JITTER'] : []),
      ...(withDst ? ['DST'] : []),
    ];
    const rows = instants.map((instant, index) => {
      const at = new Date(instant);
      const row = [formatTimeIn(at, timezone), at.toISOString(), styles.dim(formatRelative(at, now))];
      if (jittered) row.push(formatJitter(jitterOf(job, instant)));
      if (withDst) row.push(shifted[index] ? styles.yellow('shifted: its local time is in the gap') : '');
      return row;
    });
    helpers.stdout.write(`${formatTable(header.map(styles.dim), rows)}\n`);
  }
  if (!job.enabled) {
    helpers.stderr.write(
      helpers.errorStyles.dim(`note: ${name} is disabled (enabled: false): resil run does not fire it\n`),
    );
  }
}
