import type { StrategyEnvironment } from '../../pipeline/strategy.ts';
import type { RateLimiter } from '../../strategies/rate-limiter/limiter.ts';
import type { RateLimiterStrategyOptions } from '../../strategies/rate-limiter/options.ts';
import type { RateLimitPermits } from '../../strategies/rate-limiter/shared.ts';
import { gcraMicroseconds, SharedRateLimiter } from '../../strategies/rate-limiter/shared-limiter.ts';
import { nowUs } from './schema.ts';

/**
 * `MysqlLockStore`'s shared rate limits (the rate limiter's `store` option): one row per limit in
 * `<table>_rate_limits`, holding the GCRA arrival time of the next permit in microseconds of the
 * database's clock. Created with the store's other tables (schema.ts).
 */
export function rateLimitTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table} (
  limit_key VARBINARY(1255) NOT NULL,
  tat_us BIGINT NOT NULL,
  PRIMARY KEY (limit_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`;
}

/**
 * One decision, one statement (one round trip, autocommit), under the row's lock: a new key is a
 * full bucket and its first call takes a permit; otherwise a permit is taken when the arrival time
 * is at most `tolerance` ahead of the clock read under that lock (`lockedNowUs`, not the
 * statement's instant: a statement that started first but took the lock second would otherwise
 * judge the row another call moved at a time before that call's, and refuse a permit the budget
 * holds). The wait comes back as the statement's insert id (`LAST_INSERT_ID(expr)`, as `acquire`
 * returns its token): 0 when a permit was taken, else the microseconds until one is expected. A
 * rejected call leaves the row as it was.
 *
 * Parameters: key, interval, tolerance, interval (microseconds, see `gcraMicroseconds`).
 */
export function rateLimitSql(table: string): string {
  // The database's clock when the expression is evaluated, in epoch microseconds: the statement's
  // instant (`nowUs`) plus the time since it. `SYSDATE(6)` is read when evaluated, `NOW(6)` is the
  // statement's start; both are in the session's time zone, and `UNIX_TIMESTAMP` takes each to UTC
  // (across a spring-forward gap too). Read in the update, it is the clock once the row's lock is
  // taken. Kept within 0 to 60 s (a statement waits no longer on a row lock by default): an hour
  // that a fall-back repeats may take the two readings an hour apart, and then counts for none. A
  // server started with `--sysdate-is-now` gives the statement's instant. Each mention reads the
  // clock again: they differ by microseconds.
  const sinceStartUs = 'FLOOR((UNIX_TIMESTAMP(SYSDATE(6)) - UNIX_TIMESTAMP(NOW(6))) * 1000000)';
  const lockedNowUs = `(${nowUs} + LEAST(GREATEST(${sinceStartUs}, 0), 60000000))`;
  const due = `GREATEST(tat_us, ${lockedNowUs})`;
  return `INSERT INTO ${table} (limit_key, tat_us) VALUES (?, ${nowUs} + ? + LAST_INSERT_ID(0))
ON DUPLICATE KEY UPDATE
  tat_us = IF(LAST_INSERT_ID(GREATEST(${due} - ${lockedNowUs} - ?, 0)) = 0, ${due} + ?, tat_us)`;
}

/**
 * The limiter `MysqlLockStore.sharedRateLimiter()` returns: `write` sends a statement as the
 * store's others (tables set up first, bounded by its `timeout`); `storedKey` checks a key and
 * puts the store's prefix before it.
 */
export function mysqlSharedRateLimiter(
  options: RateLimiterStrategyOptions,
  environment: StrategyEnvironment,
  table: string,
  storedKey: (key: string) => string,
  write: (sql: string, values: Array<string | number>) => Promise<{ insertId: number }>,
): RateLimiter {
  const sql = rateLimitSql(table);
  // The limiter always asks for its own key and policy: its values are made once, at the first call.
  let values: [string, number, number, number] | undefined;
  const permits: RateLimitPermits = {
    checkKey: storedKey,
    take: (key, policy) => {
      if (values === undefined) {
        const { interval, tolerance } = gcraMicroseconds(policy);
        values = [storedKey(key), interval, tolerance, interval];
      }
      return write(sql, values).then((result) => Number(result.insertId) / 1000);
    },
  };
  return new SharedRateLimiter(options, environment, permits);
}
