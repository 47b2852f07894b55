import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { describeStoreError, watchStoreConnection } from '../../src/cli/views/store-read.ts';

function withCode(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('describeStoreError', () => {
  it('adds the root cause of a wrapped error, once', () => {
    const root = withCode('connect ECONNREFUSED 127.0.0.1:6379', 'ECONNREFUSED');
    const middle = new Error('socket closed', { cause: root });
    expect(describeStoreError(new Error('Could not acquire "a"', { cause: middle }))).toBe(
      'Could not acquire "a" (cause: connect ECONNREFUSED 127.0.0.1:6379)',
    );
    expect(describeStoreError(new Error(`Redis acquire failed: ${root.message}`, { cause: root }))).toBe(
      'Redis acquire failed: connect ECONNREFUSED 127.0.0.1:6379',
    );
  });

  it("uses the code of an AggregateError without a message, and the connection's last error when there is no cause", () => {
    const aggregate = Object.assign(new AggregateError([withCode('', 'ECONNREFUSED')], ''), {
      code: 'ECONNREFUSED',
    });
    expect(describeStoreError(new Error('not ready'), aggregate)).toBe('not ready (cause: ECONNREFUSED)');
    expect(describeStoreError(new Error('not ready'))).toBe('not ready');
  });

  it('never shows the credentials of a URL', () => {
    const root = new Error('getaddrinfo ENOTFOUND redis://admin:hunter2@cache.internal:6379');
    expect(describeStoreError(new Error('down', { cause: root }))).not.toContain('hunter2');
  });
});

describe('watchStoreConnection', () => {
  it("remembers the last error of the store's client until disposed", () => {
    const client = new EventEmitter();
    const watch = watchStoreConnection({ client });
    client.emit('error', new Error('first'));
    client.emit('error', new Error('second'));
    expect((watch.lastError as Error).message).toBe('second');
    watch.dispose();
    expect(client.listenerCount('error')).toBe(0);
    expect(watchStoreConnection({}).lastError).toBeUndefined();
  });
});
