import { timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

/** The header a dashboard page sends its per-process token in, with every action (POST). */
export const tokenHeader = 'x-resil-token';

/** Where the dashboard listens. */
export interface DashboardBinding {
  /** The `--host` given: an address or a name. */
  readonly host: string;
  /** The port it listens on (the one the OS picked for `--port 0`). */
  readonly port: number;
}

/** What the guard reads of a request. */
export interface GuardedRequest {
  /** The `Host` header. */
  readonly host: string | undefined;
  /** The `Origin` header. */
  readonly origin: string | undefined;
  /** The {@link tokenHeader} header. */
  readonly token: string | undefined;
}

/**
 * True for a name or address that only this machine reaches: `localhost`, `127.0.0.0/8`, `::1`
 * (bracketed or not), and IPv4-mapped `::ffff:127.x.x.x`.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const lower = bare.toLowerCase();
  if (lower === 'localhost' || lower.endsWith('.localhost')) return true;
  if (isIP(lower) === 4) return lower.startsWith('127.');
  if (isIP(lower) === 6) return lower === '::1' || /^::ffff:127\./.test(lower);
  return false;
}

/** `127.0.0.1:4300` as name and port (80 when the header has none); undefined when malformed. */
function parseHostHeader(header: string): { name: string; port: number } | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(header);
  if (match === null) return undefined;
  return { name: match[1]!, port: match[2] === undefined ? 80 : Number(match[2]) };
}

/**
 * Why the request must be refused before anything else, or `undefined`. Bound to a loopback host,
 * the dashboard answers only requests addressed to a loopback name and its own port: a page of
 * another site whose name was made to resolve to 127.0.0.1 (DNS rebinding) sends its own name in
 * `Host`, and so can neither read the dashboard nor fetch the page's token. Bound to a network
 * address, every name is accepted: whoever reaches it can read it anyway.
 */
export function refuseHost(
  request: Pick<GuardedRequest, 'host'>,
  binding: DashboardBinding,
): string | undefined {
  if (!isLoopbackHost(binding.host)) return undefined;
  const parsed = request.host === undefined ? undefined : parseHostHeader(request.host);
  if (parsed === undefined || !isLoopbackHost(parsed.name) || parsed.port !== binding.port) {
    return `this dashboard answers requests for its loopback address only (Host header ${JSON.stringify(request.host ?? '')})`;
  }
  return undefined;
}

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Why an action (a POST) must be refused with 403, or `undefined` to let it through: actions off
 * (`expectedToken` undefined, no `--allow-actions`), a Host refused by {@link refuseHost}, an
 * `Origin` other than the dashboard's own (`http://` + the Host it was asked under: a form or a
 * script of another site sends its own), or a token other than the page's. Another site cannot
 * read the page, so it cannot learn the token.
 */
export function refuseAction(
  request: GuardedRequest,
  binding: DashboardBinding,
  expectedToken: string | undefined,
): string | undefined {
  if (expectedToken === undefined) {
    return 'actions are off: start resil dashboard with --allow-actions to trigger, pause and resume jobs';
  }
  const host = refuseHost(request, binding);
  if (host !== undefined) return host;
  if (
    request.host === undefined ||
    request.origin?.toLowerCase() !== `http://${request.host.toLowerCase()}`
  ) {
    return `an action must come from the dashboard's own page (Origin ${JSON.stringify(request.origin ?? null)})`;
  }
  if (request.token === undefined || !sameToken(request.token, expectedToken)) {
    return `an action needs the token of the dashboard's page in the ${tokenHeader} header`;
  }
  return undefined;
}
