import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatSpan } from '../../src/cli/time-format.ts';
import { nextRuns } from '../../src/cli/views/jobs.ts';
import { JobSchedule, jitterOf } from '../../src/scheduler/occurrence.ts';
import { freePort, spawnProcess } from '../support/processes.ts';
import { binary, createProject, ensureCliBuilt, type Project, runCli, tsConfig } from './cli-support.ts';
import { jsonLines } from './run-process.ts';

const libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

const jobs = `[
  { name: 'nightly', schedule: '30 2 * * *', timezone: 'Europe/Berlin', run: async () => {} },
  { name: 'fall-back', schedule: '*/30 2 * * *', timezone: 'Europe/Berlin', run: async () => {} },
  { name: 'beat', schedule: '*/10 * * * * *', run: async () => {} },
  { name: 'off', schedule: '0 3 * * *', enabled: false, run: async () => {} },
  { name: 'never', schedule: '0 0 30 2 *', run: async () => {} },
  { name: 'spread', schedule: '0 * * * *', jitter: '10m', startingDeadline: '15m', run: async () => {} },
  { name: 'nightly-skip', schedule: '30 2 * * *', timezone: 'Europe/Berlin', dst: 'skip', run: async () => {} },
  { name: 'ny-nightly', schedule: '30 2 * * *', timezone: 'America/New_York', run: async () => {} },
  { name: 'ny-nightly-skip', schedule: '30 2 * * *', timezone: 'America/New_York', dst: 'skip', run: async () => {} },
  { name: 'ny-early', schedule: '30 1 * * *', timezone: 'America/New_York', run: async () => {} },
  { name: 'ny-early-skip', schedule: '30 1 * * *', timezone: 'America/New_York', dst: 'skip', run: async () => {} },
  { name: 'hourly', schedule: '0 * * * *', timezone: 'Europe/Berlin', run: async () => {} },
]`;

let project: Project;

beforeAll(() => {
  ensureCliBuilt();
  project = createProject({ 'resil.config.ts': tsConfig(jobs, { extra: "timezone: 'UTC'," }) });
});
afterAll(() => project?.remove());

/** `resil jobs next ...args` with the machine clock starting at `start` (UTC), by libfaketime. */
function nextAt(start: string, args: readonly string[]) {
  return runCli(['jobs', 'next', ...args], {
    cwd: project.directory,
    env: { LD_PRELOAD: libfaketime, FAKETIME: `@${start}`, DONT_FAKE_MONOTONIC: '1', TZ: 'UTC' },
  });
}

/** The command's answer is the schedule's next instants after some moment while it ran. */
async function expectScheduleAfterNow(args: readonly string[], schedule: JobSchedule, count: number) {
  const before = Date.now();
  const result = await runCli(['jobs', 'next', ...args], { cwd: project.directory });
  const after = Date.now();
  expect(result.code, result.stderr).toBe(0);
  const instants = JSON.parse(result.stdout) as string[];
  const expected = (from: number) =>
    schedule.between(from, Number.POSITIVE_INFINITY, count).instants.map((at) => new Date(at).toISOString());
  expect([expected(before), expected(after)]).toContainEqual(instants);
  return instants;
}

describe('--help', () => {
  it('jobs next --help has its options, exit codes and examples; jobs --help lists it', async () => {
    const help = await runCli(['jobs', 'next', '--help']);
    expect(help.code).toBe(0);
    for (const text of [
      '<name>',
      '-n, --count <n>',
      '(default: 5)',
      '--json',
      'DST',
      'Exit codes: 0',
      'bad -n',
      'Examples:',
      '$ resil jobs next nightly-report',
    ]) {
      expect(help.stdout).toContain(text);
    }
    const group = await runCli(['jobs', '--help']);
    expect(group.stdout).toMatch(/\n {2}next \[options\] <name> /);
    expect(group.stdout).toContain('$ resil jobs next nightly-report -n 10\n');
  });
});

