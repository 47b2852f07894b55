/**
 * For the `resil run --metrics` tests: plain HTTP requests, a parser of the Prometheus text format,
 * `promtool check metrics`, and a private `prometheus` server (own temp dir, config and free port)
 * that scrapes a target and answers PromQL over its HTTP API.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  commandExists,
  freePort,
  type SpawnedProcess,
  spawnProcess,
  waitUntil,
} from '../support/processes.ts';
import { skipOrFail } from '../support/services.ts';

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request to `url` (no keep-alive), within `timeoutMs`; rejects on a connection error. */
export function httpGet(
  url: string,
  options: { method?: string; timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: options.method ?? 'GET',
      ...(options.headers === undefined ? {} : { headers: options.headers }),
      agent: false,
      timeout: options.timeoutMs ?? 5_000,
    });
    req.on('timeout', () =>
      req.destroy(new Error(`no answer from ${url} within ${options.timeoutMs ?? 5_000} ms`)),
    );
    req.on('error', reject);
    req.on('response', (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
      );
      response.on('error', reject);
    });
    req.end();
  });
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text-format exposition (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(
      /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g,
    )) {
      labels[name!] = value!.replace(/\\(.)/g, (_, char: string) => (char === 'n' ? '\n' : char));
    }
    const raw = match[3]!;
    const value =
      raw === '+Inf' ? Number.POSITIVE_INFINITY : raw === '-Inf' ? Number.NEGATIVE_INFINITY : Number(raw);
    samples.push({ name: match[1]!, labels, value });
  }
  return samples;
}

/** The value of the one sample named `name` whose labels include `labels`, or `undefined`. */
export function sampleValue(
  samples: Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = samples.filter(
    (sample) =>
      sample.name === name &&
      Object.entries(labels).every(([label, value]) => sample.labels[label] === value),
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

/** GET `<base>/metrics`, parsed. */
export async function scrape(base: string): Promise<{ text: string; samples: Sample[] }> {
  const answer = await httpGet(`${base}/metrics`);
  if (answer.status !== 200) throw new Error(`/metrics answered ${answer.status}: ${answer.body}`);
  return { text: answer.body, samples: parseMetrics(answer.body) };
}

/** Why the promtool/prometheus tests skip, or `undefined` (fails instead under RESIL_REQUIRE_SERVICES=1). */
export function prometheusUnavailableReason(binary: 'promtool' | 'prometheus'): string | undefined {
  if (commandExists(binary)) return undefined;
  const reason = `${binary} is not on PATH (Debian package prometheus)`;
  skipOrFail(`Prometheus tests skipped: ${reason}.`);
  return reason;
}

/** `promtool check metrics` on `text` (stdin): its findings, one per line (`name problem`). */
export function promtoolCheckMetrics(text: string): Promise<{ code: number | null; findings: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code, findings: output.split('\n').filter((line) => line.trim() !== '') }),
    );
    child.stdin.end(text);
  });
}

/** `promtool` with `args`, its exit code and output. */
export function promtool(args: readonly string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

export interface PrometheusServer {
  readonly url: string;
  readonly process: SpawnedProcess;
  /** `/api/v1/query?query=...`: the result vector (throws on an error answer). */
  query(promql: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  /** Stops this pid and removes its directory. */
  stop(): Promise<void>;
}

/**
 * A private `prometheus` scraping `target` (`127.0.0.1:9464`) every second as job `jobName`, with
 * its config and TSDB in a temp dir, on a free loopback port; resolves once `/-/ready` answers.
 */
export async function startPrometheus(target: string, jobName: string): Promise<PrometheusServer> {
  const directory = mkdtempSync(join(tmpdir(), 'resil-prometheus-'));
  const port = await freePort();
  const configFile = join(directory, 'prometheus.yml');
  writeFileSync(
    configFile,
    [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      '  evaluation_interval: 1s',
      'scrape_configs:',
      `  - job_name: ${JSON.stringify(jobName)}`,
      '    static_configs:',
      `      - targets: [${JSON.stringify(target)}]`,
      '',
    ].join('\n'),
  );
  const spawned = spawnProcess(
    'prometheus',
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(directory, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { name: `prometheus :${port}`, cwd: directory },
  );
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await spawned.stop();
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    await waitUntil(
      'prometheus /-/ready',
      async () => {
        if (spawned.hasExited()) throw new Error(`prometheus exited:\n${spawned.output().slice(-2000)}`);
        return (await httpGet(`${url}/-/ready`, { timeoutMs: 1_000 })).status === 200;
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    process: spawned,
    async query(promql) {
      const answer = await httpGet(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`);
      const body = JSON.parse(answer.body) as {
        status: string;
        error?: string;
        data?: {
          resultType: string;
          result: Array<{ metric: Record<string, string>; value: [number, string] }>;
        };
      };
      if (body.status !== 'success') throw new Error(`query ${promql} failed: ${body.error ?? answer.body}`);
      return body.data!.result;
    },
    stop,
  };
}
