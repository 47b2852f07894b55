import type { StrategyEnvironment } from '../../pipeline/strategy.ts';
import type { RateLimiter } from '../../strategies/rate-limiter/limiter.ts';
import type { RateLimiterStrategyOptions } from '../../strategies/rate-limiter/options.ts';
import type { RateLimitPermits } from '../../strategies/rate-limiter/shared.ts';
import { gcraMicroseconds, SharedRateLimiter } from '../../strategies/rate-limiter/shared-limiter.ts';
import { StoreScript } from './scripts.ts';

/**
 * `RedisLockStore`'s shared rate limits (the rate limiter's `store` option): one key per limit,
 * `<prefix>{<key>}:rate-limit`, a string holding the GCRA arrival time of the next permit in
 * microseconds of the server's clock, expiring (PX) when the clock passes it: a missing key is a
 * full bucket. Each call is one script, one round trip, atomic: `TIME`, `GET`, and `SET` when a
 * permit is granted.
 *
 * KEYS: the limit's key. ARGV: interval and tolerance in microseconds (see `gcraMicroseconds`).
 * Returns 0 when a permit was taken, else the microseconds until one is expected.
 * `%d` because Lua's tostring() would print 1.7e+15.
 */
export const rateLimitScript = new StoreScript(
  `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local interval, tolerance = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local wait = tat - now - tolerance
if wait > 0 then return wait end
tat = tat + interval
redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000))
return 0
`,
  1,
);

/** Where the limit `key` lives: in the `{key}` hash tag, like the key's lease, so one slot on Cluster. */
export function rateLimitKey(prefix: string, key: string): string {
  return `${prefix}{${key}}:rate-limit`;
}

/**
 * The limiter `RedisLockStore.sharedRateLimiter()` returns: `run` sends the script (bounded by the
 * store's `commandTimeout`, failing with `StoreUnavailableError`), `checkKey` is the store's.
 */
export function redisSharedRateLimiter(
  options: RateLimiterStrategyOptions,
  environment: StrategyEnvironment,
  prefix: string,
  checkKey: (key: string) => unknown,
  run: (key: string, args: Array<string | number>) => Promise<unknown>,
): RateLimiter {
  const permits: RateLimitPermits = {
    checkKey,
    take: (key, policy) => {
      const { interval, tolerance } = gcraMicroseconds(policy);
      return run(key, [rateLimitKey(prefix, key), interval, tolerance]).then(waitMs);
    },
  };
  return new SharedRateLimiter(options, environment, permits);
}

function waitMs(reply: unknown): number {
  return Number(reply) / 1000;
}