describe('--json', () => {
  it('prints the next 5 instants as ISO 8601 UTC strings, as the scheduler computes them', async () => {
    const instants = await expectScheduleAfterNow(
      ['nightly', '--json'],
      new JobSchedule({ schedule: '30 2 * * *', timezone: 'Europe/Berlin' }),
      5,
    );
    expect(instants).toHaveLength(5);
    for (const instant of instants) expect(instant).toBe(new Date(instant).toISOString());
  });

  it('-n / --count N prints N of them, up to 1000', async () => {
    const beat = new JobSchedule({ schedule: '*/10 * * * * *', timezone: 'UTC' });
    expect(await expectScheduleAfterNow(['beat', '-n', '3', '--json'], beat, 3)).toHaveLength(3);
    expect(await expectScheduleAfterNow(['beat', '--count', '7', '--json'], beat, 7)).toHaveLength(7);
    const nightly = new JobSchedule({ schedule: '30 2 * * *', timezone: 'Europe/Berlin', dst: 'skip' });
    const many = await expectScheduleAfterNow(['nightly-skip', '-n', '1000', '--json'], nightly, 1000);
    expect(many).toHaveLength(1000);
    // Nearly three years of 02:30 in Berlin (dst: 'skip'): one a day, except on each spring-forward day.
    const local = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Berlin',
      hour: '2-digit',
      minute: '2-digit',
    });
    for (const instant of many) expect(local.format(new Date(instant))).toBe('02:30');
    const gaps = many
      .slice(1)
      .filter((instant, i) => Date.parse(instant) - Date.parse(many[i]!) > 86_400_000);
    expect(gaps.length).toBeGreaterThanOrEqual(2);
  });

  it('prints [] for a schedule with no future instant', async () => {
    const result = await runCli(['jobs', 'next', 'never', '--json'], { cwd: project.directory });
    expect(result).toMatchObject({ code: 0, stdout: '[]\n', stderr: '' });
  });
});

describe('the table', () => {
  it("shows each instant in the job's zone with the zone's name, not this machine's", async () => {
    const result = await runCli(['jobs', 'next', 'nightly'], {
      cwd: project.directory,
      env: { TZ: 'America/New_York' },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(6);
    expect(lines[0]).toMatch(/^NEXT RUN \(Europe\/Berlin\)\s+UTC\s+IN$/);
    for (const line of lines.slice(1)) {
      expect(line).toMatch(
        /^\d{4}-\d\d-\d\d 02:30:00 GMT\+[12]\s+\d{4}-\d\d-\d\dT0[01]:30:00\.000Z\s+in \d+[dhms]( \d+[hms])?$/,
      );
    }
  });

  it('notes on stderr that a disabled job does not fire (not with --json)', async () => {
    const text = await runCli(['jobs', 'next', 'off', '-n', '2'], { cwd: project.directory });
    expect(text.code).toBe(0);
    expect(text.stdout.trimEnd().split('\n')).toHaveLength(3);
    expect(text.stderr).toBe('note: off is disabled (enabled: false): resil run does not fire it\n');
    const json = await runCli(['jobs', 'next', 'off', '--json'], { cwd: project.directory });
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout)).toHaveLength(5);
  });

  it("adds a JITTER column for a job with jitter: each occurrence's delay after its instant; --json stays the instants", async () => {
    const text = await nextAt('2026-03-28 00:00:00', ['spread', '-n', '3']);
    expect(text.code, text.stderr).toBe(0);
    const [header, ...rows] = text.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^NEXT RUN \(UTC\)\s+UTC\s+IN\s+JITTER$/);
    const instants = ['2026-03-28T01:00:00.000Z', '2026-03-28T02:00:00.000Z', '2026-03-28T03:00:00.000Z'];
    expect(rows.map((row) => row.split(/ {2,}/))).toEqual(
      instants.map((instant) => {
        const delay = jitterOf({ name: 'spread', jitterMs: 600_000 }, Date.parse(instant));
        expect(delay).toBeLessThan(600_000);
        return [
          expect.any(String),
          instant,
          expect.stringMatching(/^in /),
          `+${delay < 1_000 ? `${delay}ms` : formatSpan(delay)}`,
        ];
      }),
    );
    const json = await nextAt('2026-03-28 00:00:00', ['spread', '-n', '3', '--json']);
    expect(JSON.parse(json.stdout)).toEqual(instants);
  });

  it('says when a schedule has no future instant', async () => {
    const result = await runCli(['jobs', 'next', 'never'], { cwd: project.directory });
    expect(result).toMatchObject({
      code: 0,
      stdout: 'never: the schedule 0 0 30 2 * (UTC) has no future occurrence\n',
    });
  });
});

