/**
 * What the CLI's servers (`resil run --metrics`, `resil dashboard`) know of the addresses they
 * listen on: which names are host names, and which only this machine reaches.
 */

/**
 * `net.isIP()`: 4, 6, or 0 for no IP address. node:net is loaded on first use only; loading it
 * costs every command about 5 ms of its start, and only the servers' options need it.
 */
export function ipVersion(address: string): number {
  return (process.getBuiltinModule('node:net') as typeof import('node:net')).isIP(address);
}

const hostNamePattern =
  /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;

/** True for a DNS host name (letters, digits, hyphens; dot-separated labels of at most 63). */
export function isHostName(name: string): boolean {
  return hostNamePattern.test(name);
}

/**
 * True for a name or address that only this machine reaches: `localhost`, `127.0.0.0/8`, `::1`
 * (bracketed or not, in any of its spellings), and IPv4-mapped `::ffff:127.x.x.x`.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const lower = bare.toLowerCase();
  if (lower === 'localhost' || lower.endsWith('.localhost')) return true;
  if (ipVersion(lower) === 4) return lower.startsWith('127.');
  // The URL parser writes an IPv6 address one way (0:0:0:0:0:0:0:1 is [::1], ::ffff:127.0.0.1 is
  // [::ffff:7f00:1]); it refuses a zone (fe80::1%eth0), which is no loopback address anyway.
  if (ipVersion(lower) === 6 && URL.canParse(`http://[${lower}]/`)) {
    const canonical = new URL(`http://[${lower}]/`).hostname;
    return canonical === '[::1]' || /^\[::ffff:7f[0-9a-f]{2}:/.test(canonical);
  }
  return false;
}
