import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeError } from '../../scheduler/credentials.ts';
import type { ResolvedConfig, ResolvedJob } from '../../scheduler/job.ts';
import type { SchedulerLogger } from '../../scheduler/runner.ts';
import { maxReasonLength } from '../reason.ts';
import { type ActionResult, DashboardActions } from './actions.ts';
import { historyLimits, readJobDetail, readOverview } from './api.ts';
import { pageHtml, pageScript, pageStyle } from './page.ts';
import {
  type AllowedHost,
  type DashboardBinding,
  refuseAction,
  refuseHost,
  tokenHeader,
} from './request-guard.ts';

export interface DashboardServerOptions {
  readonly config: ResolvedConfig;
  /** `--host`: where to listen. */
  readonly host: string;
  /** `--port`: 0 for a free one. */
  readonly port: number;
  /** `--allowed-host`: more names a request's Host may carry (see `refuseHost`). Defaults to none. */
  readonly allowedHosts?: readonly AllowedHost[];
  /** `--allow-actions`: trigger, pause and resume by POST; otherwise every POST answers 403. */
  readonly actions: boolean;
  /** The name actions are recorded under (`dashboard@<host>`). */
  readonly instance: string;
  readonly logger: SchedulerLogger;
}

export interface DashboardServer {
  /** `http://127.0.0.1:4300/` */
  readonly url: string;
  readonly port: number;
  /** Stops listening, closes open connections, aborts triggered runs and waits for them (5 s at most). */
  close(): Promise<void>;
}

/** The largest request body an action accepts. */
const maxBodyBytes = 16 * 1024;
const actionNames = ['trigger', 'pause', 'resume'] as const;
type ActionName = (typeof actionNames)[number];

/** On every answer: nothing but this origin's own script, style and API; no framing; no referrer. */
const securityHeaders = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
} as const;