describe('DST', () => {
  const iso = (instants: number[]) => instants.map((at) => new Date(at).toISOString());

  it("nextRuns: 02:30 runs at 03:00 CEST on the spring-forward day with dst: 'shift' (the default), not at all with 'skip'", () => {
    const nightly = { schedule: '30 2 * * *', timezone: 'Europe/Berlin' };
    expect(iso(nextRuns(nightly, Date.parse('2026-03-28T00:00:00Z'), 3))).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
    expect(iso(nextRuns({ ...nightly, dst: 'skip' }, Date.parse('2026-03-28T00:00:00Z'), 3))).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-30T00:30:00.000Z',
      '2026-03-31T00:30:00.000Z',
    ]);
    const halfHourly = { schedule: '*/30 2 * * *', timezone: 'Europe/Berlin' };
    expect(iso(nextRuns(halfHourly, Date.parse('2026-10-24T23:00:00Z'), 4))).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T01:30:00.000Z',
    ]);
  });

  const withFaketime = it.skipIf(!existsSync(libfaketime));

  /** The table's rows, split into cells. */
  const rowsOf = (stdout: string) =>
    stdout
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((row) => row.split(/ {2,}/));

  // The 2027 transitions: Berlin 2027-03-28 (02:00 CET -> 03:00 CEST) and 2027-10-31 (03:00 CEST ->
  // 02:00 CET); New York 2027-03-14 (02:00 EST -> 03:00 EDT) and 2027-11-07 (02:00 EDT -> 01:00 EST).
  withFaketime.each([
    {
      day: 'Berlin, spring forward',
      now: '2027-03-27 12:00:00',
      jobs: ['nightly', 'nightly-skip'],
      shift: ['2027-03-28T01:00:00.000Z', '2027-03-29T00:30:00.000Z'],
      skip: ['2027-03-29T00:30:00.000Z', '2027-03-30T00:30:00.000Z'],
    },
    {
      day: 'Berlin, fall back',
      now: '2027-10-30 12:00:00',
      jobs: ['nightly', 'nightly-skip'],
      shift: ['2027-10-31T00:30:00.000Z', '2027-11-01T01:30:00.000Z'],
      skip: ['2027-10-31T00:30:00.000Z', '2027-11-01T01:30:00.000Z'],
    },
    {
      day: 'New York, spring forward',
      now: '2027-03-13 12:00:00',
      jobs: ['ny-nightly', 'ny-nightly-skip'],
      shift: ['2027-03-14T07:00:00.000Z', '2027-03-15T06:30:00.000Z'],
      skip: ['2027-03-15T06:30:00.000Z', '2027-03-16T06:30:00.000Z'],
    },
    {
      day: 'New York, fall back (01:30 twice)',
      now: '2027-11-06 12:00:00',
      jobs: ['ny-early', 'ny-early-skip'],
      shift: ['2027-11-07T05:30:00.000Z', '2027-11-08T06:30:00.000Z'],
      skip: ['2027-11-07T05:30:00.000Z', '2027-11-08T06:30:00.000Z'],
    },
  ])(
    'the binary on the 2027 $day day (libfaketime): --json with both policies',
    async ({ now, jobs: [shifting, skipping], shift, skip }) => {
      const shifted = await nextAt(now, [shifting!, '-n', '2', '--json']);
      expect(shifted.code, shifted.stderr).toBe(0);
      expect(JSON.parse(shifted.stdout)).toEqual(shift);
      const skipped = await nextAt(now, [skipping!, '-n', '2', '--json']);
      expect(skipped.code, skipped.stderr).toBe(0);
      expect(JSON.parse(skipped.stdout)).toEqual(skip);
    },
  );

  withFaketime(
    'the table marks the shifted instant in a DST column; with dst: skip the day has no row',
    async () => {
      const text = await nextAt('2027-03-27 12:00:00', ['nightly', '-n', '3']);
      expect(text.code, text.stderr).toBe(0);
      const [header] = text.stdout.split('\n');
      expect(header).toMatch(/^NEXT RUN \(Europe\/Berlin\)\s+UTC\s+IN\s+DST$/);
      expect(rowsOf(text.stdout).map((cells) => [cells[0], cells[1], cells[3]])).toEqual([
        ['2027-03-28 03:00:00 GMT+2', '2027-03-28T01:00:00.000Z', 'shifted: its local time is in the gap'],
        ['2027-03-29 02:30:00 GMT+2', '2027-03-29T00:30:00.000Z', undefined],
        ['2027-03-30 02:30:00 GMT+2', '2027-03-30T00:30:00.000Z', undefined],
      ]);
      const newYork = await nextAt('2027-03-13 12:00:00', ['ny-nightly', '-n', '1']);
      expect(rowsOf(newYork.stdout)).toEqual([
        [
          '2027-03-14 03:00:00 EDT',
          '2027-03-14T07:00:00.000Z',
          expect.stringMatching(/^in /),
          'shifted: its local time is in the gap',
        ],
      ]);
      const skipped = await nextAt('2027-03-27 12:00:00', ['nightly-skip', '-n', '2']);
      expect(skipped.stdout.split('\n')[0]).toMatch(/\sIN$/);
      expect(skipped.stdout).not.toContain('2027-03-28');
    },
  );

  withFaketime(
    'the binary on the fall-back night: an interval schedule runs 02:00 and 02:30 twice, told apart by the zone name',
    async () => {
      const text = await nextAt('2027-10-30 23:00:00', ['fall-back', '-n', '4']);
      expect(text.code, text.stderr).toBe(0);
      expect(rowsOf(text.stdout).map((cells) => cells.slice(0, 2))).toEqual([
        ['2027-10-31 02:00:00 GMT+2', '2027-10-31T00:00:00.000Z'],
        ['2027-10-31 02:30:00 GMT+2', '2027-10-31T00:30:00.000Z'],
        ['2027-10-31 02:00:00 GMT+1', '2027-10-31T01:00:00.000Z'],
        ['2027-10-31 02:30:00 GMT+1', '2027-10-31T01:30:00.000Z'],
      ]);
      const hourly = await nextAt('2027-03-27 23:30:00', ['hourly', '-n', '3', '--json']);
      expect(JSON.parse(hourly.stdout)).toEqual([
        '2027-03-28T00:00:00.000Z',
        '2027-03-28T01:00:00.000Z',
        '2027-03-28T02:00:00.000Z',
      ]);
    },
  );

  withFaketime(
    'resil run logs at start, once per job, the transitions of the next 12 months that touch its fixed time',
    async () => {
      const run = spawnProcess(
        'node',
        [binary, 'run', '--job', 'nightly', '--job', 'nightly-skip', '--job', 'hourly', '--job', 'ny-early'],
        {
          cwd: project.directory,
          env: {
            ...process.env,
            LD_PRELOAD: libfaketime,
            FAKETIME: '@2027-01-01 00:00:00',
            DONT_FAKE_MONOTONIC: '1',
            TZ: 'UTC',
            NO_COLOR: '1',
          },
          name: 'resil run',
        },
      );
      try {
        await run.waitForOutput(/"msg":"DST: .*ny-early|"job":"ny-early".*"msg":"DST: /, 15_000);
      } finally {
        await run.stop();
      }
      const dst = jsonLines(run.output()).filter((line) => String(line.msg).startsWith('DST: '));
      expect(dst.map((line) => [line.job, line.level])).toEqual([
        ['nightly', 30],
        ['nightly-skip', 40],
        ['ny-early', 30],
      ]);
      expect(dst[0]!.msg).toBe(
        "DST: on 2027-03-28 02:30 does not exist in Europe/Berlin (clocks spring forward): it runs once right after the gap, at 03:00 CEST (01:00 UTC) (dst: 'shift'); on 2027-10-31 02:30 occurs twice in Europe/Berlin: it runs once, at the first pass: 02:30 CEST (00:30 UTC)",
      );
      expect(dst[1]!.msg).toContain(
        "on 2027-03-28 02:30 does not exist in Europe/Berlin (clocks spring forward): it does not run for it that day (dst: 'skip')",
      );
      expect(dst[2]).toMatchObject({
        timezone: 'America/New_York',
        transitions: [
          { date: '2027-11-07', kind: 'fold', localTimes: ['01:30'], runsAt: '2027-11-07T05:30:00.000Z' },
        ],
      });
    },
  );

  it('jobs next --help and run --help say what dst does', async () => {
    const next = await runCli(['jobs', 'next', '--help']);
    expect(next.stdout).toContain("dst: 'shift'");
    expect(next.stdout).toContain("dst: 'skip'");
    const run = await runCli(['run', '--help']);
    expect(run.stdout).toMatch(/DST +a fixed local time in a spring-forward gap runs right after the gap/);
  });

  withFaketime('jobs list shows the shifted instant as the next run, as jobs next does', async () => {
    const list = await runCli(['jobs', 'list', '--json'], {
      cwd: project.directory,
      env: { LD_PRELOAD: libfaketime, FAKETIME: '@2027-03-27 12:00:00', DONT_FAKE_MONOTONIC: '1', TZ: 'UTC' },
    });
    expect(list.code, list.stderr).toBe(0);
    const nextRun = (name: string) =>
      (JSON.parse(list.stdout) as Array<{ name: string; nextRun: string }>).find(
        (entry) => entry.name === name,
      )?.nextRun;
    expect(nextRun('nightly')).toBe('2027-03-28T01:00:00.000Z');
    expect(nextRun('nightly-skip')).toBe('2027-03-29T00:30:00.000Z');
  });
});

