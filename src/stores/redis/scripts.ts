/**
 * The store's Lua scripts. Each operation is one script, so it is atomic and takes one round trip;
 * ioredis' `defineCommand` sends `EVAL` the first time on a connection and `EVALSHA` after that
 * (and falls back to `EVAL` on `NOSCRIPT`, e.g. after a restart or `SCRIPT FLUSH`).
 *
 * They call `TIME` before writing, which needs script effects replication: the default from
 * Redis 5 on, the only mode in Redis 7.
 */

/**
 * KEYS: lease, token. ARGV: owner, ttl ms. Returns the new token, or nil when the lease is held.
 *
 * The token is max(last token + 1, server time in microseconds). A counter that is missing (a
 * Redis restarted without persistence) or older than the server's clock (a failover to a replica
 * that missed the last increments) thus still yields a token higher than any issued before,
 * as long as the server clocks roughly agree. `%d` because Lua's tostring() would print 1.7e+15.
 */
export const acquireScript = `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
local time = redis.call('TIME')
local token = tonumber(time[1]) * 1000000 + tonumber(time[2])
local last = tonumber(redis.call('GET', KEYS[2]))
if last and last >= token then token = last + 1 end
redis.call('SET', KEYS[2], string.format('%d', token))
return token
`;

/** KEYS: lease. ARGV: owner, ttl ms. Returns 1 when renewed, 0 when the lease is not the owner's. */
export const renewScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

/** KEYS: lease. ARGV: owner. Deletes the lease only when it is the owner's. */
export const releaseScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/** KEYS: lease, token. Returns nil, or { owner, token, pttl, time seconds, time microseconds }. */
export const inspectScript = `
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
export const recordRunScript = `
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
export const isCompletedScript = `
local score = redis.call('ZSCORE', KEYS[2], ARGV[2])
if not score then return 0 end
${oldestKept}
if tonumber(score) < oldest then return 0 end
return 1
`;

/** KEYS: ledger, done. ARGV: default retention ms. Returns the latest completed occurrence within retention, or nil. */
export const lastCompletedScript = `
${oldestKept}
local latest = redis.call('ZREVRANGEBYSCORE', KEYS[2], '+inf', string.format('%d', oldest), 'LIMIT', 0, 1)
return latest[1] or false
`;

/**
 * KEYS: fence, value. ARGV: token, value, ttl ms ('' for none). Writes the value and records the
 * token when it is >= the highest recorded; returns nil then, else the highest token (nothing written).
 */
export const fencedSetScript = `
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

import type { ChainableCommander } from 'ioredis';

/** The commands the store defines on its client, with their number of keys. */
export const storeScripts = {
  resilLockAcquire: { numberOfKeys: 2, lua: acquireScript },
  resilLockRenew: { numberOfKeys: 1, lua: renewScript },
  resilLockRelease: { numberOfKeys: 1, lua: releaseScript },
  resilLockInspect: { numberOfKeys: 2, lua: inspectScript },
  resilLedgerRecord: { numberOfKeys: 3, lua: recordRunScript },
  resilLedgerIsCompleted: { numberOfKeys: 2, lua: isCompletedScript },
  resilLedgerLastCompleted: { numberOfKeys: 2, lua: lastCompletedScript },
  resilFencedSet: { numberOfKeys: 2, lua: fencedSetScript },
} as const;

type Reply = Promise<unknown>;
type Key = string;

/** The client, as the store sees it once the scripts are defined. */
export interface ScriptedCommands {
  resilLockAcquire(lease: Key, token: Key, owner: string, ttlMs: number): Promise<number | null>;
  resilLockRenew(lease: Key, owner: string, ttlMs: number): Promise<number>;
  resilLockRelease(lease: Key, owner: string): Reply;
  resilLockInspect(lease: Key, token: Key): Promise<[string, string, number, string, string] | null>;
  resilLedgerRecord(
    ledger: Key,
    runs: Key,
    done: Key,
    token: string,
    record: string,
    historyLimit: number,
    success: '1' | '0',
    scheduledAt: number,
    retentionMs: number,
  ): Promise<string | null>;
  resilLedgerIsCompleted(
    ledger: Key,
    done: Key,
    defaultRetentionMs: number,
    scheduledAt: number,
  ): Promise<number>;
  resilLedgerLastCompleted(ledger: Key, done: Key, defaultRetentionMs: number): Promise<string | null>;
  resilFencedSet(
    fence: Key,
    value: Key,
    token: string,
    data: string | Buffer,
    ttlMs: string,
  ): Promise<string | null>;
}

/** A pipeline of the store's client: the same commands, queued. */
export type ScriptedPipeline = ChainableCommander & {
  [Name in keyof ScriptedCommands]: (...args: Parameters<ScriptedCommands[Name]>) => ChainableCommander;
};
