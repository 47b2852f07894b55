import type { StrategyEnvironment } from '../../pipeline/strategy.ts';
import type { RateLimiter } from '../../strategies/rate-limiter/limiter.ts';
import type { RateLimiterStrategyOptions } from '../../strategies/rate-limiter/options.ts';
import type { RateLimitPermits } from '../../strategies/rate-limiter/shared.ts';
import { gcraMicroseconds, SharedRateLimiter } from '../../strategies/rate-limiter/shared-limiter.ts';
import { CallBatches } from '../call-batches.ts';
import { StoreScript } from './scripts.ts';

/**
 * `RedisLockStore`'s shared rate limits (the rate limiter's `store` option): one key per limit,
 * `<prefix>{<key>}:rate-limit`, a string holding the GCRA arrival time of the next permit in
 * microseconds of the server's clock, expiring (PX) when the clock passes it: a missing key is a
 * full bucket. One script decides every call of a batch (those issued in the same tick, see
 * {@link CallBatches}), one after the other at one `TIME`: one round trip, each call atomic.
 *
 * KEYS: each call's limit key. ARGV: each call's interval and tolerance in microseconds (see
 * `gcraMicroseconds`). Returns each call's wait: 0 when a permit was taken, else the microseconds
 * until one is expected. `%d` because Lua's tostring() would print 1.7e+15.
 */
export const rateLimitScript = new StoreScript(
  `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local waits = {}
for i = 1, #KEYS do
  local interval, tolerance = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or now)
  if tat < now then tat = now end
  local wait = tat - now - tolerance
  if wait > 0 then
    waits[i] = wait
  else
    tat = tat + interval
    redis.call('SET', KEYS[i], string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000))
    waits[i] = 0
  end
end
return waits
`,
  1,
);

/**
 * Calls per script call at most, and script calls in flight at once, per limiter. A limiter has one
 * key, so a batch touches one Redis Cluster slot.
 */
export const rateLimitBatchLimits = { maxBatch: 100, maxInFlight: 4 } as const;

/** Where the limit `key` lives: in the `{key}` hash tag, like the key's lease, so one slot on Cluster. */
export function rateLimitKey(prefix: string, key: string): string {
  return `${prefix}{${key}}:rate-limit`;
}

/** One call of a batch: the limit's name (for messages), its Redis key and its policy in µs. */
interface RateLimitCall {
  readonly key: string;
  readonly redisKey: string;
  readonly interval: number;
  readonly tolerance: number;
}

/**
 * The limiter `RedisLockStore.sharedRateLimiter()` returns. `run` sends the script with the given
 * KEYS and ARGV, bounded by the store's `commandTimeout` (failing with `StoreUnavailableError`
 * that names `key`); `checkKey` is the store's.
 */
export function redisSharedRateLimiter(
  options: RateLimiterStrategyOptions,
  environment: StrategyEnvironment,
  prefix: string,
  checkKey: (key: string) => unknown,
  run: (key: string, redisKeys: readonly string[], argv: number[]) => Promise<unknown>,
): RateLimiter {
  const batches = new CallBatches<RateLimitCall, number>({
    send: (calls) => {
      const argv: number[] = [];
      for (const call of calls) argv.push(call.interval, call.tolerance);
      const redisKeys = calls.map((call) => call.redisKey);
      return run(calls[0]!.key, redisKeys, argv).then((waits) =>
        (waits as number[]).map((wait) => Number(wait) / 1000),
      );
    },
    limits: rateLimitBatchLimits,
  });
  // The limiter always asks for its own key and policy: its call is made once, at the first.
  let call: RateLimitCall | undefined;
  const permits: RateLimitPermits = {
    checkKey,
    take: (key, policy) => {
      call ??= { key, redisKey: rateLimitKey(prefix, key), ...gcraMicroseconds(policy) };
      return batches.run(call);
    },
  };
  return new SharedRateLimiter(options, environment, permits);
}
