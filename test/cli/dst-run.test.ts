import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SpawnedProcess, spawnProcess } from '../support/processes.ts';
import { binary, createProject, ensureCliBuilt, type Project, tsConfig } from './cli-support.ts';
import { libfaketime, libfaketimeAvailable } from './run-process.ts';

// `resil run` itself on the 2027 DST transition days, its clock set a few seconds before each
// instant that matters with libfaketime (timers at real speed): which of the jobs fire, for both
// policies, in Berlin and New York. On the in-memory store, whose clock is the process's: a shared
// store judges instants on the server's clock, which libfaketime cannot move (redis-server hangs
// under it), so the same rule on Redis and PostgreSQL is checked by the scheduler's tests on a
// FakeTimeProvider and by `jobs next`.

beforeAll(() => ensureCliBuilt());

const haveFaketime = libfaketimeAvailable();
if (!haveFaketime) {
  const reason = 'libfaketime is not installed (Debian package faketime)';
  if (process.env.RESIL_REQUIRE_SERVICES === '1') throw new Error(`dst-run.test.ts needs ${reason}`);
  console.warn(`skipping dst-run.test.ts: ${reason}`);
}

/** Each job appends `<name> <scheduledAt>` to $RESIL_TEST_OUT. */
const job = (name: string, schedule: string, timezone: string, dst?: 'shift' | 'skip') =>
  `{ name: '${name}', schedule: '${schedule}', timezone: '${timezone}',${dst === undefined ? '' : ` dst: '${dst}',`} run: async (ctx) => { appendFileSync(process.env.RESIL_TEST_OUT, '${name} ' + ctx.scheduledAt.toISOString() + '\\n'); } }`;

const jobs = `[
  ${job('berlin-shift', '30 2 * * *', 'Europe/Berlin', 'shift')},
  ${job('berlin-skip', '30 2 * * *', 'Europe/Berlin', 'skip')},
  ${job('berlin-hourly', '0 * * * *', 'Europe/Berlin')},
  ${job('berlin-half', '30 * * * *', 'Europe/Berlin')},
  ${job('ny-shift', '30 2 * * *', 'America/New_York', 'shift')},
  ${job('ny-skip', '30 2 * * *', 'America/New_York', 'skip')},
  ${job('ny-early-shift', '30 1 * * *', 'America/New_York', 'shift')},
  ${job('ny-early-skip', '30 1 * * *', 'America/New_York', 'skip')},
]`;

/**
 * Each case: the instant the clock starts a few seconds before (UTC), and the jobs that fire at
 * that instant; every other job must not fire within the seconds watched.
 */
const cases = [
  {
    what: 'Berlin, 2027-03-28: 02:30 does not exist; shift runs it at 03:00 CEST, skip does not; the hourly job runs',
    at: '2027-03-28T01:00:00Z',
    fire: ['berlin-hourly', 'berlin-shift'],
  },
  {
    what: 'Berlin, 2027-10-31, first 02:30 (CEST): both policies run it, once',
    at: '2027-10-31T00:30:00Z',
    fire: ['berlin-half', 'berlin-shift', 'berlin-skip'],
  },
  {
    what: 'Berlin, 2027-10-31, second 02:30 (CET): neither runs it again; the job at every half hour does',
    at: '2027-10-31T01:30:00Z',
    fire: ['berlin-half'],
  },
  {
    what: 'New York, 2027-03-14: 02:30 does not exist; shift runs it at 03:00 EDT, skip does not',
    at: '2027-03-14T07:00:00Z',
    fire: ['berlin-hourly', 'ny-shift'],
  },
  {
    what: 'New York, 2027-11-07, first 01:30 (EDT): both policies run it, once',
    at: '2027-11-07T05:30:00Z',
    fire: ['berlin-half', 'ny-early-shift', 'ny-early-skip'],
  },
  {
    what: 'New York, 2027-11-07, second 01:30 (EST): neither runs it again; the job at every half hour does',
    at: '2027-11-07T06:30:00Z',
    fire: ['berlin-half'],
  },
];

/** How long before the instant each clock starts, and how long after it the fires are watched. */
const leadSeconds = 8;
const watchMs = 3_000;

describe.skipIf(!haveFaketime)(
  'resil run on the 2027 DST transition days (libfaketime, in-memory store)',
  () => {
    let project: Project;
    const runs: SpawnedProcess[] = [];
    const outputs = new Map<string, string>();

    beforeAll(async () => {
      project = createProject({
        'resil.config.ts': tsConfig(jobs, { imports: "import { appendFileSync } from 'node:fs';" }),
      });
      // Every case at once: each its own process, its clock started `leadSeconds` before its instant.
      await Promise.all(
        cases.map(async (each, index) => {
          const out = project.path(`out-${index}.txt`);
          outputs.set(each.at, out);
          const start = new Date(Date.parse(each.at) - leadSeconds * 1_000);
          const run = spawnProcess(process.execPath, [binary, 'run'], {
            cwd: project.directory,
            env: {
              ...process.env,
              NO_COLOR: '1',
              TZ: 'UTC',
              RESIL_TEST_OUT: out,
              LD_PRELOAD: libfaketime,
              FAKETIME: `@${start.toISOString().slice(0, 19).replace('T', ' ')}`,
              DONT_FAKE_MONOTONIC: '1',
            },
            name: `resil run (${each.at})`,
          });
          runs.push(run);
          await run.waitForOutput(/runner started/, 20_000);
        }),
      );
      // The latest start plus the lead and the watch: every instant has passed in every process.
      await new Promise((resolve) => setTimeout(resolve, leadSeconds * 1_000 + watchMs));
    }, 60_000);
    afterAll(async () => {
      await Promise.all(runs.map((run) => run.stop()));
      project?.remove();
    });

    it.each(cases)('$what', ({ at, fire }) => {
      const out = outputs.get(at)!;
      const lines = existsSync(out) ? readFileSync(out, 'utf8').trimEnd().split('\n') : [];
      expect(lines.sort()).toEqual(fire.map((name) => `${name} ${new Date(at).toISOString()}`).sort());
    });
  },
);
