import { timingSafeEqual } from 'node:crypto';
import { ipVersion, isLoopbackHost } from '../listen-address.ts';

/** The header a dashboard page sends its per-process token in, with every action (POST). */
export const tokenHeader = 'x-resil-token';

/** A name given with `--allowed-host`: the dashboard also answers requests whose Host is it. */
export interface AllowedHost {
  /** A host name or an IP address, lower case; an IPv6 address in brackets (`[2001:db8::1]`). */
  readonly name: string;
  /** Only this port; any port (or none) when undefined. */
  readonly port?: number;
}

/** Where the dashboard listens, and the names it answers to. */
export interface DashboardBinding {
  /** The `--host` given: an address or a name. */
  readonly host: string;
  /** The port it listens on (the one the OS picked for `--port 0`). */
  readonly port: number;
  /** `--allowed-host`: names a request's Host may carry besides the ones the binding accepts. Defaults to none. */
  readonly allowedHosts?: readonly AllowedHost[];
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

/** An IPv4 address, or an IPv6 address in brackets, as a Host header writes them. */
function isAddressLiteral(name: string): boolean {
  return name.startsWith('[') ? ipVersion(name.slice(1, -1)) === 6 : ipVersion(name) === 4;
}

interface Authority {
  /** Lower case; IPv6 in brackets. */
  readonly name: string;
  /** Undefined when the header has none. */
  readonly port: number | undefined;
}

/** `127.0.0.1:4300` as name and port; undefined when malformed. */
function parseHostHeader(header: string | undefined): Authority | undefined {
  const match = header === undefined ? null : /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(header);
  if (match === null) return undefined;
  return { name: match[1]!.toLowerCase(), port: match[2] === undefined ? undefined : Number(match[2]) };
}

/** An {@link AllowedHost} as given: `dashboard.example.com`, `dashboard.example.com:8443`. */
export function formatAllowedHost(allowed: AllowedHost): string {
  return allowed.port === undefined ? allowed.name : `${allowed.name}:${allowed.port}`;
}

/** `a`, `a or b`, `a, b or c`. */
function joinOr(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

/** Who refuses a Host, in {@link refuseHost}'s message, and how to make it answer another name. */
export interface HostRefusal {
  /** `this dashboard` */
  readonly server: string;
  /** What to do to answer another name. */
  readonly otherNames: string;
  /**
   * Bound to a network address, answer any Host: true for the metrics endpoint, which scrapers
   * name as they please (`web-1:9464`) and which whoever reaches that address can read anyway.
   * Defaults to false: the dashboard has `--allowed-host` for its names.
   */
  readonly anyNameOnNetwork?: boolean;
}

const dashboardRefusal: HostRefusal = {
  server: 'this dashboard',
  otherNames: "to answer to another name, such as a reverse proxy's, give it with --allowed-host",
};

/**
 * Why the request must be refused before anything else (403, GETs included), or `undefined`.
 * The one Host check of the CLI's servers: `resil dashboard` and `resil run --metrics` (with
 * `refusal` naming the metrics endpoint, and no `allowedHosts`).
 * A page of another site whose name was made to resolve to the server's address (DNS
 * rebinding) sends its own name in `Host`, so the server answers only the names it knows:
 *
 * - bound to a loopback host: a loopback name (`127.0.0.1`, `localhost`, `[::1]`) with its own port;
 * - bound to a network address: an IP address (a rebinding page cannot make its Host one), a
 *   loopback name, or the `--host` value itself; any name with `refusal.anyNameOnNetwork`;
 * - either way, a name given with `--allowed-host` (a reverse proxy's, which forwards the Host).
 *
 * Refused, a rebinding page can neither read the dashboard's API nor fetch the page's token.
 */
export function refuseHost(
  request: Pick<GuardedRequest, 'host'>,
  binding: DashboardBinding,
  refusal: HostRefusal = dashboardRefusal,
): string | undefined {
  const allowed = binding.allowedHosts ?? [];
  const parsed = parseHostHeader(request.host);
  if (parsed !== undefined) {
    const { name, port } = parsed;
    if (allowed.some((entry) => entry.name === name && (entry.port === undefined || entry.port === port))) {
      return undefined;
    }
    if (isLoopbackHost(binding.host)) {
      if (isLoopbackHost(name) && (port ?? 80) === binding.port) return undefined;
    } else if (
      refusal.anyNameOnNetwork === true ||
      isAddressLiteral(name) ||
      isLoopbackHost(name) ||
      name === binding.host.toLowerCase()
    ) {
      return undefined;
    }
  }
  const names = isLoopbackHost(binding.host)
    ? ['its loopback address']
    : ['an IP address', ...(ipVersion(binding.host) === 0 ? [binding.host] : [])];
  names.push(...allowed.map(formatAllowedHost));
  return `${refusal.server} answers requests for ${joinOr(names)} only (Host header ${JSON.stringify(request.host ?? '')}); ${refusal.otherNames}`;
}

/**
 * True when `origin` is `http://` or `https://` followed by the host and port of `host` (a Host
 * header): a dashboard behind a TLS-terminating proxy is reached as `https://`. A port left out is
 * the scheme's default one, on either side.
 */
function isOriginOf(origin: string | undefined, host: string): boolean {
  const match = /^(https?):\/\/(\[[0-9a-f:.]+\]|[^:/[\]]+)(?::(\d{1,5}))?$/i.exec(origin ?? '');
  const authority = parseHostHeader(host);
  if (match === null || authority === undefined) return false;
  const defaultPort = match[1]!.toLowerCase() === 'https' ? 443 : 80;
  const originPort = match[3] === undefined ? defaultPort : Number(match[3]);
  return match[2]!.toLowerCase() === authority.name && originPort === (authority.port ?? defaultPort);
}

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Why an action (a POST) must be refused with 403, or `undefined` to let it through: actions off
 * (`expectedToken` undefined, no `--allow-actions`), a Host refused by {@link refuseHost}, an
 * `Origin` other than the dashboard's own (`http://` or `https://` + the Host it was asked under: a
 * form or a script of another site sends its own), or a token other than the page's. Another site
 * cannot read the page, so it cannot learn the token.
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
  if (request.host === undefined || !isOriginOf(request.origin, request.host)) {
    return `an action must come from the dashboard's own page (Origin ${JSON.stringify(request.origin ?? null)})`;
  }
  if (request.token === undefined || !sameToken(request.token, expectedToken)) {
    return `an action needs the token of the dashboard's page in the ${tokenHeader} header`;
  }
  return undefined;
}
