import { createHash } from 'node:crypto';
import { ledgerMessages } from '../../ledger/defaults.ts';

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
 * The acquire and the release are each one block of Lua over locals named in their comment, shared
 * word for word by the single script, the batch script's loop and (the release) the ledger. The
 * single scripts run the block inline instead of defining and calling a `local function` on every
 * call.
 */

/**
 * Locals: lease, tokenKey, current, owner, ttl. Leaves `token`: the new token, or false when the
 * lease is held. A plain acquire also forgets which occurrence of the run ledger held the key last
 * (`current`), as the memory store does: the key then belongs to no occurrence.
 *
 * The token is an `INCR` of a counter that never expires. A missing counter (a new key, or a Redis
 * restarted without persistence) is seeded from the server's `TIME` in microseconds instead of
 * starting at 1, so tokens stay above any issued before the restart: a counter only ever gets
 * ahead of the clock by one per acquisition. `%d` because Lua's tostring() would print 1.7e+15.
 */
const acquireBlock = `
local token = false
if redis.call('SET', lease, owner, 'NX', 'PX', ttl) then
  redis.call('DEL', current)
  token = redis.call('INCR', tokenKey)
  if token == 1 then
    local time = redis.call('TIME')
    token = tonumber(time[1]) * 1000000 + tonumber(time[2])
    redis.call('SET', tokenKey, string.format('%d', token))
  end
end
`;

/** KEYS: lease, token, current. ARGV: owner, ttl ms. Returns the new token, or nil when the lease is held. */
const acquireScript = `
local lease, tokenKey, current, owner, ttl = KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2]
${acquireBlock}
return token
`;

/**
 * The acquires of one batch (issued in the same tick, see lease-batches.ts), in order: KEYS and
 * ARGV are those of `acquire`, one after the other. Returns each one's token, or 0 when the lease
 * was held (a nil would end the reply array).
 */
const acquireBatchScript = `
local tokens = {}
for i = 1, #ARGV / 2 do
  local lease, tokenKey, current = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local owner, ttl = ARGV[2 * i - 1], ARGV[2 * i]
  ${acquireBlock}
  tokens[i] = token or 0
end
return tokens
`;

/** KEYS: lease. ARGV: owner, ttl ms. Returns 1 when renewed, 0 when the lease is not the owner's. */
const renewScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

/**
 * Locals: lease, owner, channel. Deletes the lease only when it is the owner's, and then publishes
 * on the key's channel, which wakes the waiters subscribed to it (`onRelease`). Leaves `released`:
 * 1, or 0 when the lease was not the owner's.
 */
const releaseBlock = `
local released = 0
if redis.call('GET', lease) == owner then
  redis.call('DEL', lease)
  redis.call('PUBLISH', channel, '')
  released = 1
end
`;

/** KEYS: lease. ARGV: owner, release channel. Returns 1 when released, 0 when the lease was not the owner's. */
const releaseScript = `
local lease, owner, channel = KEYS[1], ARGV[1], ARGV[2]
${releaseBlock}
return released
`;

/** The releases of one batch, in order: KEYS and ARGV are those of `release`, one after the other. */
const releaseBatchScript = `
local results = {}
for i = 1, #KEYS do
  local lease, owner, channel = KEYS[i], ARGV[2 * i - 1], ARGV[2 * i]
  ${releaseBlock}
  results[i] = released
end
return results
`;

/** KEYS: lease, token. Returns nil, or { owner, token, pttl, time seconds, time microseconds }. */
const inspectScript = `
local owner = redis.call('GET', KEYS[1])
if not owner then return false end
local time = redis.call('TIME')
return { owner, redis.call('GET', KEYS[2]) or '0', redis.call('PTTL', KEYS[1]), time[1], time[2] }
`;

/**
 * The run ledger's scripts all start with this. It mirrors `MemoryLockStore`'s ledger, decision for
 * decision, on these keys (one lease key's hash tag, see keys.ts):
 *
 * KEYS: 1 lease, 2 token, 3 current, 4 occurrences, 5 index, 6 queue, 7 succeeded.
 * ARGV: 1 job, 2 scheduledAt, 3 owner, 4 overlap policy, then the script's own.
 *
 * A record is the occurrence's public `RunRecord` fields plus what the ledger needs: `owner` and
 * `expiresAt` (the lease of a `running` occurrence, judged against `TIME`), `cancelled` (set by a
 * `cancel-other` fire), `queuedUntil` (the deadline of a `queued` one). Every number in a record is
 * a '%d' string: cjson prints numbers with 14 significant digits, and tokens have 16.
 */
