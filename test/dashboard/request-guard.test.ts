/**
 * The dashboard's one Host, origin and token check, as a table: every way a request can come, and
 * whether it is let through.
 */
import { describe, expect, it } from 'vitest';
import {
  type DashboardBinding,
  formatAllowedHost,
  type GuardedRequest,
  type HostRefusal,
  refuseAction,
  refuseHost,
} from '../../src/cli/dashboard/request-guard.ts';
import { isLoopbackHost } from '../../src/cli/listen-address.ts';

const token = 'k3Jc9mC1uHq0bXvWZ8sV4aTg2yPqN7rLeF5dO6iU1wE';
const loopback: DashboardBinding = { host: '127.0.0.1', port: 4300 };
const network: DashboardBinding = { host: '0.0.0.0', port: 4300 };
/** `--host dashboard.internal`: a name, not an address. */
const named: DashboardBinding = { host: 'dashboard.internal', port: 4300 };
/** Loopback behind a reverse proxy that passes the Host on: `--allowed-host resil.example.com --allowed-host ops.example.com:8443`. */
const proxied: DashboardBinding = {
  host: '127.0.0.1',
  port: 4300,
  allowedHosts: [{ name: 'resil.example.com' }, { name: 'ops.example.com', port: 8443 }],
};
/** `--host 0.0.0.0 --allowed-host dashboard.internal`. */
const networkAllowed: DashboardBinding = {
  host: '0.0.0.0',
  port: 4300,
  allowedHosts: [{ name: 'dashboard.internal' }],
};
const own: GuardedRequest = { host: '127.0.0.1:4300', origin: 'http://127.0.0.1:4300', token };

describe('isLoopbackHost', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['localhost', true],
    ['LOCALHOST', true],
    ['app.localhost', true],
    ['::1', true],
    ['[::1]', true],
    ['0:0:0:0:0:0:0:1', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:7f00:1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['::ffff:128.0.0.1', false],
    ['fe80::1%eth0', false],
    ['10.0.0.5', false],
    ['128.0.0.1', false],
    ['localhost.example.com', false],
    ['example.com', false],
  ])('%s: %s', (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });
});

