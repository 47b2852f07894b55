import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { type HostRefusal, refuseHost } from '../dashboard/request-guard.ts';
import { listenError, type MetricsAddress } from './address.ts';
import type { ReadinessReport } from './readiness.ts';

export interface MetricsRoutes {
  readonly registry: Registry;
  /** `/readyz`'s answer; `verbose` for `?verbose`. */
  readiness(verbose: boolean): { statusCode: number; report: ReadinessReport };
}

const metricsRefusal: HostRefusal = {
  server: 'this metrics endpoint',
  otherNames: 'to be scraped from elsewhere, listen on a network address: --metrics 0.0.0.0:<port>',
  anyNameOnNetwork: true,
};

/** The paths the server answers; anything else is 404. */
export const metricsPaths = ['/metrics', '/livez', '/readyz'] as const;

/**
 * The HTTP server of `resil run --metrics` (node:http) listening on `address`: `GET /metrics`
 * (Prometheus text format), `GET /livez`, `GET /readyz[?verbose]`; HEAD as GET without the body;
 * another method on those paths is 405, any other path 404. Nothing it answers waits for the store.
 * Listening on loopback, a request whose `Host` is not a loopback name with this port answers 403,
 * as the dashboard's do (`refuseHost`): a web page whose name was rebound to 127.0.0.1 must not
 * read job names and store errors. Listening on a network address, any Host is answered.
 */
export function createMetricsServer(routes: MetricsRoutes, address: MetricsAddress): Server {
  const server = createServer((request, response) => {
    const refused = refuseHost({ host: request.headers.host }, address, metricsRefusal);
    if (refused !== undefined) {
      send(response, 403, 'text/plain; charset=utf-8', `${refused}\n`);
      return;
    }
    answer(routes, request, response).catch(() => {
      // No detail: an error's text has no business on an unauthenticated endpoint.
      if (!response.headersSent) send(response, 500, 'text/plain; charset=utf-8', 'metrics failed\n');
      else response.destroy();
    });
  });
  // A scraper that stalls mid-request does not hold a socket for long.
  server.requestTimeout = 10_000;
  server.headersTimeout = 10_000;
  return server;
}

async function answer(
  routes: MetricsRoutes,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://metrics.invalid');
  const path = url.pathname;
  if (!(metricsPaths as readonly string[]).includes(path)) {
    send(response, 404, 'text/plain; charset=utf-8', `not found: ${path} (try ${metricsPaths.join(', ')})\n`);
    return;
  }
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('Allow', 'GET, HEAD');
    send(response, 405, 'text/plain; charset=utf-8', `${path} answers GET and HEAD only\n`);
    return;
  }
  if (path === '/metrics') {
    const text = await routes.registry.metrics();
    send(response, 200, routes.registry.contentType, text);
  } else if (path === '/livez') {
    // Answering at all is the check: a blocked event loop answers nothing, and the probe times out.
    send(response, 200, 'application/json', `${JSON.stringify({ status: 'pass' })}\n`);
  } else {
    const { statusCode, report } = routes.readiness(url.searchParams.has('verbose'));
    send(response, statusCode, 'application/json', `${JSON.stringify(report)}\n`);
  }
}

function send(response: ServerResponse, statusCode: number, contentType: string, body: string): void {
  response.statusCode = statusCode;
  response.setHeader('Content-Type', contentType);
  response.setHeader('Cache-Control', 'no-store');
  response.setHeader('X-Content-Type-Options', 'nosniff');
  response.setHeader('Content-Length', Buffer.byteLength(body));
  response.end(response.req.method === 'HEAD' ? undefined : body);
}

/** Listens on `address`; rejects with a `UsageError` (exit 2) naming why it cannot. */
export function listen(server: Server, address: MetricsAddress): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: unknown) => {
      server.off('listening', onListening);
      reject(listenError(address, error));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(address.port, address.host);
  });
}

/** Stops accepting, ends idle and in-flight connections (a scrape in progress is cut), resolves when closed. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