const ledgerPrelude = `
local function release(lease, owner, channel)
${releaseBlock}
  return released
end
local job, at, owner, overlap = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local perOccurrence = overlap == 'allow-all'
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local abandonedMessage = '${ledgerMessages.abandoned}'
local cancelledMessage = '${ledgerMessages.cancelled}'

local function fmt(value) return string.format('%d', value) end
local function expiry(record) return tonumber(record.expiresAt) or 0 end
local function isFinal(outcome) return outcome == 'success' or outcome == 'failure' or outcome == 'skipped' end

local function get(when)
  local raw = redis.call('HGET', KEYS[4], fmt(when))
  if raw then return cjson.decode(raw) end
  return nil
end

local function put(when, record)
  local field = fmt(when)
  redis.call('HSET', KEYS[4], field, cjson.encode(record))
  redis.call('ZADD', KEYS[5], field, field)
  if record.outcome == 'success' then
    redis.call('ZADD', KEYS[7], field, field)
  else
    redis.call('ZREM', KEYS[7], field)
  end
end

local function publicCopy(record)
  return {
    job = record.job, scheduledAt = record.scheduledAt, outcome = record.outcome, reason = record.reason,
    token = record.token, instance = record.instance, startedAt = record.startedAt, endedAt = record.endedAt,
    error = record.error, takeovers = record.takeovers,
  }
end

-- Its final state, without the lease, an earlier error or skip reason (the memory store's #end).
local function finish(when, outcome, message)
  local previous = get(when)
  local record = previous and publicCopy(previous) or { job = job, scheduledAt = fmt(when) }
  record.outcome, record.endedAt, record.error, record.reason = outcome, fmt(now), message, nil
  put(when, record)
end

-- An occurrence nobody may take over any more (cancelled, or abandoned past its window) fails.
local function giveUp(when, record)
  finish(when, 'failure', record.cancelled and cancelledMessage or abandonedMessage)
end

-- Drops records older than the retention (by scheduledAt; never a running one), then the oldest
-- past the record limit, but none younger than keepWithin nor a running one: at most 100 looked
-- at, and 100 dropped, of each per call.
local function trim(retention, limit, keepWithin)
  local function drop(field)
    redis.call('HDEL', KEYS[4], field)
    redis.call('ZREM', KEYS[5], field)
    redis.call('ZREM', KEYS[6], field)
    redis.call('ZREM', KEYS[7], field)
  end
  local old = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', '(' .. fmt(now - retention), 'LIMIT', 0, 100)
  for _, field in ipairs(old) do
    local raw = redis.call('HGET', KEYS[4], field)
    if not raw or cjson.decode(raw).outcome ~= 'running' then drop(field) end
  end
  local excess = redis.call('ZCARD', KEYS[5]) - limit
  if excess > 0 then
    local candidates = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', '(' .. fmt(now - keepWithin), 'LIMIT', 0, math.min(excess, 100))
    for _, field in ipairs(candidates) do
      local raw = redis.call('HGET', KEYS[4], field)
      if not raw or cjson.decode(raw).outcome ~= 'running' then drop(field) end
    end
  end
end

-- Frees the occurrence's lease when it is the caller's (the memory store's #releaseOccurrence),
-- as a release does, publishing on the key's channel.
local function releaseOccurrence(when, record, channel)
  if record.owner ~= owner then return end
  record.expiresAt = fmt(now)
  put(when, record)
  if perOccurrence then return end
  if release(KEYS[1], owner, channel) == 1 then
    local current = redis.call('HMGET', KEYS[3], 'job', 'at')
    if current[1] == job and current[2] == fmt(when) then redis.call('DEL', KEYS[3]) end
  end
end
`;

/**
 * KEYS 8: the job's pause (see keys.ts). ARGV 5..11: instance, ttl ms, startingDeadlineMs, '1' for
 * a manual run, retention ms, record limit, keep-within ms (see `LedgerTrim`). Returns { 'granted', scheduledAt, token, 1 for a takeover } | { 'wait', retryAt, 1 when
 * running elsewhere } | { 'skipped', reason }. Recording a skip trims, as a finish does.
 */
