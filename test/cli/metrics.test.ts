import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnProcess, waitUntil } from '../support/processes.ts';
import { deleteKeys, redisUrlForTests, uniquePrefix } from '../support/redis.ts';
import {
  binary,
  createProject,
  distFilesWithSources,
  ensureCliBuilt,
  runCli,
  tsConfig,
} from './cli-support.ts';
import {
  httpGet,
  type PrometheusServer,
  prometheusUnavailableReason,
  promtool,
  promtoolCheckMetrics,
  type Sample,
  sampleValue,
  scrape,
  startPrometheus,
} from './metrics-support.ts';
import {
  ensureBuilt,
  fixturePreamble,
  type RunFixture,
  type RunProcess,
  repoRoot,
  startRun,
} from './run-process.ts';

const redisUrl = await redisUrlForTests();
const noPromtool = prometheusUnavailableReason('promtool');
const noPrometheus = prometheusUnavailableReason('prometheus');

/**
 * A config on Redis with three every-second jobs: `tick` succeeds, `slow` runs 1.5 s (so every
 * other fire is skipped as overlap), `flaky` fails (no retry).
 */
function writeMetricsFixture(prefix: string): RunFixture {
  const directory = mkdtempSync(join(tmpdir(), 'resil-metrics-'));
  const configPath = join(directory, 'resil.config.mjs');
  writeFileSync(
    configPath,
    `${fixturePreamble()}
export default defineConfig({
  store: new RedisLockStore(client, { prefix: ${JSON.stringify(prefix)}, commandTimeout: 500 }),
  instance,
  timezone: 'UTC',
  shutdownGrace: 5_000,
  jobs: [
    { name: 'tick', schedule: '* * * * * *', lock: { ttl: 5_000 }, run: async () => {} },
    { name: 'slow', schedule: '* * * * * *', lock: { ttl: 5_000 }, run: ({ signal }) => new Promise((resolve) => {
      const timer = setTimeout(resolve, 1_500);
      signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
    }) },
    { name: 'flaky', schedule: '* * * * * *', lock: { ttl: 5_000 }, retry: false, run: async () => { throw new Error('flaky failed'); } },
  ],
});
`,
  );
  return {
    directory,
    configPath,
    prefix,
    recordKey: `${prefix}records`,
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

/** The alert rules block of docs/metrics.md ("Metrics and health"), and each rule's expression. */
function readmeAlertRules(): { yaml: string; expressions: Map<string, string> } {
  const page = readFileSync(join(repoRoot, 'docs/metrics.md'), 'utf8');
  const yaml = /# Metrics and health[\s\S]*?```yaml\n(groups:[\s\S]*?)```/.exec(page)?.[1];
  if (yaml === undefined)
    throw new Error('docs/metrics.md: no ```yaml block with groups: under "# Metrics and health"');
  const expressions = new Map<string, string>();
  for (const rule of yaml.split(/^\s*- alert: /m).slice(1)) {
    const name = rule.split('\n')[0]!.trim();
    const block = /^( *)expr: \|\n((?:\1 +.*\n)+)/m.exec(rule);
    const inline = /^ *expr: (?!\|)(.+)$/m.exec(rule);
    const expression = block ? block[2]!.replace(/\s+/g, ' ').trim() : inline?.[1]?.trim();
    if (expression === undefined) throw new Error(`docs/metrics.md: alert ${name} has no expr`);
    expressions.set(name, expression);
  }
  return { yaml, expressions };
}

describe('resil run --metrics: usage', () => {
  beforeAll(() => ensureCliBuilt(), 200_000);

  it('--help names the option, the endpoints, the metrics and the exit codes', async () => {
    const result = await runCli(['run', '--help']);
    expect(result.code).toBe(0);
    for (const text of [
      '--metrics <[host:]port>',
      'a bare port binds 127.0.0.1 only',
      'GET /metrics',
      'GET /livez',
      'GET /readyz',
      '?verbose',
      'anything else  404',
      'resil_job_last_success_timestamp_seconds',
      'resil_store_clock_offset_seconds',
      'resil_job_config_drift',
      'job_name',
      'bad --metrics',
      '$ resil run --metrics 9464',
    ]) {
      expect(result.stdout).toContain(text);
    }
  });

  it.each([
    ['abc', '"abc" is not a port number'],
    ['70000', 'port 70000 is out of range 1-65535'],
    ['0', 'port 0 is out of range 1-65535'],
    [':9464', 'the host before ":" is empty; a bare port (9464) binds 127.0.0.1'],
    ['localhost:', 'the port is missing'],
    ['::1:9464', 'an IPv6 host needs brackets, as in [::1]:9464'],
    ['bad host:9464', '"bad host" is not a host name or IP address'],
  ])('--metrics %j exits 2: %s', async (value, why) => {
    const result = await runCli(['run', '--metrics', value]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `error: invalid --metrics ${JSON.stringify(value)}: ${why} (use a port such as 9464, or host:port such as 0.0.0.0:9464 or [::]:9464)\n`,
    );
  });

  it('a port in use exits 2 naming it, before any job fires', async () => {
    const project = createProject({
      'resil.config.ts': tsConfig(
        "[{ name: 'tick', schedule: '* * * * * *', run: async () => { console.log('TICK RAN'); } }]",
      ),
    });
    const blocker: Server = createServer();
    const port = await new Promise<number>((resolve) =>
      blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as { port: number }).port)),
    );
    try {
      const result = await runCli(['run', '--metrics', String(port)], { cwd: project.directory });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        `error: --metrics 127.0.0.1:${port}: cannot listen: the port is already in use`,
      );
      expect(result.stderr).toContain('(EADDRINUSE)');
      expect(result.stdout).not.toContain('TICK RAN');
      expect(result.stdout).not.toContain('runner started');
    } finally {
      blocker.close();
      project.remove();
    }
  });

  it('prom-client and the metrics module load only with --metrics (not for --help, nor for resil run without it)', async () => {
    const probe = mkdtempSync(join(tmpdir(), 'resil-load-'));
    const hooks = join(probe, 'hooks.mjs');
    writeFileSync(
      hooks,
      `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (/prom-client|\\/dist\\//.test(result.url)) appendFileSync(process.env.RESIL_LOAD_LOG, result.url + '\\n');
  return result;
}
`,
    );
    writeFileSync(
      join(probe, 'preload.mjs'),
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
    );
    const project = createProject({
      'resil.config.ts': tsConfig("[{ name: 'tick', schedule: '* * * * * *', run: async () => {} }]"),
    });
    const loadedBy = async (args: string[]) => {
      const log = join(probe, `${args.join('_').replace(/\W/g, '_')}.log`);
      writeFileSync(log, '');
      const spawned = spawnProcess(
        process.execPath,
        ['--import', join(probe, 'preload.mjs'), binary, ...args],
        {
          cwd: project.directory,
          env: { ...process.env, RESIL_LOAD_LOG: log, NO_COLOR: '1' },
        },
      );
      if (args[0] === 'run' && !args.includes('--help')) {
        await spawned.waitForOutput(/runner started/, 30_000);
        spawned.kill('SIGTERM');
      }
      const exit = await spawned.exited;
      expect(exit.code, `${args.join(' ')}:\n${spawned.output()}`).toBe(0);
      // prom-client, and the dist/ files that hold src/cli/metrics/ (found through their source maps).
      return readFileSync(log, 'utf8')
        .split('\n')
        .filter((url) => /prom-client/.test(url) || metricsFiles.some((file) => url.endsWith(file)))
        .join('\n');
    };
    const metricsFiles = distFilesWithSources('src/cli/metrics/');
    expect(metricsFiles.length).toBeGreaterThan(0);
    try {
      expect(await loadedBy(['--help'])).toBe('');
      expect(await loadedBy(['run', '--help'])).toBe('');
      expect(await loadedBy(['run'])).toBe('');
      // The probe sees them when they do load.
      const loaded = await loadedBy(['run', '--metrics', String(await freePort())]);
      expect(loaded).toMatch(/prom-client/);
      for (const file of metricsFiles) expect(loaded).toContain(file);
    } finally {
      project.remove();
      rmSync(probe, { recursive: true, force: true });
    }
  }, 90_000);
});

