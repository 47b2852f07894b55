import { createHash } from 'node:crypto';

/**
 * The store's Lua scripts. Each operation is one script, so it is atomic and takes one round trip:
 * `EVALSHA`, falling back to `EVAL` on `NOSCRIPT` (once per script after a server starts empty or
 * `SCRIPT FLUSH`). The store calls the client's built-in `evalsha` rather than `defineCommand`:
 * it adds nothing to your client and skips a wrapper promise per call.
 *
 * Some call `TIME` before writing, which needs script effects replication: the default from
 * Redis 5 on, the only mode in Redis 7.
 */

/**
 * KEYS: lease, token. ARGV: owner, ttl ms. Returns the new token, or nil when the lease is held.
 *
 * The token is an `INCR` of a counter that never expires. A missing counter (a new key, or a Redis
 * restarted without persistence) is seeded from the server's `TIME` in microseconds instead of
 * starting at 1, so tokens stay above any issued before the restart: a counter only ever gets
 * ahead of the clock by one per acquisition. `%d` because Lua's tostring() would print 1.7e+15.
 */
const acquireScript = `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
local token = redis.call('INCR', KEYS[2])
if token == 1 then
  local time = redis.call('TIME')
  token = tonumber(time[1]) * 1000000 + tonumber(time[2])
  redis.call('SET', KEYS[2], string.format('%d', token))
end
return token
`;

/** KEYS: lease. ARGV: owner, ttl ms. Returns 1 when renewed, 0 when the lease is not the owner's. */
const renewScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

/** KEYS: lease. ARGV: owner. Deletes the lease only when it is the owner's. */
const releaseScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/** KEYS: lease, token. Returns nil, or { owner, token, pttl, time seconds, time microseconds }. */
const inspectScript = `
local owner = redis.call('GET', KEYS[1])
if not owner then return false end
local time = redis.call('TIME')
return { owner, redis.call('GET', KEYS[2]) or '0', redis.call('PTTL', KEYS[1]), time[1], time[2] }
`;

/**
 * KEYS: ledger, runs, done. ARGV: token, record JSON, history limit, 1 for a success,
 * scheduledAt, retention ms. Returns nil when recorded, or the highest token when `token` is
 * lower (nothing written).
 */
const recordRunScript = `
local highest = redis.call('HGET', KEYS[1], 'token')
if highest and tonumber(ARGV[1]) < tonumber(highest) then return highest end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'retention', ARGV[6])
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[3]) - 1)
if ARGV[4] == '1' then
  redis.call('ZADD', KEYS[3], ARGV[5], ARGV[5])
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. string.format('%d', now - tonumber(ARGV[6])))
return false
`;

/**
 * Shared by the ledger reads: the oldest occurrence still within retention, by the server's clock.
 * KEYS[1] is the ledger hash; ARGV[1] the default retention.
 */
const oldestKept = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local oldest = now - tonumber(redis.call('HGET', KEYS[1], 'retention') or ARGV[1])
`;

/** KEYS: ledger, done. ARGV: default retention ms, scheduledAt. Returns 1 when completed within retention. */
const isCompletedScript = `
local score = redis.call('ZSCORE', KEYS[2], ARGV[2])
if not score then return 0 end
${oldestKept}
if tonumber(score) < oldest then return 0 end
return 1
`;

/** KEYS: ledger, done. ARGV: default retention ms. Returns the latest completed occurrence within retention, or nil. */
const lastCompletedScript = `
${oldestKept}
local latest = redis.call('ZREVRANGEBYSCORE', KEYS[2], '+inf', string.format('%d', oldest), 'LIMIT', 0, 1)
return latest[1] or false
`;

/**
 * KEYS: fence, value. ARGV: token, value, ttl ms ('' for none). Writes the value and records the
 * token when it is >= the highest recorded; returns nil then, else the highest token (nothing written).
 */
const fencedSetScript = `
local highest = redis.call('GET', KEYS[1])
if highest and tonumber(ARGV[1]) < tonumber(highest) then return highest end
if highest ~= ARGV[1] then redis.call('SET', KEYS[1], ARGV[1]) end
if ARGV[3] == '' then
  redis.call('SET', KEYS[2], ARGV[2])
else
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
end
return false
`;

/** A script and its SHA1, sent by `EVALSHA`, or `EVAL` when the server does not have it yet. */
export class StoreScript {
  readonly sha: string;
  constructor(
    readonly lua: string,
    readonly numberOfKeys: number,
  ) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }
}

export const storeScripts = {
  acquire: new StoreScript(acquireScript, 2),
  renew: new StoreScript(renewScript, 1),
  release: new StoreScript(releaseScript, 1),
  inspect: new StoreScript(inspectScript, 2),
  recordRun: new StoreScript(recordRunScript, 3),
  isCompleted: new StoreScript(isCompletedScript, 2),
  lastCompleted: new StoreScript(lastCompletedScript, 2),
  fencedSet: new StoreScript(fencedSetScript, 2),
} as const;

type Argument = string | Buffer | number;

/** What the store needs of an ioredis `Redis`, `Cluster` or pipeline to run a script. */
export interface ScriptRunner<R> {
  evalsha(sha: string, numberOfKeys: number, ...keysAndArgs: Argument[]): R;
  eval(lua: string, numberOfKeys: number, ...keysAndArgs: Argument[]): R;
}

/**
 * Runs `script` with `EVALSHA` (one round trip, only the hash on the wire), or with `EVAL` when
 * `load` is set: after a `NOSCRIPT` reply (a new or restarted server, `SCRIPT FLUSH`), which also
 * loads it for the next `EVALSHA`.
 */
export function runScript<R>(
  runner: ScriptRunner<R>,
  script: StoreScript,
  load: boolean,
  args: Argument[],
): R {
  return load
    ? runner.eval(script.lua, script.numberOfKeys, ...args)
    : runner.evalsha(script.sha, script.numberOfKeys, ...args);
}

export function isNoScriptError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