const claimOccurrenceScript = `${ledgerPrelude}
local instance, ttl, window, manual = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8] == '1'

local function grant(when, takeover)
  local token = redis.call('INCR', KEYS[2])
  if token == 1 then
    token = tonumber(time[1]) * 1000000 + tonumber(time[2])
    redis.call('SET', KEYS[2], fmt(token))
  end
  local field = fmt(when)
  if not perOccurrence then
    redis.call('SET', KEYS[1], owner, 'PX', ARGV[6])
    redis.call('HSET', KEYS[3], 'job', job, 'at', field)
  end
  redis.call('ZREM', KEYS[6], field)
  local previous = get(when)
  local takeovers = (previous and tonumber(previous.takeovers) or 0) + (takeover and 1 or 0)
  local record = {
    job = job, scheduledAt = field, outcome = 'running', token = fmt(token), instance = instance,
    startedAt = fmt(now), owner = owner, expiresAt = fmt(now + ttl),
  }
  if takeovers > 0 then record.takeovers = fmt(takeovers) end
  put(when, record)
  return { 'granted', field, token, takeover and 1 or 0 }
end

-- Queues the requested occurrence unless the policy says skip; false when it is to be skipped.
local function enqueue(deadline)
  if overlap == 'skip' then return false end
  if overlap == 'buffer-one' then
    local offset = 0
    while true do
      local fields = redis.call('ZRANGE', KEYS[6], offset, offset + 99)
      for _, field in ipairs(fields) do
        if tonumber(field) ~= at then
          local raw = redis.call('HGET', KEYS[4], field)
          local queued = raw and cjson.decode(raw)
          if queued and queued.outcome == 'queued' and now <= (tonumber(queued.queuedUntil) or 0) then return false end
        end
      end
      if #fields < 100 then break end
      offset = offset + 100
    end
  end
  local field = fmt(at)
  redis.call('ZADD', KEYS[6], field, field)
  put(at, { job = job, scheduledAt = field, outcome = 'queued', instance = instance, queuedUntil = fmt(deadline) })
  return true
end

local function skip(reason)
  local field = fmt(at)
  redis.call('ZREM', KEYS[6], field)
  put(at, { job = job, scheduledAt = field, outcome = 'skipped', reason = reason, endedAt = fmt(now), instance = instance })
  trim(tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]))
  return { 'skipped', reason }
end

local entry = get(at)
local leaseOwner = redis.call('GET', KEYS[1])
if manual then
  if not perOccurrence and leaseOwner then return { 'skipped', 'overlap' } end
  return grant(at, false)
end
if now < at then return { 'wait', fmt(at), 0 } end
if entry and isFinal(entry.outcome) then return { 'skipped', 'already-done' } end
local running = entry and entry.outcome == 'running'
-- A paused job's running occurrence runs on; any other is skipped.
if not running and redis.call('EXISTS', KEYS[8]) == 1 then return skip('paused') end
-- A running occurrence is judged by its own lease: still renewed, to be taken over, or given up.
if running and expiry(entry) > now then return { 'wait', entry.expiresAt, 1 } end
if running and (entry.cancelled or now > expiry(entry) + window) then
  giveUp(at, entry)
  return { 'skipped', 'already-done' }
end
local deadline = at + window

-- Another occurrence (or a plain lock) holds the lease this one needs.
if not perOccurrence and leaseOwner then
  local keyExpiresAt = fmt(now + math.max(redis.call('PTTL', KEYS[1]), 0))
  -- Abandoned, but the key is taken: it waits for the key (a takeover still needs the lease).
  if running then return { 'wait', keyExpiresAt, 1 } end
  if now > deadline then return skip('missed') end
  if not (entry and entry.outcome == 'queued') and not enqueue(deadline) then return skip('overlap') end
  if overlap == 'cancel-other' then
    local current = redis.call('HMGET', KEYS[3], 'job', 'at')
    local holder = current[1] == job and current[2] and get(tonumber(current[2]))
    if holder and holder.outcome == 'running' then
      holder.cancelled = true
      put(tonumber(current[2]), holder)
    end
  end
  return { 'wait', keyExpiresAt, 0 }
end
if (not entry or entry.outcome == 'queued') and now > deadline then return skip('missed') end

-- The lease is free: it goes to the oldest occurrence still allowed to start.
local pick, takeover = at, running
if not perOccurrence then
  local current = redis.call('HMGET', KEYS[3], 'job', 'at')
  local currentAt = current[1] == job and current[2] and tonumber(current[2])
  if currentAt and currentAt ~= at then
    local abandoned = get(currentAt)
    if abandoned and abandoned.outcome == 'running' then
      if not abandoned.cancelled and now <= expiry(abandoned) + window then
        if currentAt < pick then pick, takeover = currentAt, true end
      else
        giveUp(currentAt, abandoned)
      end
    end
  end
  -- Expired queued occurrences at the head of the queue are skipped as missed, a bounded number per call.
  local purged = 0
  while true do
    local head = redis.call('ZRANGE', KEYS[6], 0, 0)[1]
    if not head then break end
    local raw = redis.call('HGET', KEYS[4], head)
    local queued = raw and cjson.decode(raw)
    if queued and queued.outcome == 'queued' and now <= (tonumber(queued.queuedUntil) or 0) then
      local headAt = tonumber(head)
      if headAt ~= at and headAt < pick then pick, takeover = headAt, false end
      break
    end
    -- Ask again at once: the next call goes on purging.
    if purged == 1000 then return { 'wait', fmt(now), 0 } end
    redis.call('ZREM', KEYS[6], head)
    if queued and queued.outcome == 'queued' then
      queued.queuedUntil = nil
      queued.outcome, queued.reason, queued.endedAt = 'skipped', 'missed', fmt(now)
      put(tonumber(head), queued)
    end
    purged = purged + 1
  end
end
local granted = grant(pick, takeover)
-- Its own occurrence meets the one it was handed as it would meet any running occurrence.
if pick ~= at and not entry then
  if not enqueue(deadline) then skip('overlap') end
end
return granted
`;