/** A request the server refuses with `status` and a JSON `{ error }`. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

function send(
  response: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, {
    ...securityHeaders,
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    ...headers,
  });
  response.end(body);
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers?: Record<string, string>) {
  send(response, status, 'application/json; charset=utf-8', `${JSON.stringify(body, null, 2)}\n`, headers);
}

function allowOnly(method: string, allowed: readonly string[]): void {
  if (!allowed.includes(method)) {
    throw new HttpError(405, `${method} is not allowed here: use ${allowed.join(' or ')}`, {
      allow: allowed.join(', '),
    });
  }
}

/** The request's JSON body: an object, or `{}` when empty; 400 when it is not JSON, 413 past 16 kB. */
async function readJsonBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBodyBytes)
      throw new HttpError(413, `the request body is larger than ${maxBodyBytes} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, `the request body is not JSON: ${(error as Error).message}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError(400, 'the request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/** Fields an action's body may have, and their checks. */
function checkBody(action: ActionName, body: Record<string, unknown>): { reason?: string } {
  const allowed = action === 'resume' ? [] : ['reason'];
  const unknown = Object.keys(body).filter((field) => !allowed.includes(field));
  if (unknown.length > 0) {
    throw new HttpError(
      400,
      `unknown field ${JSON.stringify(unknown[0])} in the body of ${action}${allowed.length === 0 ? ' (it takes none)' : `: it takes ${allowed.join(', ')}`}`,
    );
  }
  if (body.reason === undefined || body.reason === null) return {};
  // Measured after the trim, as the CLI's --reason is.
  const reason = typeof body.reason === 'string' ? body.reason.trim() : undefined;
  if (reason === undefined || reason.length > maxReasonLength) {
    throw new HttpError(400, `reason must be a string of at most ${maxReasonLength} characters`);
  }
  return reason === '' ? {} : { reason };
}

function decodeName(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new HttpError(400, `malformed job name in the path: ${JSON.stringify(encoded)}`);
  }
}

/**
 * `?name=` of `/job`, `/api/job` and `/api/job/<action>`: the form that addresses any job, also
 * `.` and `..`, which a URL cannot hold as a path segment (browsers and `new URL()` resolve them
 * away: `/api/jobs/..` is `/api/`).
 */
function nameParam(params: URLSearchParams, path: string): string {
  const name = params.get('name');
  if (name === null || name === '') {
    throw new HttpError(400, `${path} needs the job's name: ${path}?name=<name>`);
  }
  return name;
}

/** `?limit=`: 1 to 1000, else 400. */
function limitOf(params: URLSearchParams): number {
  const value = params.get('limit');
  if (value === null) return historyLimits.default;
  const limit = /^\d{1,4}$/.test(value) ? Number(value) : Number.NaN;
  if (!(limit >= 1 && limit <= historyLimits.max)) {
    throw new HttpError(
      400,
      `limit must be a whole number from 1 to ${historyLimits.max}, not ${JSON.stringify(value)}`,
    );
  }
  return limit;
}

/**
 * Serves the page (`/`, `/jobs/<name>`), its script and style, the JSON API (`GET /api/overview`,
 * `GET /api/jobs/<name>[?limit=N]`) and, with actions on, `POST /api/jobs/<name>/trigger|pause|resume`;
 * `/job?name=<name>`, `/api/job?name=<name>` and `/api/job/<action>?name=<name>` address any job
 * too, also `.` and `..`. A request whose Host {@link refuseHost} refuses answers 403.
 * Every POST is checked by {@link refuseAction}: without `--allow-actions` each answers 403.
 * Resolves once listening; rejects with the listen error (`EADDRINUSE`, `EADDRNOTAVAIL`, ...).
 */
export async function startDashboardServer(options: DashboardServerOptions): Promise<DashboardServer> {
  const { config, logger } = options;
  const token = options.actions ? randomBytes(32).toString('base64url') : undefined;
  const actions = new DashboardActions(config, { instance: options.instance, logger });
  const allowedHosts = options.allowedHosts ?? [];
  let binding: DashboardBinding = { host: options.host, port: options.port, allowedHosts };
  const jobNamed = (name: string): ResolvedJob => {
    const job = config.jobs.find((candidate) => candidate.name === name);
    if (job === undefined) throw new HttpError(404, `unknown job ${JSON.stringify(name)}`);
    return job;
  };

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const method = request.method ?? 'GET';
    const refusedHost = refuseHost({ host: request.headers.host }, binding);
    if (refusedHost !== undefined) throw new HttpError(403, refusedHost);
    // Read-only: every POST is refused alike, whatever its path.
    if (method === 'POST' && token === undefined) {
      throw new HttpError(
        403,
        refuseAction({ host: undefined, origin: undefined, token: undefined }, binding, token)!,
      );
    }
    const url = new URL(request.url ?? '/', 'http://dashboard');
    const path = url.pathname;

    if (path === '/' || path === '/job' || /^\/jobs\/[^/]+\/?$/.test(path)) {
      allowOnly(method, ['GET', 'HEAD']);
      if (path === '/job') nameParam(url.searchParams, path);
      return send(response, 200, 'text/html; charset=utf-8', pageHtml(token === undefined ? {} : { token }));
    }
    if (path === '/dashboard.js') {
      allowOnly(method, ['GET', 'HEAD']);
      return send(response, 200, 'text/javascript; charset=utf-8', pageScript());
    }
    if (path === '/dashboard.css') {
      allowOnly(method, ['GET', 'HEAD']);
      return send(response, 200, 'text/css; charset=utf-8', pageStyle);
    }
    if (path === '/api/overview') {
      allowOnly(method, ['GET', 'HEAD']);
      return sendJson(response, 200, await readOverview(config, token !== undefined));
    }
    const jobPath = /^\/api\/jobs\/([^/]+)$/.exec(path);
    if (jobPath !== null || path === '/api/job') {
      allowOnly(method, ['GET', 'HEAD']);
      const job = jobNamed(jobPath === null ? nameParam(url.searchParams, path) : decodeName(jobPath[1]!));
      const limit = limitOf(url.searchParams);
      return sendJson(
        response,
        200,
        await readJobDetail(config, job, { actions: token !== undefined, limit }),
      );
    }
    const actionPath = (
      /^\/api\/jobs\/(?<segment>[^/]+)\/(?<action>[^/]+)$/.exec(path) ??
      /^\/api\/job\/(?<action>[^/]+)$/.exec(path)
    )?.groups as { segment?: string; action: string } | undefined;
    if (actionPath !== undefined && (actionNames as readonly string[]).includes(actionPath.action)) {
      allowOnly(method, ['POST']);
      const refused = refuseAction(
        {
          host: request.headers.host,
          origin: request.headers.origin,
          token: request.headers[tokenHeader] as string | undefined,
        },
        binding,
        token,
      );
      if (refused !== undefined) throw new HttpError(403, refused);
      const action = actionPath.action as ActionName;
      const { segment } = actionPath;
      const job = jobNamed(segment === undefined ? nameParam(url.searchParams, path) : decodeName(segment));
      const body = checkBody(action, await readJsonBody(request));
      const remote = request.socket.remoteAddress;
      logger.debug({ action, job: job.name, remote }, `dashboard: ${action} asked`);
      const result: ActionResult =
        action === 'trigger'
          ? await actions.trigger(job, body.reason)
          : action === 'pause'
            ? await actions.pause(job, body.reason)
            : await actions.resume(job);
      return sendJson(response, result.status, result.body);
    }
    throw new HttpError(404, `nothing at ${path}`);
  }

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (response.headersSent) {
        response.destroy();
        return;
      }
      if (error instanceof HttpError) {
        sendJson(response, error.status, { error: error.message }, error.headers);
        return;
      }
      logger.error({ error: describeError(error), path: request.url }, 'dashboard: request failed');
      sendJson(response, 500, { error: 'internal error (see the dashboard log)' });
    });
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  binding = { host: options.host, port, allowedHosts };
  const urlHost =
    options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
  return {
    url: `http://${urlHost}:${port}/`,
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await Promise.all([closed, actions.stop()]);
    },
  };
}
