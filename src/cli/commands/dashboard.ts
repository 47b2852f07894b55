import { type Command, InvalidArgumentError } from 'commander';
import type { CommandHelpers } from '../command-helpers.ts';
import type { AllowedHost } from '../dashboard/request-guard.ts';
import { ipVersion, isHostName } from '../listen-address.ts';

/** `--port`: a whole number from 0 (any free port) to 65535. */
function parsePort(value: string): number {
  const port = /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN;
  if (!(port >= 0 && port <= 65_535)) {
    throw new InvalidArgumentError('Expected a port number from 0 to 65535 (0 picks a free port).');
  }
  return port;
}

/** `--host`: an IPv4 or IPv6 address (brackets optional) or a host name; no scheme, no port. */
function parseHost(value: string): string {
  const bare = value.startsWith('[') && value.endsWith(']') ? value.slice(1, -1) : value;
  if (ipVersion(bare) !== 0 || (bare === value && isHostName(value))) return bare;
  const hint = /^[a-z]+:\/\//i.test(value)
    ? ' (no scheme: --host 127.0.0.1)'
    : /:\d+$/.test(value) && ipVersion(value) === 0
      ? ' (give the port with --port)'
      : '';
  throw new InvalidArgumentError(`Expected an IP address or a host name${hint}.`);
}

/**
 * `--allowed-host`, repeatable: a host name or an IP address (IPv6 in brackets when a port
 * follows), optionally with a port; lower-cased, added to the ones given before it.
 */
function parseAllowedHost(value: string, previous: readonly AllowedHost[] = []): AllowedHost[] {
  const match = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(value);
  const name = match?.[1]?.toLowerCase();
  const port = match?.[2] === undefined ? undefined : Number(match[2]);
  const validName =
    name !== undefined &&
    (name.startsWith('[') ? ipVersion(name.slice(1, -1)) === 6 : ipVersion(name) === 4 || isHostName(name));
  if (validName && (port === undefined || (port >= 1 && port <= 65_535))) {
    return [...previous, port === undefined ? { name } : { name, port }];
  }
  if (ipVersion(value) === 6) return [...previous, { name: `[${value.toLowerCase()}]` }];
  const hint = /^[a-z]+:\/\//i.test(value)
    ? ' (no scheme: --allowed-host dashboard.example.com)'
    : value.includes('*')
      ? ' (no wildcard: give each name)'
      : value.includes('/')
        ? ' (no path: --allowed-host dashboard.example.com)'
        : '';
  throw new InvalidArgumentError(
    `Expected a host name or an IP address, optionally with a port from 1 to 65535${hint}.`,
  );
}

/** Adds `resil dashboard [--port <port>] [--host <host>] [--allowed-host <name>...] [--allow-actions]`. */
export function registerDashboardCommand(program: Command, helpers: CommandHelpers): Command {
  return program
    .command('dashboard')
    .description(
      "serve a web page of the fleet from the config's store: jobs, runs, leases and instances, live; with --allow-actions, trigger, pause and resume",
    )
    .option('--port <port>', 'the TCP port, 0 for any free one', parsePort, 4300)
    .option(
      '--host <host>',
      'the address to listen on; a non-loopback one serves the network',
      parseHost,
      '127.0.0.1',
    )
    .option(
      '--allowed-host <name>',
      "also answer requests whose Host is this name (a reverse proxy's: name or name:port); repeatable",
      parseAllowedHost,
    )
    .option(
      '--allow-actions',
      'let the page trigger, pause and resume jobs (otherwise every POST answers 403)',
    )
    .addHelpText(
      'after',
      `
The page (no external request, works offline) shows each job: its schedule in words
("every day at 02:00"), timezone, next run, last run with its outcome, duration and instance,
whether it is paused, and who holds its lease (instance, token, expiry); a job's page has its
history as a timeline, the error of its latest failure and its next 10 runs; an instances panel
lists every live resil run with its version, jobs, clock offset and last heartbeat. It asks the
JSON API every 2 s: GET /api/overview, GET /api/jobs/<name>[?limit=N] (or
GET /api/job?name=<name>, which also reaches jobs named . and ..).

Actions (--allow-actions) are POST /api/jobs/<name>/trigger, /pause (body {"reason": "..."})
and /resume (or POST /api/job/trigger?name=<name>, ...). Each must come from the dashboard's own
page: an Origin of http:// or https:// and the request's Host, and the page's token (new each
start) in the x-resil-token header; anything else answers 403. A triggered job runs in this
process through its whole pipeline, as resil jobs run does; its run and a pause are recorded as
dashboard@<host>. A paused job is not triggered (409).

Loopback only by default. Against DNS rebinding, every request (GETs too) whose Host header the
dashboard does not know answers 403: on a loopback --host, a loopback name with its port; on
another --host, an IP address, a loopback name or the --host value. Behind a reverse proxy that
passes the Host on (nginx: proxy_set_header Host $host;), name the proxy's host with
--allowed-host. A non-loopback --host serves whoever reaches it, and with --allow-actions prints
a warning: those checks and the token stop other web sites, not other people.
Needs a shared store (RedisLockStore, PostgresLockStore or MysqlLockStore) for history, pauses,
leases and instances: on the in-memory default store the page shows the config's jobs and next
runs, and says so. Logs (actions, triggered runs) are JSON lines on stdout; LOG_LEVEL sets the level.

Exit codes: 0 after SIGINT/SIGTERM; 2 bad config, bad --port, --host or --allowed-host, or the
address cannot be listened on (port in use, not this machine's); 1 after a graceful stop on an
error outside any triggered job, or a triggered job's process.exit(); 130/143 after a second
SIGINT/SIGTERM.

Examples:
  $ resil dashboard
  $ resil dashboard --port 8080 --allow-actions
  $ resil dashboard --host 0.0.0.0 --port 4300
  $ resil dashboard --allowed-host resil.example.com --allow-actions   (behind an HTTPS proxy)`,
    )
    .action(
      async (options: {
        port: number;
        host: string;
        allowedHost?: AllowedHost[];
        allowActions?: boolean;
      }) => {
        const { serveDashboard } = await import('../dashboard/serve.ts');
        await serveDashboard(helpers, {
          port: options.port,
          host: options.host,
          allowActions: options.allowActions === true,
          allowedHosts: options.allowedHost ?? [],
        });
      },
    );
}