describe('exit code 2', () => {
  it('for an unknown job, with the suggestion the other commands make', async () => {
    const result = await runCli(['jobs', 'next', 'nigthly'], { cwd: project.directory });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `error: unknown job "nigthly"; jobs in this config: nightly, fall-back, beat, off, never, spread, nightly-skip, ny-nightly, ny-nightly-skip, ny-early, ny-early-skip, hourly (did you mean "nightly"?)\n  config: ${project.path('resil.config.ts')}\n`,
    );
  });

  it.each(['0', '1001', '-3', '1.5', 'five', ''])('for -n %j', async (count) => {
    const result = await runCli(['jobs', 'next', 'nightly', '-n', count], { cwd: project.directory });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `error: option '-n, --count <n>' argument '${count}' is invalid. Expected a whole number from 1 to 1000.\n(see resil jobs next --help)\n`,
    );
  });

  it('when the job name is missing', async () => {
    const result = await runCli(['jobs', 'next'], { cwd: project.directory });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("missing required argument 'name'");
  });
});

it('needs no store: it answers while the configured Redis is unreachable', async () => {
  const port = await freePort();
  const offline = createProject({
    'resil.config.ts': tsConfig("[{ name: 'a', schedule: '0 1 * * *', timezone: 'UTC', run: () => {} }]", {
      imports: `import { Redis } from 'ioredis';\nimport { RedisLockStore } from 'resil/redis';\nconst client = new Redis('redis://127.0.0.1:${port}');\nclient.on('error', () => {});`,
      extra: 'store: new RedisLockStore(client),',
    }),
  });
  try {
    const result = await runCli(['jobs', 'next', 'a', '--json'], {
      cwd: offline.directory,
      timeoutMs: 15_000,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toHaveLength(5);
    expect(result.durationMs).toBeLessThan(10_000);
  } finally {
    offline.remove();
  }
});
