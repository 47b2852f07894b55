/**
 * `resil dashboard` over HTTP, without a browser: the built binary, its status codes, JSON shapes,
 * the action guard, bad options, and the in-memory store.
 */

import { lookup } from 'node:dns/promises';
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:net';
import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../../src/cli/listen-address.ts';
import { RedisLockStore } from '../../src/stores/redis/store.ts';
import { createProject, ensureCliBuilt, type Project, runCli, tsConfig } from '../cli/cli-support.ts';
import { ensureBuilt, type RunFixture } from '../cli/run-process.ts';
import { freePort } from '../support/processes.ts';
import { deleteKeys, redisUrlForTests, uniquePrefix } from '../support/redis.ts';
import { type DashboardProcess, startDashboard, writeDashboardFixture } from './dashboard-process.ts';

const redisUrl = await redisUrlForTests();
const dashboardInstance = `dashboard@${hostname()}`;

/**
 * This machine's name when it resolves to loopback addresses only (as /etc/hosts often has it):
 * `--host <it>` then takes the dashboard's non-loopback path (the name is no loopback name) while
 * nothing outside this machine can reach it. Undefined otherwise, and that test is skipped.
 */
const loopbackOnlyName = await (async () => {
  const name = hostname().toLowerCase();
  const addresses = await lookup(name, { all: true }).catch(() => []);
  if (
    /^[a-z0-9.-]+$/.test(name) &&
    !isLoopbackHost(name) &&
    addresses.length > 0 &&
    addresses.every(({ address }) => isLoopbackHost(address))
  ) {
    return name;
  }
  console.warn(
    `Dashboard test of a non-loopback --host skipped: this machine's name ${JSON.stringify(name)} does not resolve to loopback addresses only (${addresses.map(({ address }) => address).join(', ') || 'no address'}), and the test must not listen on the network. request-guard.test.ts covers that path.`,
  );
  return undefined;
})();

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: () => any;
}