/**
 * ARGV 5: ttl ms, 6: the key's release channel. Returns 1 when renewed, else 0 (a cancelled
 * occurrence's lease is freed, which wakes the key's waiters).
 */
const renewOccurrenceScript = `${ledgerPrelude}
local record = get(at)
if not record or record.outcome ~= 'running' or record.owner ~= owner or not (expiry(record) > now) then return 0 end
if record.cancelled then
  releaseOccurrence(at, record, ARGV[6])
  return 0
end
-- Under the key's lease, that lease must still be the holder's too.
if not perOccurrence then
  if redis.call('GET', KEYS[1]) ~= owner then return 0 end
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
end
record.expiresAt = fmt(now + tonumber(ARGV[5]))
put(at, record)
return 1
`;

/**
 * ARGV 5..12: token, outcome, '1' when an error message follows, error, retention ms, record
 * limit, the key's release channel (the release wakes the key's waiters), keep-within ms. Returns
 * nil when recorded, or the occurrence's highest token when `token` is lower (then only the
 * release was written). Then trims the job's records (see `LedgerTrim`), at most 100 of each kind
 * per call.
 */
const finishOccurrenceScript = `${ledgerPrelude}
local token, outcome = tonumber(ARGV[5]), ARGV[6]
local record = get(at)
if record then releaseOccurrence(at, record, ARGV[11]) end
local latest = record and tonumber(record.token)
if latest and latest > token then return fmt(latest) end
if record and record.cancelled and outcome == 'failure' then
  finish(at, 'failure', cancelledMessage)
else
  finish(at, outcome, ARGV[7] == '1' and ARGV[8] or nil)
end
trim(tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[12]))
return false
`;

/** KEYS: index, occurrences. ARGV: limit (>= 1). Returns the records (JSON), newest first. */
const runHistoryScript = `
local fields = redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
local records = {}
for _, field in ipairs(fields) do
  local raw = redis.call('HGET', KEYS[2], field)
  if raw then table.insert(records, raw) end
end
return records
`;

