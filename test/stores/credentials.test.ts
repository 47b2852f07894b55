/**
 * The one redaction table: what every log line, ledger record, store error and CLI message of
 * resil's goes through (`src/stores/credentials.ts`).
 */

import { MysqlLockStore } from 'resil/mysql';
import { PostgresLockStore } from 'resil/postgres';
import { RedisLockStore } from 'resil/redis';
import { describe, expect, it } from 'vitest';
import { describeError } from '../../src/scheduler/credentials.ts';
import { redactCredentials } from '../../src/stores/credentials.ts';

describe('redactCredentials', () => {
  it.each([
    ['redis://app:hunter2@db:6379', 'redis://app:[redacted]@db:6379'],
    ['redis://:hunter2@db:6379/0', 'redis://:[redacted]@db:6379/0'],
    ['rediss://default:s3cr%40t@cache.internal:6380', 'rediss://default:[redacted]@cache.internal:6380'],
    [
      'postgres://report:hunter2@db.internal:5432/reports',
      'postgres://report:[redacted]@db.internal:5432/reports',
    ],
    ['postgresql://u:p@h/d?sslmode=require', 'postgresql://u:[redacted]@h/d?sslmode=require'],
    [
      'cannot reach redis://a:b@x:1 and redis://c:d@y:2',
      'cannot reach redis://a:[redacted]@x:1 and redis://c:[redacted]@y:2',
    ],
    ['host=db user=app password=hunter2 dbname=test', 'host=db user=app password=[redacted] dbname=test'],
    ["host=db password='it''s secret' user=app", 'host=db password=[redacted] user=app'],
    ["password='with \\' quote' user=app", 'password=[redacted] user=app'],
    ['PASSWORD = hunter2', 'PASSWORD = [redacted]'],
    ['password = "quoted secret" host=db', 'password = [redacted] host=db'],
    ['redis://user:p@ss@host:6379/0', 'redis://user:[redacted]@host:6379/0'],
    ['postgres://u:p@h/db?note=a@b', 'postgres://u:[redacted]@h/db?note=a@b'],
    // Nothing to hide: a user without a password, a plain URL, a mention of the word.
    ['redis://default@db:6379', 'redis://default@db:6379'],
    ['https://example.com/path?q=1', 'https://example.com/path?q=1'],
    [
      'WRONGPASS invalid username-password pair or user is disabled.',
      'WRONGPASS invalid username-password pair or user is disabled.',
    ],
    ['password authentication failed for user "app"', 'password authentication failed for user "app"'],
  ])('%s -> %s', (text, safe) => {
    expect(redactCredentials(text)).toBe(safe);
  });

  it('describeError: name and message, redacted, bounded', () => {
    expect(describeError(new TypeError('cannot reach redis://a:b@h:1'))).toBe(
      'TypeError: cannot reach redis://a:[redacted]@h:1',
    );
    expect(describeError('password=x')).toBe('password=[redacted]');
    expect(describeError(`${'x'.repeat(600)}`, 10)).toBe('xxxxxxxxx…');
  });
});

describe('a store given something else than its client or pool', () => {
  class Settings {
    password = 'hunter2';
  }
  const stores: Array<[string, (given: unknown) => unknown]> = [
    ['RedisLockStore', (given) => new RedisLockStore(given as never)],
    ['PostgresLockStore', (given) => new PostgresLockStore(given as never)],
    ['MysqlLockStore', (given) => new MysqlLockStore(given as never)],
  ];
  it.each(stores)(
    '%s names it without a password: a URL redacted, an object by its fields or its class',
    (_, make) => {
      for (const given of [
        'redis://app:hunter2@db:6379',
        { host: 'db', password: 'hunter2' },
        new Settings(),
      ]) {
        let message = '';
        try {
          make(given);
        } catch (error) {
          message = (error as Error).message;
        }
        expect(message).toMatch(/^Invalid option/);
        expect(message).not.toContain('hunter2');
      }
    },
  );
});