/** One request with exactly `headers` (node:http, so Host and Origin are ours to set). */
function call(
  base: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: options.method ?? 'GET', headers: { connection: 'close', ...options.headers } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('end', () =>
          resolve({
            status: response.statusCode!,
            headers: response.headers,
            text,
            json: () => JSON.parse(text),
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

/** The page's token, from its `<meta name="resil-token">`. */
async function pageToken(dashboard: DashboardProcess): Promise<string | undefined> {
  const page = await call(dashboard.url, '/');
  return /<meta name="resil-token" content="([^"]+)">/.exec(page.text)?.[1];
}

/** A POST as the dashboard's own page sends it. */
function act(dashboard: DashboardProcess, token: string, path: string, body = '{}', headers = {}) {
  return call(dashboard.url, path, {
    method: 'POST',
    headers: {
      origin: dashboard.origin,
      'x-resil-token': token,
      'content-type': 'application/json',
      ...headers,
    },
    body,
  });
}

/** A port this test holds on 127.0.0.1: binding it again fails with EADDRINUSE, on 0.0.0.0 too. */
async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

beforeAll(() => {
  ensureCliBuilt();
  ensureBuilt();
}, 200_000);

describe('resil dashboard: the command', () => {
  let project: Project;
  beforeAll(() => {
    project = createProject({
      'resil.config.ts': tsConfig(`[
        { name: 'report', schedule: '0 2 * * *', run: async () => {} },
        { name: 'tick', schedule: '*/10 * * * * *', run: async () => {} },
      ]`),
    });
  });
  afterAll(() => project.remove());

  it('--help names every option, the API, the actions, the exit codes and examples; resil --help lists it', async () => {
    const help = await runCli(['dashboard', '--help']);
    expect(help.code).toBe(0);
    for (const text of [
      '--port <port>',
      '(default: 4300)',
      '--host <host>',
      '(default: "127.0.0.1")',
      '--allowed-host <name>',
      '--allow-actions',
      'GET /api/overview, GET /api/jobs/<name>[?limit=N]',
      'GET /api/job?name=<name>, which also reaches jobs named . and ..',
      'POST /api/jobs/<name>/trigger, /pause',
      "an Origin of http:// or https:// and the request's Host",
      'x-resil-token',
      'dashboard@<host>',
      'proxy_set_header Host $host;',
      'Exit codes: 0 after SIGINT/SIGTERM; 2 bad config, bad --port, --host or --allowed-host',
      '$ resil dashboard --allowed-host resil.example.com --allow-actions',
      '$ resil dashboard --port 8080 --allow-actions',
    ])
      expect(help.stdout).toContain(text);
    const top = await runCli(['--help']);
    expect(top.stdout).toMatch(/dashboard \[options\]/);
    expect(top.stdout).toContain('$ resil dashboard ');
  });

  it.each([
    [
      ['--port', 'abc'],
      "option '--port <port>' argument 'abc' is invalid. Expected a port number from 0 to 65535",
    ],
    [['--port', '65536'], "argument '65536' is invalid. Expected a port number from 0 to 65535"],
    [['--port', '-1'], "option '--port <port>' argument '-1' is invalid. Expected a port number"],
    [['--host', 'http://127.0.0.1'], 'Expected an IP address or a host name (no scheme: --host 127.0.0.1).'],
    [['--host', '127.0.0.1:8080'], 'Expected an IP address or a host name (give the port with --port).'],
    [['--host', 'not a host'], "option '--host <host>' argument 'not a host' is invalid"],
    [['--host', ''], "option '--host <host>' argument '' is invalid"],
    [
      ['--allowed-host', 'https://resil.example.com'],
      "option '--allowed-host <name>' argument 'https://resil.example.com' is invalid. Expected a host name or an IP address, optionally with a port from 1 to 65535 (no scheme: --allowed-host dashboard.example.com).",
    ],
    [
      ['--allowed-host', '*.example.com'],
      'optionally with a port from 1 to 65535 (no wildcard: give each name).',
    ],
    [['--allowed-host', 'resil.example.com/ops'], '(no path: --allowed-host dashboard.example.com).'],
    [['--allowed-host', 'resil.example.com:0'], "argument 'resil.example.com:0' is invalid. Expected a host"],
    [['--allowed-host', 'resil.example.com:65536'], "argument 'resil.example.com:65536' is invalid"],
    [['--allowed-host', '[not-ipv6]:443'], "argument '[not-ipv6]:443' is invalid"],
    [['--allowed-host', ''], "option '--allowed-host <name>' argument '' is invalid"],
  ])('%j: exit 2 with a clear error', async (args, message) => {
    const result = await runCli(['dashboard', ...args], { cwd: project.directory });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(message);
  });

  it('an address that is not this machine, a port in use: exit 2 naming it; a non-loopback host warns only with actions', async () => {
    const notOurs = await runCli(['dashboard', '--host', '192.0.2.1', '--port', '0'], {
      cwd: project.directory,
    });
    expect(notOurs.code, notOurs.stderr).toBe(2);
    expect(notOurs.stderr).toContain(
      'error: cannot listen on 192.0.2.1 port 0: --host 192.0.2.1 is not an address of this machine\n',
    );
    const held = await holdPort();
    try {
      const inUse = await runCli(['dashboard', '--port', String(held.port)], { cwd: project.directory });
      expect(inUse.code).toBe(2);
      expect(inUse.stderr).toBe(
        `error: cannot listen on 127.0.0.1 port ${held.port}: the port is in use; pick another with --port\n`,
      );
      // 0.0.0.0 cannot take a port 127.0.0.1 holds: the warning is seen, and nothing listens on the network.
      const wide = ['dashboard', '--host', '0.0.0.0', '--port', String(held.port)];
      const withActions = await runCli([...wide, '--allow-actions'], { cwd: project.directory });
      expect(withActions.code).toBe(2);
      expect(withActions.stderr).toMatch(
        /^warning: --host 0\.0\.0\.0 is not a loopback address and --allow-actions is on: anyone who can reach it can trigger, pause and resume jobs/,
      );
      const readOnly = await runCli(wide, { cwd: project.directory });
      expect(readOnly.code).toBe(2);
      expect(readOnly.stderr).not.toContain('warning');
      const loopbackActions = await runCli(
        ['dashboard', '--host', 'localhost', '--port', String(held.port), '--allow-actions'],
        { cwd: project.directory },
      );
      expect(loopbackActions.stderr).not.toContain('warning');
    } finally {
      held.server.close();
    }
  });

  it('on the in-memory store: serves the jobs and next runs, says history, pauses, leases and instances need a shared store; pause is 409', async () => {
    const dashboard = await startDashboard({ cwd: project.directory, args: ['--allow-actions'] });
    try {
      expect(dashboard.process.output()).toContain(
        "note: the config's store is the in-memory MemoryLockStore",
      );
      const overview = (await call(dashboard.url, '/api/overview')).json();
      expect(overview.store).toEqual({
        name: 'MemoryLockStore',
        shared: false,
        runLedger: true,
        pauses: false,
        instances: false,
        leases: true,
        error: null,
        notes: [
          "The config's store is the in-memory MemoryLockStore: it holds this dashboard's own runs only. History, pauses, leases and instances need a shared store (RedisLockStore, PostgresLockStore or MysqlLockStore) that every resil run uses.",
        ],
      });
      expect(overview.instances).toBeNull();
      expect(
        overview.jobs.map((job: { name: string; description: string }) => [job.name, job.description]),
      ).toEqual([
        ['report', 'At 02:00'],
        ['tick', 'Every 10 seconds'],
      ]);
      expect(Date.parse(overview.jobs[1].nextRun) - Date.now()).toBeLessThanOrEqual(10_000);
      const token = (await pageToken(dashboard))!;
      const pause = await act(dashboard, token, '/api/jobs/report/pause');
      expect(pause.status).toBe(409);
      expect(pause.json().error).toBe(
        "pause needs a shared store that every resil run reads, RedisLockStore, PostgresLockStore or MysqlLockStore: the config's store is the in-memory MemoryLockStore, which holds this process's runs only",
      );
      // A trigger runs in the dashboard's process, as resil jobs run would in its own.
      const trigger = await act(dashboard, token, '/api/jobs/report/trigger');
      expect([200, 202]).toContain(trigger.status);
      expect(trigger.json()).toMatchObject({ job: 'report', instance: dashboardInstance });
      dashboard.process.kill('SIGTERM');
      expect(await dashboard.process.exited).toEqual({ code: 0, signal: null });
    } finally {
      await dashboard.stop();
    }
  });
});

describe('resil dashboard: the Host it answers to (DNS rebinding) and the Origin of an action', () => {
  let project: Project;
  beforeAll(() => {
    project = createProject({
      'resil.config.ts': tsConfig(`[{ name: 'report', schedule: '0 2 * * *', run: async () => {} }]`),
    });
  });
  afterAll(() => project.remove());

  /** GET `/` under `host`: the status, and the token when the page carries one. */
  async function pageUnder(dashboard: DashboardProcess, host: string) {
    const page = await call(dashboard.url, '/', { headers: { host } });
    return { status: page.status, token: /<meta name="resil-token" content="([^"]+)">/.exec(page.text)?.[1] };
  }

  it('behind an HTTPS reverse proxy that passes the Host on: --allowed-host lets its name in, https:// Origin and all', async () => {
    const dashboard = await startDashboard({
      cwd: project.directory,
      args: [
        '--allow-actions',
        '--allowed-host',
        'resil.example.com',
        '--allowed-host',
        'ops.example.com:8443',
      ],
    });
    try {
      expect(dashboard.lines().find((line) => line.href)).toMatchObject({
        allowedHosts: ['resil.example.com', 'ops.example.com:8443'],
      });
      const proxied = await pageUnder(dashboard, 'resil.example.com');
      expect(proxied.status).toBe(200);
      expect(proxied.token).toMatch(/^[\w-]{43}$/);
      const viaProxy = (host: string, origin: string) =>
        act(dashboard, proxied.token!, '/api/jobs/report/trigger', '{}', { host, origin });
      const https = await viaProxy('resil.example.com', 'https://resil.example.com');
      expect([200, 202], https.text).toContain(https.status);
      expect(https.json()).toMatchObject({ job: 'report', instance: dashboardInstance });
      const onItsPort = await viaProxy('ops.example.com:8443', 'https://ops.example.com:8443');
      expect([200, 202, 409], onItsPort.text).toContain(onItsPort.status);
      // The loopback address still works; other names do not, GETs included.
      expect((await pageUnder(dashboard, new URL(dashboard.url).host)).status).toBe(200);
      for (const host of ['evil.example', 'ops.example.com', 'evil.resil.example.com']) {
        const refused = await call(dashboard.url, '/api/overview', { headers: { host } });
        expect(refused.status, host).toBe(403);
        expect(refused.json().error, host).toBe(
          `this dashboard answers requests for its loopback address, resil.example.com or ops.example.com:8443 only (Host header ${JSON.stringify(host)}); to answer to another name, such as a reverse proxy's, give it with --allowed-host`,
        );
      }
      // A proxy that drops the port (nginx's $host on 8443): the Origin no longer matches.
      const dropped = await viaProxy('resil.example.com', 'https://resil.example.com:8443');
      expect(dropped.status).toBe(403);
      expect(dropped.json().error).toMatch(/^an action must come from the dashboard's own page/);
    } finally {
      await dashboard.stop();
    }
  });

  it.skipIf(loopbackOnlyName === undefined)(
    'on a non-loopback --host: a rebound name is refused its page, its API and its actions; IP addresses and the --host name are served',
    async () => {
      const dashboard = await startDashboard({
        cwd: project.directory,
        args: ['--host', loopbackOnlyName!, '--allow-actions'],
      });
      try {
        expect(dashboard.url).toMatch(new RegExp(`^http://${loopbackOnlyName}:\\d+/$`));
        expect(dashboard.process.output()).toContain(
          `warning: --host ${loopbackOnlyName} is not a loopback address and --allow-actions is on: anyone who can reach it can trigger, pause and resume jobs (the Host and Origin checks and the page's token stop other web sites, not other people)`,
        );
        const { port } = new URL(dashboard.url);
        const own = await pageUnder(dashboard, `${loopbackOnlyName}:${port}`);
        expect(own.status).toBe(200);
        const token = own.token!;
        // A page of attacker.example whose name now resolves to the dashboard: its own Host and Origin.
        const attacker = { host: `attacker.example:${port}`, origin: `http://attacker.example:${port}` };
        const page = await call(dashboard.url, '/', { headers: { host: attacker.host } });
        expect(page.status).toBe(403);
        expect(page.text).not.toContain(token);
        expect(page.json().error).toBe(
          `this dashboard answers requests for an IP address or ${loopbackOnlyName} only (Host header "attacker.example:${port}"); to answer to another name, such as a reverse proxy's, give it with --allowed-host`,
        );
        expect(
          (await call(dashboard.url, '/api/overview', { headers: { host: attacker.host } })).status,
        ).toBe(403);
        const posted = await act(dashboard, token, '/api/jobs/report/trigger', '{}', attacker);
        expect(posted.status).toBe(403);
        expect(dashboard.lines().filter((line) => line.action)).toEqual([]);
        // Reached by an IP address, or by its --host name: served, and its own page may act.
        expect((await pageUnder(dashboard, `127.0.0.1:${port}`)).status).toBe(200);
        expect((await pageUnder(dashboard, `192.0.2.2:${port}`)).status).toBe(200);
        const byAddress = await act(dashboard, token, '/api/jobs/report/trigger', '{}', {
          host: `127.0.0.1:${port}`,
          origin: `http://127.0.0.1:${port}`,
        });
        expect([200, 202], byAddress.text).toContain(byAddress.status);
      } finally {
        await dashboard.stop();
      }
    },
  );
});

describe('resil dashboard: jobs named . and .., which a URL path cannot hold', () => {
  let project: Project;
  let dashboard: DashboardProcess;
  beforeAll(async () => {
    project = createProject({
      'resil.config.ts': tsConfig(`[
        { name: '..', schedule: '0 2 * * *', run: async () => {} },
        { name: '.', schedule: '0 3 * * *', run: async () => {} },
        { name: 'report', schedule: '0 4 * * *', run: async () => {} },
      ]`),
    });
    dashboard = await startDashboard({ cwd: project.directory, args: ['--allow-actions'] });
  });
  afterAll(async () => {
    await dashboard?.stop();
    project.remove();
  });

  it('/api/jobs/.. resolves to /api/ (as a browser and curl resolve it before sending); ?name= reaches the job', async () => {
    const resolved = await call(dashboard.url, '/api/jobs/%2E%2E');
    expect(resolved.status).toBe(404);
    expect(resolved.json()).toEqual({ error: 'nothing at /api/' });
    for (const name of ['..', '.', 'report']) {
      const answer = await call(dashboard.url, `/api/job?name=${encodeURIComponent(name)}&limit=5`);
      expect(answer.status, name).toBe(200);
      expect(answer.json().job, name).toMatchObject({ name, lockKey: name });
      expect(answer.json().nextRuns, name).toHaveLength(10);
    }
    expect((await call(dashboard.url, '/api/job?name=..&limit=0')).status).toBe(400);
    const page = await call(dashboard.url, '/job?name=..');
    expect(page.status).toBe(200);
    expect(page.text).toBe((await call(dashboard.url, '/')).text);
    expect((await call(dashboard.url, '/api/job?name=nope')).json()).toEqual({ error: 'unknown job "nope"' });
    for (const path of ['/job', '/api/job', '/api/job?name=']) {
      const missing = await call(dashboard.url, path);
      expect(missing.status, path).toBe(400);
      const bare = path.replace(/\?.*$/, '');
      expect(missing.json(), path).toEqual({ error: `${bare} needs the job's name: ${bare}?name=<name>` });
    }
  });

  it('POST /api/job/<action>?name=..: the actions reach it too', async () => {
    const token = (await pageToken(dashboard))!;
    const trigger = await act(dashboard, token, '/api/job/trigger?name=..');
    expect([200, 202], trigger.text).toContain(trigger.status);
    expect(trigger.json()).toMatchObject({ job: '..', instance: dashboardInstance });
    const pause = await act(dashboard, token, '/api/job/pause?name=.');
    expect(pause.status).toBe(409); // the in-memory store keeps no shared pause: the job was found
    expect((await act(dashboard, token, '/api/job/trigger')).status).toBe(400);
    expect((await act(dashboard, token, '/api/job/nothing?name=..')).status).toBe(404);
    expect((await call(dashboard.url, '/api/job/trigger?name=..')).headers.allow).toBe('POST');
    const refused = await act(dashboard, token, '/api/job/trigger?name=..', '{}', {
      origin: 'http://evil.example',
    });
    expect(refused.status).toBe(403);
  });
});

describe('resil dashboard on a store that does not answer', () => {
  it("still serves: the jobs and next runs, the store's error (no password); actions 503", async () => {
    const fixture = writeDashboardFixture({
      prefix: uniquePrefix('dashboard-down'),
      jobs: [{ name: 'report', schedule: '0 2 * * *', workMs: 10 }],
    });
    const url = `redis://:s3cret-password@127.0.0.1:${await freePort()}`;
    const dashboard = await startDashboard({
      cwd: fixture.directory,
      configPath: fixture.configPath,
      args: ['--allow-actions'],
      env: { FIXTURE_REDIS_URL: url, FIXTURE_INSTANCE: 'ops-1' },
    });
    try {
      const started = performance.now();
      const answer = await call(dashboard.url, '/api/overview');
      expect(performance.now() - started).toBeLessThan(6_000);
      expect(answer.status).toBe(200);
      const overview = answer.json();
      expect(overview.store.error).toMatch(/\S/);
      expect(overview.jobs).toMatchObject([
        { name: 'report', nextRun: expect.any(String), lastRun: null, lease: null },
      ]);
      expect(overview.instances).toBeNull();
      const token = (await pageToken(dashboard))!;
      for (const action of ['pause', 'resume', 'trigger']) {
        const refused = await act(dashboard, token, `/api/jobs/report/${action}`);
        expect(refused.status, action).toBe(503);
        expect(refused.json().error, action).toMatch(/^lock store unreachable: \S/);
        expect(refused.text).not.toContain('s3cret');
      }
      expect(answer.text).not.toContain('s3cret');
      expect(dashboard.process.output()).not.toContain('s3cret');
    } finally {
      await dashboard.stop();
      fixture.remove();
    }
  }, 30_000);
});

describe.skipIf(!redisUrl)('resil dashboard on Redis: the API', () => {
  let client: Redis;
  let fixture: RunFixture;
  let store: RedisLockStore;
  let dashboard: DashboardProcess;
  let readOnly: DashboardProcess;
  let token: string;

  beforeAll(async () => {
    client = new Redis(redisUrl!);
    fixture = writeDashboardFixture({
      prefix: uniquePrefix('dashboard-http'),
      jobs: [
        { name: 'report', schedule: '0 2 * * *', workMs: 10, timezone: 'Europe/Berlin' },
        { name: 'quick', schedule: '0 3 1 1 *', workMs: 10 },
        { name: 'unlocked', schedule: '0 4 1 1 *', workMs: 10, lock: false },
      ],
    });
    store = new RedisLockStore(client, { prefix: fixture.prefix });
    const options = {
      cwd: fixture.directory,
      configPath: fixture.configPath,
      env: { FIXTURE_REDIS_URL: redisUrl!, FIXTURE_INSTANCE: 'ops-1' },
    };
    [dashboard, readOnly] = await Promise.all([
      startDashboard({ ...options, args: ['--allow-actions'] }),
      startDashboard(options),
    ]);
    token = (await pageToken(dashboard))!;
  });
  afterAll(async () => {
    await Promise.all([dashboard?.stop(), readOnly?.stop()]);
    await deleteKeys(client, fixture.prefix);
    fixture.remove();
    await client.quit();
  });

  it('serves the page, its script and style from itself alone, a few tens of kB, under a strict CSP', async () => {
    const [page, script, style] = await Promise.all([
      call(dashboard.url, '/'),
      call(dashboard.url, '/dashboard.js'),
      call(dashboard.url, '/dashboard.css'),
    ]);
    expect([page.status, script.status, style.status]).toEqual([200, 200, 200]);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(style.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.text).toContain('<script src="/dashboard.js" defer></script>');
    expect(token).toMatch(/^[\w-]{43}$/);
    for (const text of [page.text, script.text, style.text])
      expect(text).not.toMatch(/https?:\/\/|\/\/[a-z]/i);
    const bytes =
      Buffer.byteLength(page.text) + Buffer.byteLength(script.text) + Buffer.byteLength(style.text);
    expect(bytes).toBeLessThan(50_000);
    // A job's page is the same page; the script reads the path.
    expect((await call(dashboard.url, '/jobs/report')).text).toBe(page.text);
    const head = await call(dashboard.url, '/', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    // Read-only: no token in the page.
    expect(await pageToken(readOnly)).toBeUndefined();
  });

  it('GET /api/overview: every job with its description, next run, last run, pause and lease; store; instances', async () => {
    const answer = await call(dashboard.url, '/api/overview');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.headers['cache-control']).toBe('no-store');
    const overview = answer.json();
    expect(Object.keys(overview)).toEqual(['now', 'config', 'actions', 'store', 'jobs', 'instances']);
    expect(Math.abs(Date.parse(overview.now) - Date.now())).toBeLessThan(5_000);
    expect(overview).toMatchObject({ config: fixture.configPath, actions: true, instances: [] });
    expect(overview.store).toEqual({
      name: 'RedisLockStore',
      shared: true,
      runLedger: true,
      pauses: true,
      instances: true,
      leases: true,
      error: null,
      notes: [],
    });
    expect(overview.jobs[0]).toEqual({
      name: 'report',
      schedule: '0 2 * * *',
      timezone: 'Europe/Berlin',
      enabled: true,
      nextRun: expect.stringMatching(/T0[01]:00:00\.000Z$/),
      lockKey: 'report',
      lastRun: null,
      paused: false,
      pause: null,
      drift: null,
      description: 'At 02:00',
      overlap: 'skip',
      lease: null,
    });
    expect(overview.jobs.map((job: { lockKey: string | null }) => job.lockKey)).toEqual([
      'report',
      'quick',
      null,
    ]);
    expect((await call(readOnly.url, '/api/overview')).json().actions).toBe(false);
  });

  it('GET /api/jobs/<name>: the job, its history and its next 10 runs; ?limit= 1 to 1000', async () => {
    const answer = await call(dashboard.url, '/api/jobs/report');
    expect(answer.status).toBe(200);
    const detail = answer.json();
    expect(Object.keys(detail)).toEqual([
      'now',
      'actions',
      'store',
      'job',
      'history',
      'nextRuns',
      'shiftedRuns',
    ]);
    expect(detail.job.name).toBe('report');
    expect(detail.history).toEqual([]);
    expect(detail.nextRuns).toHaveLength(10);
    expect(detail.shiftedRuns).toEqual([]);
    const instants = detail.nextRuns.map((iso: string) => Date.parse(iso));
    for (let index = 1; index < instants.length; index++)
      expect(instants[index] - instants[index - 1]).toBeGreaterThanOrEqual(23 * 3_600_000);
    for (const limit of ['0', '1001', 'abc', '-1', '1.5', '']) {
      const bad = await call(dashboard.url, `/api/jobs/report?limit=${limit}`);
      expect(bad.status, limit).toBe(400);
      expect(bad.json().error).toBe(
        `limit must be a whole number from 1 to 1000, not ${JSON.stringify(limit)}`,
      );
    }
    expect((await call(dashboard.url, '/api/jobs/report?limit=1000')).status).toBe(200);
  });

  it('unknown job 404, unknown path 404, wrong method 405, malformed job name 400', async () => {
    const unknown = await call(dashboard.url, '/api/jobs/nope');
    expect(unknown.status).toBe(404);
    expect(unknown.json()).toEqual({ error: 'unknown job "nope"' });
    expect((await act(dashboard, token, '/api/jobs/nope/pause')).status).toBe(404);
    expect((await act(dashboard, token, '/api/jobs/nope/trigger')).json()).toEqual({
      error: 'unknown job "nope"',
    });
    const nothing = await call(dashboard.url, '/api/nothing');
    expect(nothing.status).toBe(404);
    expect(nothing.json()).toEqual({ error: 'nothing at /api/nothing' });
    expect((await call(dashboard.url, '/favicon.ico')).status).toBe(404);
    const getAction = await call(dashboard.url, '/api/jobs/report/pause');
    expect(getAction.status).toBe(405);
    expect(getAction.headers.allow).toBe('POST');
    const postOverview = await act(dashboard, token, '/api/overview');
    expect(postOverview.status).toBe(405);
    expect(postOverview.headers.allow).toBe('GET, HEAD');
    expect((await call(dashboard.url, '/api/jobs/%E0%A4')).status).toBe(400);
  });

  it('POST: 403 without the token, with another Origin, without one, or from a rebound name', async () => {
    const refusals: Array<[string, Record<string, string>, RegExp]> = [
      [
        'no token',
        { 'x-resil-token': '' },
        /needs the token of the dashboard's page in the x-resil-token header/,
      ],
      [
        'a wrong token',
        { 'x-resil-token': token.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')) },
        /needs the token/,
      ],
      ['another site', { origin: 'http://evil.example' }, /must come from the dashboard's own page/],
      ['another port', { origin: 'http://127.0.0.1:1' }, /own page/],
      [
        'a rebound name',
        { host: `evil.example:${new URL(dashboard.url).port}`, origin: 'http://evil.example' },
        /loopback address only/,
      ],
    ];
    for (const [why, headers, error] of refusals) {
      const answer = await act(dashboard, token, '/api/jobs/report/pause', '{}', headers);
      expect(answer.status, why).toBe(403);
      expect(answer.json().error, why).toMatch(error);
    }
    const noOrigin = await call(dashboard.url, '/api/jobs/report/pause', {
      method: 'POST',
      headers: { 'x-resil-token': token },
      body: '{}',
    });
    expect(noOrigin.status).toBe(403);
    // A form of another site (no preflight): refused before its body is read.
    const form = await call(dashboard.url, '/api/jobs/report/trigger', {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'text/plain' },
      body: '{"x":1}',
    });
    expect(form.status).toBe(403);
    // Reads from a rebound name are refused too: its page could otherwise read the token.
    const rebound = await call(dashboard.url, '/', { headers: { host: 'evil.example' } });
    expect(rebound.status).toBe(403);
    expect(await store.pauseOf('report', { key: 'report' })).toBeUndefined();
  });

  it('without --allow-actions every POST is 403, whatever its path, origin and token', async () => {
    const readOnlyOrigin = { origin: readOnly.origin, 'x-resil-token': token };
    for (const path of [
      '/api/jobs/report/pause',
      '/api/jobs/report/trigger',
      '/api/jobs/report/resume',
      '/',
      '/api/nothing',
    ]) {
      const answer = await call(readOnly.url, path, { method: 'POST', headers: readOnlyOrigin, body: '{}' });
      expect(answer.status, path).toBe(403);
      expect(answer.json()).toEqual({
        error:
          'actions are off: start resil dashboard with --allow-actions to trigger, pause and resume jobs',
      });
    }
    expect(await store.pauseOf('report', { key: 'report' })).toBeUndefined();
  });

  it('malformed or wrong bodies: 400; too large: 413', async () => {
    const cases: Array<[string, string, RegExp]> = [
      ['/api/jobs/report/pause', '{"reason":', /^the request body is not JSON: /],
      ['/api/jobs/report/pause', 'reason=x', /^the request body is not JSON: /],
      ['/api/jobs/report/pause', '[]', /^the request body must be a JSON object$/],
      ['/api/jobs/report/pause', '"x"', /^the request body must be a JSON object$/],
      ['/api/jobs/report/pause', '{"reason": 5}', /^reason must be a string of at most 500 characters$/],
      ['/api/jobs/report/pause', JSON.stringify({ reason: 'x'.repeat(501) }), /^reason must be a string/],
      [
        '/api/jobs/report/pause',
        '{"why": "x"}',
        /^unknown field "why" in the body of pause: it takes reason$/,
      ],
      [
        '/api/jobs/report/trigger',
        '{"force": true}',
        /^unknown field "force" in the body of trigger: it takes reason$/,
      ],
      ['/api/jobs/report/resume', '{"reason": "x"}', /^unknown field "reason" in the body of resume/],
    ];
    for (const [path, body, error] of cases) {
      const answer = await act(dashboard, token, path, body);
      expect(answer.status, `${path} ${body}`).toBe(400);
      expect(answer.json().error, body).toMatch(error);
    }
    const large = await act(
      dashboard,
      token,
      '/api/jobs/report/pause',
      JSON.stringify({ reason: 'x'.repeat(20_000) }),
    );
    expect(large.status).toBe(413);
    expect(await store.pauseOf('report', { key: 'report' })).toBeUndefined();
  });

  it('pause, trigger while paused (409), resume, trigger: recorded as dashboard@<host> in the store', async () => {
    const paused = await act(dashboard, token, '/api/jobs/report/pause', '{"reason": "  migration  "}');
    expect(paused.status).toBe(200);
    const stored = await store.pauseOf('report', { key: 'report' });
    expect(stored).toMatchObject({ by: dashboardInstance, reason: 'migration' });
    expect(paused.json()).toEqual({
      job: 'report',
      paused: true,
      pause: {
        by: dashboardInstance,
        pausedAt: new Date(stored!.pausedAt).toISOString(),
        reason: 'migration',
      },
    });
    const listed = (await call(dashboard.url, '/api/overview')).json().jobs[0];
    expect(listed).toMatchObject({ paused: true, pause: { by: dashboardInstance, reason: 'migration' } });

    const refused = await act(dashboard, token, '/api/jobs/report/trigger');
    expect(refused.status).toBe(409);
    expect(refused.json().error).toBe(
      `report is paused by ${dashboardInstance}: resume it first (or run it anyway with resil jobs run report --force)`,
    );

    const resumed = await act(dashboard, token, '/api/jobs/report/resume', '');
    expect(resumed.status).toBe(200);
    expect(resumed.json()).toMatchObject({
      job: 'report',
      paused: false,
      resumed: { by: dashboardInstance },
    });
    expect(await store.pauseOf('report', { key: 'report' })).toBeUndefined();
    const again = await act(dashboard, token, '/api/jobs/report/resume');
    expect(again.json()).toEqual({ job: 'report', paused: false, resumed: null });

    const triggered = await act(dashboard, token, '/api/jobs/report/trigger');
    expect(triggered.status).toBe(202);
    const started = triggered.json();
    expect(started).toEqual({
      job: 'report',
      outcome: 'running',
      scheduledAt: expect.any(String),
      instance: dashboardInstance,
      token: expect.any(Number),
    });
    const history = await waitForHistory(() => store.runHistory('report', { key: 'report', limit: 5 }));
    expect(history[0]).toMatchObject({
      outcome: 'success',
      instance: dashboardInstance,
      token: started.token,
      scheduledAt: Date.parse(started.scheduledAt),
    });
    const detail = (await call(dashboard.url, '/api/jobs/report')).json();
    expect(detail.history[0]).toMatchObject({
      outcome: 'success',
      instance: dashboardInstance,
      token: started.token,
    });
    expect(detail.job.lastRun).toMatchObject({
      outcome: 'success',
      instance: dashboardInstance,
      durationMs: expect.any(Number),
    });
    expect(
      dashboard
        .lines()
        .filter((line) => line.action)
        .map((line) => [line.action, line.job]),
    ).toEqual([
      ['pause', 'report'],
      ['resume', 'report'],
      ['resume', 'report'],
      ['trigger', 'report'],
    ]);
  });

  it('a lock: false job is triggered too; its runs are not in the ledger', async () => {
    const triggered = await act(dashboard, token, '/api/jobs/unlocked/trigger');
    expect([200, 202]).toContain(triggered.status);
    expect(triggered.json()).toMatchObject({ job: 'unlocked', token: null });
    expect((await call(dashboard.url, '/api/jobs/unlocked')).json().history).toEqual([]);
  });
});

/** `read()` once it returns a finished record first (the run goes on after the 202). */
async function waitForHistory<T extends { outcome: string }>(read: () => Promise<T[]>): Promise<T[]> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const records = await read();
    if (records[0] !== undefined && records[0].outcome !== 'running') return records;
    if (performance.now() > deadline)
      throw new Error(`no finished run within 10 s: ${JSON.stringify(records)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('resil dashboard: a triggered job owns its run, not the dashboard', () => {
  let project: Project;
  beforeAll(() => {
    ensureCliBuilt();
    project = createProject({
      'resil.config.ts': tsConfig(`[
        {
          name: 'leaky',
          schedule: '0 2 * * *',
          run: async () => {
            void Promise.reject(new Error('nobody awaited this'));
            await new Promise((resolve) => setTimeout(resolve, 300));
          },
        },
      ]`),
    });
  }, 200_000);
  afterAll(() => project.remove());

  it('a stray rejection of a triggered run fails that run with its cause; the dashboard stays up and stops with 0', async () => {
    const dashboard = await startDashboard({ cwd: project.directory, args: ['--allow-actions'] });
    try {
      const token = (await pageToken(dashboard))!;
      const trigger = await act(dashboard, token, '/api/jobs/leaky/trigger');
      expect([200, 202]).toContain(trigger.status);
      await dashboard.process.waitForOutput(/"outcome":"failure"/, 10_000);
      expect(dashboard.lines().find((line) => line.outcome === 'failure')).toMatchObject({
        job: 'leaky',
        msg: 'job failed',
        err: {
          type: 'StrayJobError',
          message: "an unhandled rejection escaped the job's run: nobody awaited this",
        },
      });
      expect(dashboard.process.hasExited()).toBe(false);
      dashboard.process.kill('SIGTERM');
      expect(await dashboard.process.exited).toEqual({ code: 0, signal: null });
    } finally {
      await dashboard.stop();
    }
  });
});