describe.skipIf(!redisUrl)('resil run --metrics on Redis, scraped', () => {
  let client: Redis;
  let fixture: RunFixture;
  let run: RunProcess;
  let base: string;
  let port: number;
  const prefix = uniquePrefix('metrics');

  beforeAll(async () => {
    ensureCliBuilt();
    ensureBuilt();
    client = new Redis(redisUrl!);
    fixture = writeMetricsFixture(prefix);
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    run = startRun(fixture, { instance: 'scraped', redisUrl: redisUrl!, args: ['--metrics', String(port)] });
    const listening = await run.waitForLine(
      (line) => String(line.msg).startsWith('metrics: listening'),
      20_000,
      'the metrics server',
    );
    expect(listening).toMatchObject({
      msg: `metrics: listening on ${base} (/metrics, /livez, /readyz)`,
      metrics: `${base}/metrics`,
    });
  }, 200_000);

  afterAll(async () => {
    await run?.process.stop();
    await deleteKeys(client, prefix);
    fixture?.remove();
    await client?.quit();
  });

  const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
    sampleValue(samples, name, labels) ?? 0;

  it('counters move with fires and skips, histograms have buckets, every resil_ series is labelled job_name', async () => {
    const first = (await waitUntil(
      'a first success of tick, a failure of flaky and an overlap skip of slow',
      async () => {
        const { samples } = await scrape(base);
        return value(samples, 'resil_job_runs_total', { job_name: 'tick', outcome: 'success' }) >= 1 &&
          value(samples, 'resil_job_runs_total', { job_name: 'flaky', outcome: 'failure' }) >= 1 &&
          value(samples, 'resil_job_skips_total', { job_name: 'slow', reason: 'overlap' }) >= 1
          ? samples
          : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 200 },
    )) as Sample[];
    const ticks = value(first, 'resil_job_runs_total', { job_name: 'tick', outcome: 'success' });
    const skips = value(first, 'resil_job_skips_total', { job_name: 'slow', reason: 'overlap' });
    const later = (await waitUntil(
      'more fires and skips',
      async () => {
        const { samples } = await scrape(base);
        return value(samples, 'resil_job_runs_total', { job_name: 'tick', outcome: 'success' }) > ticks &&
          value(samples, 'resil_job_skips_total', { job_name: 'slow', reason: 'overlap' }) > skips
          ? samples
          : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 200 },
    )) as Sample[];

    expect(value(later, 'resil_job_runs_total', { job_name: 'tick', outcome: 'failure' })).toBe(0);
    expect(value(later, 'resil_job_runs_total', { job_name: 'flaky', outcome: 'success' })).toBe(0);
    expect(
      value(later, 'resil_job_runs_total', { job_name: 'slow', outcome: 'success' }),
    ).toBeGreaterThanOrEqual(1);
    // Histograms: one bucket line per bound plus +Inf, _sum and _count that agree with the counters.
    const tickRuns =
      value(later, 'resil_job_runs_total', { job_name: 'tick', outcome: 'success' }) +
      value(later, 'resil_job_runs_total', { job_name: 'tick', outcome: 'failure' });
    for (const histogram of ['resil_job_duration_seconds', 'resil_job_lateness_seconds']) {
      const buckets = later.filter(
        (sample) => sample.name === `${histogram}_bucket` && sample.labels.job_name === 'tick',
      );
      expect(buckets.length, histogram).toBeGreaterThan(5);
      expect(buckets.at(-1)!.labels.le).toBe('+Inf');
      expect(buckets.at(-1)!.value).toBe(value(later, `${histogram}_count`, { job_name: 'tick' }));
      expect(buckets.map((bucket) => bucket.value)).toEqual(
        [...buckets.map((bucket) => bucket.value)].sort((a, b) => a - b),
      );
    }
    // A scrape can fall between a run's end and the next one's start: lateness counts starts, duration ends.
    expect(value(later, 'resil_job_duration_seconds_count', { job_name: 'tick' })).toBe(tickRuns);
    expect(value(later, 'resil_job_lateness_seconds_count', { job_name: 'tick' })).toBeGreaterThanOrEqual(
      tickRuns,
    );
    // Slow's runs take 1.5 s: its duration lands in the (1, 5] bucket.
    expect(value(later, 'resil_job_duration_seconds_bucket', { job_name: 'slow', le: '1' })).toBe(0);
    expect(
      value(later, 'resil_job_duration_seconds_bucket', { job_name: 'slow', le: '5' }),
    ).toBeGreaterThanOrEqual(1);
    // Fires start within a second of their instant, by the store's clock.
    expect(value(later, 'resil_job_lateness_seconds_bucket', { job_name: 'tick', le: '1' })).toBe(
      value(later, 'resil_job_lateness_seconds_count', { job_name: 'tick' }),
    );

    const now = Date.now() / 1000;
    const next = value(later, 'resil_job_next_run_timestamp_seconds', { job_name: 'tick' });
    expect(next).toBeGreaterThan(now - 1);
    expect(next).toBeLessThan(now + 2);
    expect(Number.isInteger(next)).toBe(true);
    expect(value(later, 'resil_store_up')).toBe(1);
    expect(Math.abs(sampleValue(later, 'resil_store_clock_offset_seconds')!)).toBeLessThan(0.5);
    for (const name of ['tick', 'slow', 'flaky']) {
      expect(value(later, 'resil_lock_lost_total', { job_name: name })).toBe(0);
      expect(value(later, 'resil_fence_rejections_total', { job_name: name })).toBe(0);
      expect([0, 1]).toContain(sampleValue(later, 'resil_job_running', { job_name: name }));
    }
    // Every resil_ series is per job (job_name) but the store's two; none uses Prometheus' own `job`.
    const resil = later.filter((sample) => sample.name.startsWith('resil_'));
    for (const sample of resil) {
      expect(sample.labels, sample.name).not.toHaveProperty('job');
      if (!sample.name.startsWith('resil_store_'))
        expect(['tick', 'slow', 'flaky']).toContain(sample.labels.job_name);
    }
    expect(new Set(resil.map((sample) => sample.name.replace(/_(bucket|sum|count)$/, '')))).toEqual(
      new Set([
        'resil_job_runs_total',
        'resil_job_skips_total',
        'resil_job_duration_seconds',
        'resil_job_lateness_seconds',
        'resil_job_last_success_timestamp_seconds',
        'resil_job_next_run_timestamp_seconds',
        'resil_job_running',
        'resil_lock_lost_total',
        'resil_fence_rejections_total',
        'resil_job_stray_errors_total',
        'resil_job_config_drift',
        'resil_store_up',
        'resil_store_clock_offset_seconds',
      ]),
    );
    expect(later.some((sample) => sample.name === 'process_resident_memory_bytes')).toBe(true);
  }, 30_000);

  it('last success: the latest successful occurrence from the run ledger, refreshed after each success', async () => {
    const reads = async () => {
      const { samples } = await scrape(base);
      return sampleValue(samples, 'resil_job_last_success_timestamp_seconds', { job_name: 'tick' });
    };
    const first = (await waitUntil('a last success of tick', reads, {
      timeoutMs: 5_000,
      intervalMs: 100,
    })) as number;
    expect(Number.isInteger(first)).toBe(true);
    expect(first).toBeGreaterThan(Date.now() / 1000 - 5);
    // Well before the 30 s refresh round: the success itself triggers the read.
    await waitUntil('a later last success of tick', async () => ((await reads()) ?? 0) > first, {
      timeoutMs: 5_000,
      intervalMs: 100,
    });
    // flaky never succeeded: no series, rather than a made-up 0.
    const { samples } = await scrape(base);
    expect(
      sampleValue(samples, 'resil_job_last_success_timestamp_seconds', { job_name: 'flaky' }),
    ).toBeUndefined();
  }, 20_000);

  it.skipIf(noPromtool)('promtool check metrics finds nothing in the resil_ series', async () => {
    const { text } = await scrape(base);
    const { findings } = await promtoolCheckMetrics(text);
    expect(findings.filter((finding) => finding.startsWith('resil_'))).toEqual([]);
    // What it does find is prom-client's known nodejs_active_*_total gauges, nothing else.
    for (const finding of findings) expect(finding).toMatch(/^nodejs_active_\w+_total non-counter metrics/);
  });

  it('/livez 200; /readyz 200 with every check under ?verbose; anything else 404', async () => {
    expect(await httpGet(`${base}/livez`)).toMatchObject({ status: 200, body: '{"status":"pass"}\n' });
    const ready = await httpGet(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toEqual({ status: 'pass' });
    const verbose = JSON.parse((await httpGet(`${base}/readyz?verbose`)).body);
    expect(verbose).toMatchObject({
      status: 'pass',
      checks: {
        store: { status: 'pass', lastAnswerAt: expect.any(String), roundTripMs: expect.any(Number) },
        clock: { status: 'pass', offsetMs: expect.any(Number) },
        runner: { status: 'pass' },
      },
    });
    for (const path of ['/', '/metrics/', '/healthz', '/readyz/store']) {
      const answer = await httpGet(`${base}${path}`);
      expect(answer.status, path).toBe(404);
    }
  });

  it('a request under another Host (a DNS-rebinding page) answers 403 on every path; its loopback names answer', async () => {
    for (const path of ['/metrics', '/livez', '/readyz?verbose', '/nope']) {
      for (const host of [`attacker.example:${port}`, 'attacker.example', `127.0.0.1:${port + 1}`]) {
        const answer = await httpGet(`${base}${path}`, { headers: { Host: host } });
        expect(answer.status, `${path} ${host}`).toBe(403);
        expect(answer.body).toBe(
          `this metrics endpoint answers requests for its loopback address only (Host header ${JSON.stringify(host)}); to be scraped from elsewhere, listen on a network address: --metrics 0.0.0.0:<port>\n`,
        );
        expect(answer.body).not.toContain('tick');
      }
    }
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      const answer = await httpGet(`${base}/metrics`, { headers: { Host: host } });
      expect(answer.status, host).toBe(200);
      expect(answer.body).toContain('resil_job_runs_total');
    }
  });

  describe.skipIf(noPrometheus)('a real Prometheus scraping it', () => {
    let prometheus: PrometheusServer;
    beforeAll(async () => {
      prometheus = await startPrometheus(`127.0.0.1:${port}`, 'resil-scrape');
    }, 30_000);
    afterAll(async () => {
      await prometheus?.stop();
    });

    it('answers PromQL over resil_job_runs_total with job_name (and its own job label untouched)', async () => {
      const series = (await waitUntil(
        'resil_job_runs_total in Prometheus',
        async () => {
          const result = await prometheus.query('resil_job_runs_total');
          return result.some((entry) => entry.metric.job_name === 'tick') ? result : undefined;
        },
        { timeoutMs: 15_000, intervalMs: 250 },
      )) as Awaited<ReturnType<PrometheusServer['query']>>;
      expect(new Set(series.map((entry) => entry.metric.job_name))).toEqual(
        new Set(['tick', 'slow', 'flaky']),
      );
      for (const entry of series) {
        expect(entry.metric).toMatchObject({ job: 'resil-scrape', instance: `127.0.0.1:${port}` });
        expect(entry.metric).not.toHaveProperty('exported_job');
      }
      const lastSuccess = await prometheus.query(
        'time() - max by (job_name) (resil_job_last_success_timestamp_seconds{job_name="tick"})',
      );
      expect(lastSuccess).toHaveLength(1);
      expect(Number(lastSuccess[0]!.value[1])).toBeLessThan(60);
      const offset = await prometheus.query('abs(resil_store_clock_offset_seconds) > 1');
      expect(offset).toEqual([]);
      const [up] = await prometheus.query('resil_store_up');
      expect(up!.value[1]).toBe('1');
    }, 30_000);

    it('the documented alert expressions run against it: quiet now, and they do see the series', async () => {
      const [nightly, clock] = [...readmeAlertRules().expressions.values()] as [string, string];
      // On a job that just succeeded the nightly alert is quiet; with a 0 s threshold it fires.
      const onTick = nightly.replaceAll('nightly-report', 'tick');
      expect(await prometheus.query(onTick)).toEqual([]);
      const fired = await prometheus.query(onTick.replace('26 * 3600', '0'));
      expect(fired.map((entry) => entry.metric.job_name)).toEqual(['tick']);
      // A job that never succeeded anywhere (flaky) fires through absent().
      expect(await prometheus.query(nightly.replaceAll('nightly-report', 'flaky'))).toHaveLength(1);
      // Clocks agree here: quiet; with a threshold below any offset it fires, per instance.
      expect(await prometheus.query(clock)).toEqual([]);
      const offsets = await prometheus.query(clock.replace('> 1', '>= 0'));
      expect(offsets.map((entry) => entry.metric.instance)).toEqual([`127.0.0.1:${port}`]);
    }, 20_000);
  });

  it.skipIf(noPromtool)('the documented alert rules pass promtool check rules', async () => {
    const { yaml, expressions } = readmeAlertRules();
    expect([...expressions.values()].join('\n')).toContain('resil_job_last_success_timestamp_seconds');
    expect([...expressions.values()].join('\n')).toContain('resil_store_clock_offset_seconds');
    const directory = mkdtempSync(join(tmpdir(), 'resil-rules-'));
    try {
      const file = join(directory, 'rules.yml');
      writeFileSync(file, yaml);
      const result = await promtool(['check', 'rules', file]);
      expect(result.output).toMatch(/SUCCESS: 2 rules found/);
      expect(result.code).toBe(0);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('stopping resil run closes the server', async () => {
    run.process.kill('SIGTERM');
    expect((await run.process.exited).code).toBe(0);
    const messages = run.lines().map((line) => String(line.msg));
    expect(messages.indexOf('metrics: server closed')).toBeGreaterThan(-1);
    expect(messages.indexOf('metrics: server closed')).toBeLessThan(messages.indexOf('exiting'));
    await expect(httpGet(`${base}/livez`)).rejects.toThrow(/ECONNREFUSED/);
  }, 20_000);
});