describe('refuseHost', () => {
  it.each<[string, DashboardBinding, string | undefined, boolean]>([
    // Bound to loopback: its loopback names with its port.
    ['its own address', loopback, '127.0.0.1:4300', true],
    ['localhost', loopback, 'localhost:4300', true],
    ['IPv6 loopback', loopback, '[::1]:4300', true],
    ['another port', loopback, '127.0.0.1:8080', false],
    ['a rebound name (DNS rebinding)', loopback, 'evil.example:4300', false],
    ['a network IP address', loopback, '192.0.2.2:4300', false],
    ['no port: 80', loopback, '127.0.0.1', false],
    ['no Host header', loopback, undefined, false],
    ['a malformed Host', loopback, '127.0.0.1:4300:1', false],
    ['an empty Host', loopback, '', false],
    // Bound to a network address: IP addresses, loopback names, the --host value; no other name.
    ['an IP address', network, '192.0.2.2:4300', true],
    ['the any address itself', network, '0.0.0.0:4300', true],
    ['an IP address on another port (a port forwarded)', network, '192.0.2.2:8080', true],
    ['an IP address without a port', network, '192.0.2.2', true],
    ['a bracketed IPv6 address', network, '[fd00::2]:4300', true],
    ['loopback', network, '127.0.0.1:4300', true],
    ['localhost', network, 'localhost:4300', true],
    ['a rebound name (DNS rebinding)', network, 'attacker.example:4392', false],
    ['a rebound name without a port', network, 'attacker.example', false],
    ['a name that spells an address', network, '192.0.2.2.nip.io:4300', false],
    ['an IPv6 address without brackets', network, 'fd00::2', false],
    ['a zone in brackets', network, '[fe80::1%25eth0]:4300', false],
    ['no Host header', network, undefined, false],
    ['its --host name', named, 'dashboard.internal:4300', true],
    ['its --host name in capitals', named, 'DASHBOARD.Internal:4300', true],
    ['its --host name on another port', named, 'dashboard.internal:80', true],
    ['another name', named, 'other.internal:4300', false],
    ['a name ending in its --host name', named, 'evil-dashboard.internal:4300', false],
    // --allowed-host: a name alone matches every port; a name:port that port only.
    ['an allowed name, no port (a proxy on 443)', proxied, 'resil.example.com', true],
    ['an allowed name, any port', proxied, 'resil.example.com:4300', true],
    ['an allowed name in capitals', proxied, 'Resil.Example.COM', true],
    ['an allowed name:port', proxied, 'ops.example.com:8443', true],
    ['an allowed name, another port than its own', proxied, 'ops.example.com:443', false],
    ['an allowed name:port, no port', proxied, 'ops.example.com', false],
    ['a subdomain of an allowed name', proxied, 'evil.resil.example.com', false],
    ['loopback still, when names are allowed', proxied, '127.0.0.1:4300', true],
    ['another name, when names are allowed', proxied, 'evil.example:4300', false],
    ['an allowed name on a network address', networkAllowed, 'dashboard.internal:4300', true],
    ['another name on a network address', networkAllowed, 'evil.example:4300', false],
  ])('%s', (_case, binding, host, allowed) => {
    const refused = refuseHost({ host }, binding);
    if (allowed) expect(refused).toBeUndefined();
    else expect(refused).toMatch(/^this dashboard answers requests for .+ only \(Host header "/);
  });

  it('port 80: a Host without a port is the port 80', () => {
    expect(refuseHost({ host: 'localhost' }, { host: '127.0.0.1', port: 80 })).toBeUndefined();
  });

  it.each<[DashboardBinding, string]>([
    [loopback, 'its loopback address'],
    [network, 'an IP address'],
    [{ host: '192.0.2.2', port: 4300 }, 'an IP address'],
    [named, 'an IP address or dashboard.internal'],
    [proxied, 'its loopback address, resil.example.com or ops.example.com:8443'],
    [networkAllowed, 'an IP address or dashboard.internal'],
  ])('the refusal names what it answers to: %j', (binding, names) => {
    expect(refuseHost({ host: 'evil.example:4392' }, binding)).toBe(
      `this dashboard answers requests for ${names} only (Host header "evil.example:4392"); to answer to another name, such as a reverse proxy's, give it with --allowed-host`,
    );
  });
});

describe('refuseHost for the metrics endpoint (any name on a network address)', () => {
  const metrics: HostRefusal = {
    server: 'this metrics endpoint',
    otherNames: 'bind elsewhere',
    anyNameOnNetwork: true,
  };
  it.each<[string, DashboardBinding, string | undefined, boolean]>([
    ['loopback: its own address', { host: '127.0.0.1', port: 9464 }, '127.0.0.1:9464', true],
    ['loopback: localhost', { host: '127.0.0.1', port: 9464 }, 'localhost:9464', true],
    ['loopback: a rebound name', { host: '127.0.0.1', port: 9464 }, 'attacker.example:9464', false],
    ['loopback: another port', { host: '127.0.0.1', port: 9464 }, 'localhost:9465', false],
    ['IPv6 loopback: a rebound name', { host: '::1', port: 9464 }, 'attacker.example:9464', false],
    ["network: a scraper's name for it", network, 'web-1:9464', true],
    ['network: an IP address', network, '10.0.0.5:9464', true],
    ['network: no Host header', network, undefined, false],
    ['network: a malformed Host', network, 'web-1:9464:1', false],
  ])('%s', (_case, binding, host, allowed) => {
    const refused = refuseHost({ host }, binding, metrics);
    if (allowed) expect(refused).toBeUndefined();
    else
      expect(refused).toMatch(
        /^this metrics endpoint answers requests for .+ only \(Host header ".*"\); bind elsewhere$/,
      );
  });
});

describe('refuseAction', () => {
  it.each<[string, Partial<GuardedRequest>, DashboardBinding, RegExp | undefined]>([
    ["the dashboard's own page", {}, loopback, undefined],
    [
      'its page under localhost',
      { host: 'localhost:4300', origin: 'http://localhost:4300' },
      loopback,
      undefined,
    ],
    ['its page under [::1]', { host: '[::1]:4300', origin: 'http://[::1]:4300' }, loopback, undefined],
    ['Origin case differs', { host: 'LOCALHOST:4300', origin: 'http://localhost:4300' }, loopback, undefined],
    ['no token', { token: undefined }, loopback, /needs the token/],
    ['a wrong token', { token: 'x'.repeat(token.length) }, loopback, /needs the token/],
    ['a token of another length', { token: 'short' }, loopback, /needs the token/],
    ['an empty token', { token: '' }, loopback, /needs the token/],
    [
      'another site',
      { origin: 'http://evil.example' },
      loopback,
      /own page \(Origin "http:\/\/evil.example"\)/,
    ],
    ['another port of this host', { origin: 'http://127.0.0.1:8080' }, loopback, /own page/],
    [
      'https, the same host and port (a TLS proxy)',
      { origin: 'https://127.0.0.1:4300' },
      loopback,
      undefined,
    ],
    ['https on its default port, the Host on 4300', { origin: 'https://127.0.0.1' }, loopback, /own page/],
    ['another scheme', { origin: 'ftp://127.0.0.1:4300' }, loopback, /own page/],
    ['an Origin with a path', { origin: 'http://127.0.0.1:4300/' }, loopback, /own page/],
    ['an Origin with credentials', { origin: 'http://user@127.0.0.1:4300' }, loopback, /own page/],
    ['an opaque origin (sandboxed frame, file:)', { origin: 'null' }, loopback, /own page/],
    ['no Origin (curl, an old form)', { origin: undefined }, loopback, /own page \(Origin null\)/],
    [
      'a rebound name with its own Origin',
      { host: 'evil.example:4300', origin: 'http://evil.example:4300' },
      loopback,
      /loopback address only/,
    ],
    // Bound to a network address.
    [
      'a network address, the page as reached by its IP address',
      { host: '192.0.2.2:4300', origin: 'http://192.0.2.2:4300' },
      network,
      undefined,
    ],
    [
      'a network address, DNS rebinding: a rebound name with its own Origin and the token',
      { host: 'attacker.example:4392', origin: 'http://attacker.example:4392' },
      network,
      /^this dashboard answers requests for an IP address only/,
    ],
    [
      'a network address, a name not allowed',
      { host: 'dashboard.internal:4300', origin: 'http://dashboard.internal:4300' },
      network,
      /answers requests for an IP address only/,
    ],
    [
      'a network address, an allowed name',
      { host: 'dashboard.internal:4300', origin: 'http://dashboard.internal:4300' },
      networkAllowed,
      undefined,
    ],
    [
      'a network address, another site',
      { host: '192.0.2.2:4300', origin: 'http://evil.example' },
      network,
      /own page/,
    ],
    // Behind a reverse proxy that passes the Host on.
    [
      'an HTTPS proxy on 443',
      { host: 'resil.example.com', origin: 'https://resil.example.com' },
      proxied,
      undefined,
    ],
    [
      'an HTTPS proxy, the Host with its default port',
      { host: 'resil.example.com:443', origin: 'https://resil.example.com' },
      proxied,
      undefined,
    ],
    [
      'an HTTPS proxy on 8443, the port passed on',
      { host: 'ops.example.com:8443', origin: 'https://ops.example.com:8443' },
      proxied,
      undefined,
    ],
    [
      "an HTTPS proxy that dropped the port (nginx's $host on 8443)",
      { host: 'resil.example.com', origin: 'https://resil.example.com:8443' },
      proxied,
      /own page/,
    ],
    [
      'an HTTP Origin, the Host on 443',
      { host: 'resil.example.com:443', origin: 'http://resil.example.com' },
      proxied,
      /own page/,
    ],
    [
      'a proxy that rewrote the Host (no --allowed-host for it)',
      { host: 'resil.example.com', origin: 'https://resil.example.com' },
      loopback,
      /loopback address only/,
    ],
    [
      'a proxy that rewrote the Host to the upstream, the browser origin kept',
      { host: '127.0.0.1:4300', origin: 'https://resil.example.com' },
      proxied,
      /own page/,
    ],
  ])('%s', (_case, changes, binding, refusal) => {
    const refused = refuseAction({ ...own, ...changes }, binding, token);
    if (refusal === undefined) expect(refused).toBeUndefined();
    else expect(refused).toMatch(refusal);
  });

  it('refuses everything while actions are off, even the own page with a token', () => {
    expect(refuseAction(own, loopback, undefined)).toBe(
      'actions are off: start resil dashboard with --allow-actions to trigger, pause and resume jobs',
    );
  });
});

describe('formatAllowedHost', () => {
  it('writes a name as given: alone, or with its port', () => {
    expect(formatAllowedHost({ name: 'resil.example.com' })).toBe('resil.example.com');
    expect(formatAllowedHost({ name: '[2001:db8::1]', port: 8443 })).toBe('[2001:db8::1]:8443');
  });
});
