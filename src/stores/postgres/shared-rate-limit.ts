import type { QueryResult, QueryResultRow } from 'pg';
import type { StrategyEnvironment } from '../../pipeline/strategy.ts';
import type { RateLimiter } from '../../strategies/rate-limiter/limiter.ts';
import type { RateLimiterStrategyOptions } from '../../strategies/rate-limiter/options.ts';
import type { RateLimitPermits } from '../../strategies/rate-limiter/shared.ts';
import { gcraMicroseconds, SharedRateLimiter } from '../../strategies/rate-limiter/shared-limiter.ts';
import type { PostgresTables } from './schema.ts';

/**
 * `PostgresLockStore`'s shared rate limits (the rate limiter's `store` option): one row per limit
 * in `<table>_rate_limits`, holding the GCRA arrival time of the next permit in microseconds of the
 * database's clock. Created with the store's other tables (schema.ts).
 */
export function rateLimitTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table} (
  key text PRIMARY KEY,
  tat bigint NOT NULL
)`;
}

/**
 * One decision, one statement (one round trip, autocommit): the upsert takes a permit when the
 * row's arrival time is at most `tolerance` ahead of the database's clock, under the row's lock, so
 * concurrent calls from every process serialize on it. The clock is read under that lock
 * (`clock_timestamp()`, not the statement's `now()`): a statement that started first but took the
 * lock second would otherwise judge the row another call moved at a time before that call's, and
 * refuse a permit the budget holds. A new key is a full bucket: its first call takes a permit. A
 * rejected call writes nothing; its wait is read from the statement's snapshot, which a call
 * committed meanwhile may have moved, so it falls back to `interval`, which a wait never exceeds
 * (the arrival time is never more than `burst * interval` ahead).
 *
 * $1 key, $2 interval, $3 tolerance (microseconds, see `gcraMicroseconds`). Returns `wait`: 0 when
 * a permit was taken, else the microseconds until one is expected.
 */
export function rateLimitSql(table: string): string {
  const clock = 'floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint';
  return `WITH taken AS (
  INSERT INTO ${table} AS limit_row (key, tat)
  VALUES ($1::text, ${clock} + $2::bigint)
  ON CONFLICT (key) DO UPDATE
    SET tat = greatest(limit_row.tat, ${clock}) + $2::bigint
    WHERE limit_row.tat - ${clock} <= $3::bigint
  RETURNING 1
)
SELECT CASE WHEN EXISTS (SELECT 1 FROM taken) THEN 0
  ELSE coalesce(nullif(greatest((SELECT tat FROM ${table} WHERE key = $1::text) - ${clock} - $3::bigint, 0), 0), $2::bigint)
END::float8 AS wait`;
}

/**
 * The limiter `PostgresLockStore.sharedRateLimiter()` returns: `query` sends a statement as the
 * store's others (tables set up first, bounded by its `timeout`), `checkKey` is the store's.
 */
export function postgresSharedRateLimiter(
  options: RateLimiterStrategyOptions,
  environment: StrategyEnvironment,
  tables: PostgresTables,
  checkKey: (key: string) => unknown,
  query: <R extends QueryResultRow>(text: string, values: unknown[]) => Promise<QueryResult<R>>,
): RateLimiter {
  const sql = rateLimitSql(tables.rateLimits);
  // The limiter always asks for its own key and policy: its values are made once, at the first call.
  let values: [string, number, number] | undefined;
  const permits: RateLimitPermits = {
    checkKey,
    take: (key, policy) => {
      if (values === undefined) {
        const { interval, tolerance } = gcraMicroseconds(policy);
        values = [key, interval, tolerance];
      }
      return query<{ wait: number }>(sql, values).then((result) => Number(result.rows[0]!.wait) / 1000);
    },
  };
  return new SharedRateLimiter(options, environment, permits);
}