/** KEYS: paused. ARGV: by, '1' when a reason follows, reason. Records the pause at the server's `TIME`. */
const pauseJobScript = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'pausedAt', string.format('%d', now), 'by', ARGV[1])
if ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'reason', ARGV[3]) end
return 1
`;

/** KEYS: paused. Lifts the pause. */
const resumeJobScript = `
return redis.call('DEL', KEYS[1])
`;

/** KEYS: paused. Returns { pausedAt, by, reason or false }, or nil when the job is not paused. */
const pauseOfScript = `
local pause = redis.call('HMGET', KEYS[1], 'pausedAt', 'by', 'reason')
if not pause[1] then return false end
return pause
`;

/**
 * KEYS: registry, expiries. ARGV: instance, info (JSON), ttl ms. Stores `<now> <info>` and the
 * instance's expiry (now + ttl, server `TIME`), and drops the entries of instances already expired.
 */
const registerInstanceScript = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
if #expired > 0 then
  redis.call('HDEL', KEYS[1], unpack(expired))
  redis.call('ZREM', KEYS[2], unpack(expired))
end
redis.call('HSET', KEYS[1], ARGV[1], string.format('%d', now) .. ' ' .. ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return 1
`;

/** KEYS: registry, expiries. ARGV: instance. */
const removeInstanceScript = `
redis.call('HDEL', KEYS[1], ARGV[1])
return redis.call('ZREM', KEYS[2], ARGV[1])
`;

/** KEYS: registry, expiries. Returns `<lastSeenAt> <info>` of each live instance (expiry after `TIME`). */
const listInstancesScript = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local live = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf')
if #live == 0 then return {} end
local entries = {}
for _, entry in ipairs(redis.call('HMGET', KEYS[1], unpack(live))) do
  if entry then table.insert(entries, entry) end
end
return entries
`;

/** KEYS: succeeded. Returns the latest occurrence that succeeded, or nil. */
const lastCompletedScript = `
return redis.call('ZREVRANGE', KEYS[1], 0, 0)[1] or false
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

/**
 * The batch form of a script (see ../call-batches.ts): its body runs once per call, in order, each
 * with its own KEYS and ARGV (`keysEach` and `argsEach` of them: the batch takes every call's KEYS,
 * then every call's ARGV), and the replies come back as one array. The body's KEYS and ARGV are
 * the function's parameters, so it runs unchanged. A body never replies nil (it would end the
 * array); `false` comes back as a null element.
 */
function batchOf(body: string, keysEach: number, argsEach: number): string {
  return `
local function one(KEYS, ARGV)
${body}
end
local replies = {}
for i = 0, #KEYS / ${keysEach} - 1 do
  local keys, args = {}, {}
  for j = 1, ${keysEach} do keys[j] = KEYS[i * ${keysEach} + j] end
  for j = 1, ${argsEach} do args[j] = ARGV[i * ${argsEach} + j] end
  replies[i + 1] = one(keys, args)
end
return replies
`;
}

/** A script and its SHA1, sent by `EVALSHA`, or `EVAL` when the server does not have it yet. */
export class StoreScript {
  readonly sha: string;
  constructor(
    readonly lua: string,
    /** KEYS per call; for a batch script, KEYS per operation (a call has that many per operation). */
    readonly numberOfKeys: number,
  ) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }
}

export const storeScripts = {
  acquire: new StoreScript(acquireScript, 3),
  renew: new StoreScript(renewScript, 1),
  release: new StoreScript(releaseScript, 1),
  acquireBatch: new StoreScript(acquireBatchScript, 3),
  releaseBatch: new StoreScript(releaseBatchScript, 1),
  inspect: new StoreScript(inspectScript, 2),
  claimOccurrence: new StoreScript(claimOccurrenceScript, 8),
  claimOccurrenceBatch: new StoreScript(batchOf(claimOccurrenceScript, 8, 11), 8),
  renewOccurrence: new StoreScript(renewOccurrenceScript, 7),
  finishOccurrence: new StoreScript(finishOccurrenceScript, 7),
  finishOccurrenceBatch: new StoreScript(batchOf(finishOccurrenceScript, 7, 12), 7),
  runHistory: new StoreScript(runHistoryScript, 2),
  lastCompleted: new StoreScript(lastCompletedScript, 1),
  pauseJob: new StoreScript(pauseJobScript, 1),
  resumeJob: new StoreScript(resumeJobScript, 1),
  pauseOf: new StoreScript(pauseOfScript, 1),
  registerInstance: new StoreScript(registerInstanceScript, 2),
  removeInstance: new StoreScript(removeInstanceScript, 2),
  listInstances: new StoreScript(listInstancesScript, 2),
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
  args: readonly Argument[],
  numberOfKeys = script.numberOfKeys,
): R {
  return load
    ? runner.eval(script.lua, numberOfKeys, ...args)
    : runner.evalsha(script.sha, numberOfKeys, ...args);
}

export function isNoScriptError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
