import { ipVersion, isHostName } from '../listen-address.ts';
import { UsageError } from '../usage-error.ts';

/** Where the metrics server listens. */
export interface MetricsAddress {
  /** An IPv4 or IPv6 address (without brackets) or a host name. */
  readonly host: string;
  readonly port: number;
}

/** The host a bare port binds: loopback only, so nothing is exposed that was not asked for. */
export const defaultMetricsHost = '127.0.0.1';

/**
 * `--metrics [host:]port`: a bare port binds 127.0.0.1; any other interface (`0.0.0.0:9464`,
 * `[::]:9464`, `metrics.internal:9464`) must be named. Throws `UsageError` (exit 2) for a value
 * that is not a port 1-65535, or whose host part is empty or malformed.
 *
 * @example parseMetricsAddress('9464') // { host: '127.0.0.1', port: 9464 }
 * @example parseMetricsAddress('[::1]:9464') // { host: '::1', port: 9464 }
 */
export function parseMetricsAddress(value: string): MetricsAddress {
  const bad = (why: string) =>
    new UsageError(
      `invalid --metrics ${JSON.stringify(value)}: ${why} (use a port such as 9464, or host:port such as 0.0.0.0:9464 or [::]:9464)`,
    );
  const text = value.trim();
  if (text === '') throw bad('it is empty');
  let host: string;
  let portText: string;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close === -1) throw bad('the IPv6 address has no closing "]"');
    host = text.slice(1, close);
    if (ipVersion(host) !== 6) throw bad(`"${host}" is not an IPv6 address`);
    if (text[close + 1] !== ':') throw bad('a port must follow the IPv6 address, after ":"');
    portText = text.slice(close + 2);
  } else {
    const colon = text.lastIndexOf(':');
    if (colon === -1) {
      host = defaultMetricsHost;
      portText = text;
    } else {
      host = text.slice(0, colon);
      portText = text.slice(colon + 1);
      if (host.includes(':')) throw bad('an IPv6 host needs brackets, as in [::1]:9464');
      if (host === '') throw bad('the host before ":" is empty; a bare port (9464) binds 127.0.0.1');
      if (ipVersion(host) === 0 && !isHostName(host)) throw bad(`"${host}" is not a host name or IP address`);
    }
  }
  if (portText === '') throw bad('the port is missing');
  if (!/^\d+$/.test(portText)) throw bad(`"${portText}" is not a port number`);
  const port = Number(portText);
  if (port < 1 || port > 65_535) throw bad(`port ${port} is out of range 1-65535`);
  return { host, port };
}

/** `127.0.0.1:9464`, `[::1]:9464`: the address as a URL's host part. */
export function formatMetricsAddress(address: MetricsAddress): string {
  return ipVersion(address.host) === 6
    ? `[${address.host}]:${address.port}`
    : `${address.host}:${address.port}`;
}

/**
 * The error of a failed `listen()` as a `UsageError` naming the address and what to do: the port
 * is in use, needs privileges, or the host is not one of this machine's.
 */
export function listenError(address: MetricsAddress, error: unknown): UsageError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const where = `--metrics ${formatMetricsAddress(address)}`;
  const why =
    code === 'EADDRINUSE'
      ? 'the port is already in use (another resil run, or another server): choose another port'
      : code === 'EACCES'
        ? 'permission denied (ports below 1024 need privileges): choose a port above 1023'
        : code === 'EADDRNOTAVAIL'
          ? 'this machine has no such address: name one of its interfaces, or 0.0.0.0 for all'
          : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
            ? 'the host name does not resolve'
            : error instanceof Error
              ? error.message
              : String(error);
  return new UsageError(`${where}: cannot listen: ${why}${code === undefined ? '' : ` (${code})`}`);
}
