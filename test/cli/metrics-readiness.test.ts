import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, waitUntil } from '../support/processes.ts';
import {
  privateRedisUnavailableReason,
  type RedisServer,
  startRedisServer,
  uniquePrefix,
} from '../support/redis.ts';
import { ensureCliBuilt } from './cli-support.ts';
import { httpGet, sampleValue, scrape } from './metrics-support.ts';
import { ensureBuilt, type RunFixture, type RunProcess, startRun, writeRunFixture } from './run-process.ts';

const noRedisServer = privateRedisUnavailableReason();

interface Readiness {
  status: number;
  body: { status: string; checks?: Record<string, { status: string; reason?: string }> };
  text: string;
}

async function readyz(base: string, query = ''): Promise<Readiness> {
  const answer = await httpGet(`${base}/readyz${query}`, { timeoutMs: 2_000 });
  return { status: answer.status, body: JSON.parse(answer.body), text: answer.body };
}

/** Polls `/readyz` every 100 ms until its status is `status`; resolves with it and how long that took. */
async function readyzBecomes(
  base: string,
  status: number,
  timeoutMs: number,
): Promise<Readiness & { afterMs: number }> {
  const started = performance.now();
  const readiness = (await waitUntil(
    `/readyz ${status}`,
    async () => {
      const answer = await readyz(base);
      return answer.status === status ? answer : undefined;
    },
    { timeoutMs, intervalMs: 100 },
  )) as Readiness;
  return { ...readiness, afterMs: performance.now() - started };
}

describe.skipIf(noRedisServer)('resil run --metrics: /readyz follows the Redis it uses', () => {
  const fixtures: RunFixture[] = [];
  const runs: RunProcess[] = [];
  const servers: RedisServer[] = [];

  beforeAll(() => {
    ensureCliBuilt();
    ensureBuilt();
  }, 200_000);
  afterAll(async () => {
    for (const run of runs) await run.process.stop();
    for (const server of servers) await server.stop();
    for (const fixture of fixtures) fixture.remove();
  });

  async function startWithMetrics(
    redisUrl: string,
    name: string,
  ): Promise<{ run: RunProcess; base: string }> {
    const fixture = writeRunFixture({
      prefix: uniquePrefix(name),
      // A fire asks the store again until its starting deadline: 1 s lets an outage's fires give up quickly.
      jobs: [
        {
          name: 'tick',
          schedule: '* * * * * *',
          workMs: 5,
          lock: { ttl: 3_000, wait: 0 },
          startingDeadline: 1_000,
        },
      ],
      shutdownGraceMs: 2_000,
    });
    fixtures.push(fixture);
    const port = await freePort();
    const run = startRun(fixture, { instance: name, redisUrl, args: ['--metrics', String(port)] });
    runs.push(run);
    await run.waitForLine(
      (line) => String(line.msg).startsWith('metrics: listening'),
      20_000,
      'the metrics server',
    );
    return { run, base: `http://127.0.0.1:${port}` };
  }

  it('503 within 5 s of the Redis stopping, naming why; /livez stays 200; 200 again within 10 s of its restart', async () => {
    const server = await startRedisServer();
    servers.push(server);
    const { run, base } = await startWithMetrics(server.url, 'outage');
    await readyzBecomes(base, 200, 10_000);
    expect((await scrape(base)).samples.find((sample) => sample.name === 'resil_store_up')?.value).toBe(1);

    await server.stop();
    const down = await readyzBecomes(base, 503, 5_000);
    expect(down.afterMs).toBeLessThan(5_000);
    expect(down.body).toEqual({
      status: 'fail',
      checks: { store: expect.objectContaining({ status: 'fail', reason: expect.any(String) }) },
    });
    expect(down.body.checks!.store!.reason).toMatch(/ECONNREFUSED|not ready|did not answer/);
    const verbose = await readyz(base, '?verbose');
    expect(verbose.status).toBe(503);
    expect(Object.keys(verbose.body.checks!)).toEqual(['store', 'clock', 'runner']);
    // The offset learnt before the outage stays known; only the store fails.
    expect(verbose.body.checks!.clock!.status).toBe('pass');
    expect(verbose.body.checks!.runner!.status).toBe('pass');
    expect(await httpGet(`${base}/livez`)).toMatchObject({ status: 200 });
    const { samples } = await scrape(base);
    expect(sampleValue(samples, 'resil_store_up')).toBe(0);
    // Fires during the outage are skipped, and counted so.
    await waitUntil(
      'a store-unavailable skip counted',
      async () =>
        sampleValue((await scrape(base)).samples, 'resil_job_skips_total', {
          job_name: 'tick',
          reason: 'store-unavailable',
        }) ?? 0,
      { timeoutMs: 5_000, intervalMs: 200 },
    );
    expect(await httpGet(`${base}/livez`)).toMatchObject({ status: 200 });

    const restarted = await startRedisServer({ port: server.port });
    servers.push(restarted);
    const up = await readyzBecomes(base, 200, 10_000);
    expect(up.afterMs).toBeLessThan(10_000);
    expect(up.body).toEqual({ status: 'pass' });
    expect(sampleValue((await scrape(base)).samples, 'resil_store_up')).toBe(1);
    expect(run.process.hasExited()).toBe(false);
  }, 60_000);

  it('503 naming WRONGPASS for a wrong password, which no answer shows; /livez stays 200', async () => {
    const server = await startRedisServer({ args: ['--requirepass', 'right-secret-3f9a'] });
    servers.push(server);
    const url = new URL(server.url);
    url.password = 'wrong-secret-7c21';
    const { base, run } = await startWithMetrics(url.href, 'wrongpass');
    const startedAt = performance.now();
    const down = (await waitUntil(
      '/readyz 503 naming WRONGPASS',
      async () => {
        const answer = await readyz(base);
        return answer.status === 503 && answer.body.checks?.store?.reason?.includes('WRONGPASS')
          ? answer
          : undefined;
      },
      { timeoutMs: 5_000, intervalMs: 100 },
    )) as Readiness;
    expect(performance.now() - startedAt).toBeLessThan(5_000);
    expect(down.body).toEqual({
      status: 'fail',
      checks: {
        store: expect.objectContaining({ status: 'fail', reason: expect.stringMatching(/WRONGPASS/) }),
        // It never answered since the start: the offset to its clock is not known either.
        clock: expect.objectContaining({ status: 'fail', reason: expect.stringMatching(/not known yet/) }),
      },
    });
    const verbose = await readyz(base, '?verbose');
    expect(verbose.status).toBe(503);
    expect(verbose.body.checks!.store!.reason).toContain('WRONGPASS');
    const metrics = await httpGet(`${base}/metrics`);
    expect(sampleValue((await scrape(base)).samples, 'resil_store_up')).toBe(0);
    for (const text of [down.text, verbose.text, metrics.body, run.process.output()]) {
      expect(text).not.toContain('wrong-secret-7c21');
      expect(text).not.toContain('right-secret-3f9a');
    }
    expect(await httpGet(`${base}/livez`)).toMatchObject({ status: 200, body: '{"status":"pass"}\n' });
  }, 30_000);
});
