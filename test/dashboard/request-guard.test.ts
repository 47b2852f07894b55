/**
 * The dashboard's one origin and token check, as a table: every way a request can come, and
 * whether it is let through.
 */
import { describe, expect, it } from 'vitest';
import {
  type DashboardBinding,
  type GuardedRequest,
  isLoopbackHost,
  refuseAction,
  refuseHost,
} from '../../src/cli/dashboard/request-guard.ts';

const token = 'k3Jc9mC1uHq0bXvWZ8sV4aTg2yPqN7rLeF5dO6iU1wE';
const loopback: DashboardBinding = { host: '127.0.0.1', port: 4300 };
const network: DashboardBinding = { host: '0.0.0.0', port: 4300 };
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
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::', false],
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
    ['its own address', loopback, '127.0.0.1:4300', true],
    ['localhost', loopback, 'localhost:4300', true],
    ['IPv6 loopback', loopback, '[::1]:4300', true],
    [
      'another port (a name rebound to 127.0.0.1 keeps its port, not ours)',
      loopback,
      '127.0.0.1:8080',
      false,
    ],
    ['a rebound name (DNS rebinding)', loopback, 'evil.example:4300', false],
    ['no port: 80', loopback, '127.0.0.1', false],
    ['no Host header', loopback, undefined, false],
    ['a malformed Host', loopback, '127.0.0.1:4300:1', false],
    ['any name on a network address', network, 'dashboard.internal:4300', true],
    ['no Host on a network address', network, undefined, true],
  ])('%s', (_case, binding, host, allowed) => {
    const refused = refuseHost({ host }, binding);
    if (allowed) expect(refused).toBeUndefined();
    else expect(refused).toMatch(/answers requests for its loopback address only/);
  });

  it('port 80: a Host without a port is the port 80', () => {
    expect(refuseHost({ host: 'localhost' }, { host: '127.0.0.1', port: 80 })).toBeUndefined();
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
    ['https instead of http', { origin: 'https://127.0.0.1:4300' }, loopback, /own page/],
    ['an opaque origin (sandboxed frame, file:)', { origin: 'null' }, loopback, /own page/],
    ['no Origin (curl, an old form)', { origin: undefined }, loopback, /own page \(Origin null\)/],
    [
      'a rebound name with its own Origin',
      { host: 'evil.example:4300', origin: 'http://evil.example:4300' },
      loopback,
      /loopback address only/,
    ],
    [
      'a network address, the page as reached',
      { host: 'dashboard.internal:4300', origin: 'http://dashboard.internal:4300' },
      network,
      undefined,
    ],
    [
      'a network address, another site',
      { host: 'dashboard.internal:4300', origin: 'http://evil.example' },
      network,
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
