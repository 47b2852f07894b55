import { createHash } from 'node:crypto';
import { heldSuffix, leaseSuffix, ledgerKeySuffixes, waitersSuffix } from './keys.ts';

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
 * lease is held. A plain acquire also forgets which occurrence of the run ledger held the key last,
 * as the memory store does: the key then belongs to no occurrence. Its token does not match any
 * job's `c` (see `currentOf`), and it deletes the key's `held` and an earlier release's `current`.
 *
 * The token is an `INCR` of a counter that never expires. A missing counter (a new key, or a Redis
 * restarted without persistence) is seeded from the server's `TIME` in microseconds instead of
 * starting at 1, so tokens stay above any issued before the restart: a counter only ever gets
 * ahead of the clock by one per acquisition. `%d` because Lua's tostring() would print 1.7e+15.
 */
const acquireBlock = `
local token = false
if redis.call('SET', lease, owner, 'NX', 'PX', ttl) then
  redis.call('DEL', current, string.sub(lease, 1, ${-leaseSuffix.length - 1}) .. '${heldSuffix}')
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
 * Locals: lease, owner, channel. Deletes the lease only when it is the owner's, and then, when
 * someone waits on the key (its `waiters` key is there, see keys.ts), publishes on the key's
 * channel, which wakes the waiters subscribed to it (`onRelease`). Leaves `released`: 1, or 0
 * when the lease was not the owner's.
 */
const releaseBlock = `
local released = 0
local found = redis.call('MGET', lease, string.sub(lease, 1, ${-leaseSuffix.length - 1}) .. '${waitersSuffix}')
if found[1] == owner then
  redis.call('DEL', lease)
  if found[2] then redis.call('PUBLISH', channel, '') end
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
 * The run ledger's two scripts: a read and a conditional write of one job's ledger on one key (see
 * src/ledger/engine.ts). They decide nothing: the decisions run in the process, between them.
 *
 * KEYS as the batch form hands them to the body (11, one `{key}` hash tag, see keys.ts; a call sends
 * the first alone): 1 lease, 2 token, 3 current (earlier releases'),
 * 4 occurrences (with the job's version counter in its field `v`, which every ledger write, pause
 * and resume of the job increments, and the key's current occurrence in `c`), 5 index (earlier
 * releases'), 6 queue, 7 succeeded (earlier releases'), 8 paused, 9 running, 10 waiters, 11 held.
 *
 * The read's ARGV: job, the decision it is for ('claim', 'claim-running', 'renew' or 'finish': a
 * claim reads the queue and the pause, a 'claim-running' the running occurrences too; with
 * '-record' after a claim's, a read that finds every record asked about returns those alone, with
 * an empty version: the process decides on them alone or reads again without it), retention ms, record limit (0 for none: then it reads nothing a trim
 * needs), the number of occurrences asked about, then those (as '%d' strings). It replies { now, the lease's owner or
 * false, its PTTL, the job's current occurrence or false, 1 when paused (a claim's read), the record count (with a
 * trim), the oldest occurrences (with a trim: those past the retention, and one more than the
 * record limit's excess), the occurrences read, their records (JSON, or false),
 * the version, then the parts the version is a digest of, as read: the job's counter, the key's
 * last token ('' for none) }. The version is a digest of the job's counter, the key's lease owner,
 * its last token while the lease is free, and the records asked about: what the write checks again
 * to tell whether anything the decision read has changed (two commands: an `MGET` of the lease and
 * the token, an `HMGET` of the counter and the records). The counter covers the rest of the job's
 * ledger (the queue, the pause, the other records): whatever changes them increments it. The
 * lease and the token are checked apart because a plain acquire, a release or an expiry changes
 * them without a ledger write, and the records asked about because an instance of a release
 * before the counter writes them without incrementing it. The key's `current` occurrence, which a
 * decision reads, is not part of the version: it changes only with an acquisition, which issues a
 * token and takes the lease (a grant sets it, a plain acquire clears it), or with the release of
 * the lease that set it. While the lease is held, its owner tells any change (a new owner for
 * each acquisition, none after a release); while it is free (released, or expired), the token
 * does: every acquisition since increments it, and a release needs one.
 */
/** How many queued (and running) occurrences a claim's read returns at most, the oldest. */
export const ledgerReadLimit = 1000;

/** How many more of the oldest records a read with a trim returns than the trim needs. */
export const historySlack = 8;

/**
 * How far before the store's time a decision made on a known view may have been made (see
 * src/ledger/known-views.ts): the process tells it from its own monotonic clock since the store's
 * last reply, which never runs ahead of the store's by more than a clock's drift.
 */
export const knownViewClockToleranceMs = 1000;

/** Lua: `occurrencesOf(records)`, read by the claims' trims and by `runHistory`. */
const occurrencesBlock = `
-- The occurrences recorded in a job's records hash (its fields but the counter and the current
-- occurrence), as numbers, oldest first.
local function occurrencesOf(records)
  local all = {}
  for _, field in ipairs(redis.call('HKEYS', records)) do
    local at = tonumber(field)
    if at then all[#all + 1] = at end
  end
  table.sort(all)
  return all
end
`;

const ledgerReadBlock = `
local function fmt(value) return string.format('%d', value) end

-- The version of what a decision read (see above): records are those of the occurrences asked about.
-- The key's token counts only while its lease is free (an acquisition changes the owner too).
local function digestOf(counter, owner, keyToken, records, asked)
  local parts = { counter or '', owner or '', owner and '' or keyToken or '' }
  for i = 1, asked do parts[3 + i] = records[i] or '' end
  return redis.sha1hex(table.concat(parts, '\\n'))
end

-- The server's TIME in microseconds.
local function serverMicros()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- True when every record asked about is there.
local function allThere(records, asked)
  for i = 1, asked do
    if not records[i] then return false end
  end
  return true
end

${occurrencesBlock}
-- The occurrence of \`job\` the key's lease was last granted to, or false: the job's field \`c\`
-- ('<occurrence> <token>', ' <token>' once released) while no acquisition took the key's lease
-- since: while its token is the one \`held\` keeps, or the key's last token when \`held\` is not
-- there (grants that do not take the lease issue tokens, see the write). When it does not tell,
-- the key's \`current\` hash, which earlier releases wrote at each grant (a plain acquire clears it).
local function currentOf(KEYS, job, lastHeld)
  local c = redis.call('HGET', KEYS[4], 'c')
  if c then
    local space = string.find(c, ' ', 1, true)
    if space and string.sub(c, space + 1) == lastHeld then
      return space > 1 and string.sub(c, 1, space - 1) or false
    end
  end
  local current = redis.call('HMGET', KEYS[3], 'job', 'at')
  return current[1] == job and current[2] or false
end

local function readView(KEYS, ARGV, now)
  local job, trim, kind = ARGV[1], ARGV[4] ~= '0', ARGV[2]
  -- A claim whose answer its record may decide (see recordDecides): when the records asked about
  -- are there, they are all it reads; else what it read of them is not read again.
  -- With the job's counter: the rest of the view may then need no read of the records hash.
  local known, knownCounter = false, false
  if string.sub(kind, -7) == '-record' then
    kind = string.sub(kind, 1, -8)
    local asked = tonumber(ARGV[5])
    known = redis.call('HMGET', KEYS[4], 'v', unpack(ARGV, 6, 5 + asked))
    knownCounter = table.remove(known, 1)
    if allThere(known, asked) then
      return { false, -2, false, 0, 0, {}, { unpack(ARGV, 6, 5 + asked) }, known, '', '', '' }
    end
  end
  local claim, running = kind == 'claim' or kind == 'claim-running', kind == 'claim-running'
  local lease = redis.call('MGET', KEYS[1], KEYS[2], KEYS[11])
  local owner, keyToken = lease[1], lease[2]
  local pttl = owner and redis.call('PTTL', KEYS[1]) or -2
  local currentAt = currentOf(KEYS, job, lease[3] or keyToken)
  local paused, queue = 0, {}
  if claim then
    paused = redis.call('EXISTS', KEYS[8])
    queue = redis.call('ZRANGE', KEYS[6], 0, ${ledgerReadLimit - 1})
  end
  local runs = {}
  if running then runs = redis.call('ZRANGE', KEYS[9], 0, ${ledgerReadLimit - 1}) end
  local total, oldest = 0, {}
  if trim then
    local all = occurrencesOf(KEYS[4])
    total = #all
    if total > 0 then
      local before, expired = now - tonumber(ARGV[3]), 0
      while expired < total and all[expired + 1] < before do expired = expired + 1 end
      -- One more than the excess (a decision may add a record older than some of these), and a
      -- few more, so that the next decisions of a process that knows the view can trim without
      -- reading it again (see src/ledger/known-views.ts).
      local n = math.min(math.max(expired, total + 1 - tonumber(ARGV[4])) + ${historySlack}, total, 100)
      for i = 1, n do oldest[i] = fmt(all[i]) end
    end
  end
  local fields, fieldIndex = {}, {}
  local function want(field)
    if field and not fieldIndex[field] then
      fields[#fields + 1] = field
      fieldIndex[field] = #fields
    end
  end
  local asked = tonumber(ARGV[5])
  for i = 6, 5 + asked do want(ARGV[i]) end
  want(currentAt)
  for _, field in ipairs(queue) do want(field) end
  for _, field in ipairs(runs) do want(field) end
  for _, field in ipairs(oldest) do want(field) end
  -- The counter and every field, but those of the records already read (a missing one is false).
  local have = {}
  if known then
    for i = 1, asked do have[ARGV[5 + i]] = known[i] end
  end
  local rest = {}
  for _, field in ipairs(fields) do
    if have[field] == nil then rest[#rest + 1] = field end
  end
  local got
  if known and #rest == 0 then
    got = { knownCounter }
  else
    got = redis.call('HMGET', KEYS[4], 'v', unpack(rest))
  end
  local counter, records, r = got[1], {}, 1
  for i, field in ipairs(fields) do
    if have[field] ~= nil then
      records[i] = have[field]
    else
      r = r + 1
      records[i] = got[r]
    end
  end
  local askedRecords = {}
  for i = 1, asked do askedRecords[i] = records[fieldIndex[ARGV[5 + i]]] end
  local version = digestOf(counter, owner, keyToken, askedRecords, asked)
  return {
    owner or false, pttl, currentAt, paused, total, oldest, fields, records, version,
    counter or '', keyToken or '',
  }
end

-- The version of what the decision for ARGV (a job, the number of occurrences asked about, those)
-- read, as it is now. Returns it, the position of the first ARGV after those, the job's counter and
-- the key's token (false for none), whether someone waits on the key (its waiters key), and the
-- token the key's \`held\` keeps (false for none).
-- \`got\`: the job's counter and those records, when the caller read them already.
local function versionNow(KEYS, ARGV, got)
  local asked = tonumber(ARGV[2])
  local lease = redis.call('MGET', KEYS[1], KEYS[2], KEYS[10], KEYS[11])
  local records = got or redis.call('HMGET', KEYS[4], 'v', unpack(ARGV, 3, 2 + asked))
  local counter = table.remove(records, 1)
  return digestOf(counter, lease[1], lease[2], records, asked), 3 + asked, counter, lease[2], lease[3] ~= false, lease[4]
end
`;

const ledgerReadScript = `
local view = readView(KEYS, ARGV, now)
table.insert(view, 1, fmt(now))
return view
`;

/**
 * The write's ARGV: the job, the number of occurrences the read asked about, those, then the
 * version it read, the store time the decision was made at when it was made on a view the
 * process knew instead of one it read ('' for a read's), for a claim so made '=' and the job's
 * counter in that view (nothing after the '=' for a view presumed new; '' for none), the granted occurrence ('' for none),
 * its owner, its ttl ms, '1' when it takes the key's lease, the ttl ms the key's lease is renewed
 * for ('' for none), the key's release channel to release its lease and publish there ('' for none;
 * a channel is not a key: a client's key prefix does not apply), '1' to clear the current occurrence with it,
 * the number of records put, the number dropped, then 4 per put (occurrence, record JSON, queue
 * and running index: '1' add, '-1' remove, '0' leave) and 2 per drop (occurrence, '1' when queued;
 * a dropped occurrence is never running, and left the running index when it stopped running).
 * The sorted sets that earlier releases kept beside the records (`idx:<job>`, KEYS[5], every
 * record; `succeeded:<job>`, KEYS[7]) are neither written nor read: the records hash's own fields
 * tell what is recorded (`occurrencesOf`). A grant that takes the key's lease writes the key's
 * current occurrence into the records' HSET (field `c`, see `currentOf`), a release of it
 * empties it (leaving the token it is checked against); a grant that does not take the lease
 * keeps the token of the last one that did in `held`, once; a release publishes on the key's
 * channel only when someone waits on the key.
 * Writes nothing and replies 0 when the version changed (or a known view's time is off), or
 * { 0, the store's time, the records asked about } when a claim's counter did and those records
 * are all there (the process may decide on them alone, as on a read of them); else
 * increments the job's counter (in the HSET of the records put) and replies { the granted
 * occurrence's token (written into its record) or -1, the store's time in microseconds, the job's
 * counter now, the key's last token now ('' for none) }.
 *
 * A claim on a view presumed new (no counter known) is checked by one `EXISTS` of the lease, the
 * token, an earlier release's index and the pause instead of the lease and the token's `MGET`: none
 * may be there. So a pause, or records, that an earlier release wrote without the counter refuse
 * it too.
 *
 * The token is an `INCR` of the key's counter; a key without one gets the batch's `TIME` in
 * microseconds (`nowMicros`, read once at its start), as an acquire's counter is seeded (see above).
 */
const ledgerWriteScript = `
local asked = tonumber(ARGV[2])
local got = false
-- A claim decided on a view the process knew ('=' and its counter, none for a view presumed new):
-- when the job's counter moved since, another write came first, and the records asked about (when
-- all are there) may answer the claim alone.
local expected = ARGV[5 + asked]
if expected ~= '' then
  got = redis.call('HMGET', KEYS[4], 'v', unpack(ARGV, 3, 2 + asked))
  if (got[1] or '') ~= string.sub(expected, 2) then
    table.remove(got, 1)
    if allThere(got, asked) then return { 0, fmt(now), got } end
    return 0
  end
end
local version, at, counter, keyToken, waiting, held
if expected == '=' then
  -- Presumed new: no lease, token, records or pause of the job or its key (see above).
  if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[5], KEYS[8]) ~= 0 then return 0 end
  counter = table.remove(got, 1)
  version, at, keyToken = digestOf(counter, false, false, got, asked), 3 + asked, false
else
  version, at, counter, keyToken, waiting, held = versionNow(KEYS, ARGV, got)
end
if version ~= ARGV[at] then return 0 end
-- A decision made on a view the process knew rather than read: made at a time no later than now,
-- nor more than ${knownViewClockToleranceMs} ms before it.
if ARGV[at + 1] ~= '' then
  local decidedAt = tonumber(ARGV[at + 1])
  if decidedAt > now or now - decidedAt > ${knownViewClockToleranceMs} then return 0 end
end
at = at + 2
-- The counter's increment, written with the records put (one HSET). A missing counter (a new job,
-- or a Redis restarted without its data) is seeded from the batch's TIME in microseconds, as a
-- token is: it never comes back to a value a process knew from before (see known-views.ts).
local nextCounter = counter and fmt(tonumber(counter) + 1) or fmt(nowMicros)
local hashWrites = { 'v', nextCounter }
local grantAt, grantOwner, grantTtl, holdsKey = ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4] == '1'
local renewTtl, releaseChannel, clearCurrent = ARGV[at + 5], ARGV[at + 6], ARGV[at + 7] == '1'
local puts, drops = tonumber(ARGV[at + 8]), tonumber(ARGV[at + 9])
local token = -1
if grantAt ~= '' then
  local before = keyToken
  if keyToken then
    token = redis.call('INCR', KEYS[2])
  else
    -- A new key's counter, seeded as an acquire's is, from the batch's TIME.
    token = nowMicros
    redis.call('SET', KEYS[2], fmt(token))
  end
  keyToken = fmt(token)
  if holdsKey then
    redis.call('SET', KEYS[1], grantOwner, 'PX', grantTtl)
    -- The key's current occurrence, in the records' HSET (see currentOf).
    hashWrites[3], hashWrites[4] = 'c', grantAt .. ' ' .. keyToken
    if held then redis.call('DEL', KEYS[11]) end
    held = false
  elseif before and not held then
    -- A grant that does not take the lease: the token of the last acquisition that did stays
    -- the one a current occurrence is checked against (see currentOf).
    redis.call('SET', KEYS[11], before)
    held = before
  end
end
if releaseChannel ~= '' and clearCurrent and not hashWrites[3] then
  hashWrites[3], hashWrites[4] = 'c', ' ' .. (held or keyToken or '')
end
local function index(key, field, change)
  if change == '1' then redis.call('ZADD', key, field, field) elseif change == '-1' then redis.call('ZREM', key, field) end
end
local p = at + 10
for _ = 1, puts do
  local field, record = ARGV[p], ARGV[p + 1]
  if field == grantAt then record = '{"token":"' .. fmt(token) .. '",' .. string.sub(record, 2) end
  hashWrites[#hashWrites + 1] = field
  hashWrites[#hashWrites + 1] = record
  index(KEYS[6], field, ARGV[p + 2])
  index(KEYS[9], field, ARGV[p + 3])
  p = p + 4
end
redis.call('HSET', KEYS[4], unpack(hashWrites))
if renewTtl ~= '' then redis.call('PEXPIRE', KEYS[1], renewTtl) end
if releaseChannel ~= '' then
  -- The lease, and with it the current occurrence an earlier release kept beside it when it is the
  -- one released: one DEL. Then a wake-up, when someone waits on the key.
  if clearCurrent then redis.call('DEL', KEYS[1], KEYS[3]) else redis.call('DEL', KEYS[1]) end
  if waiting then redis.call('PUBLISH', releaseChannel, '') end
end
if drops > 0 then
  -- One command per key: the records, then the queue when it held some.
  local dropped, queued = {}, {}
  for i = 1, drops do
    local field = ARGV[p]
    dropped[i] = field
    if ARGV[p + 1] == '1' then queued[#queued + 1] = field end
    p = p + 2
  end
  redis.call('HDEL', KEYS[4], unpack(dropped))
  if #queued > 0 then redis.call('ZREM', KEYS[6], unpack(queued)) end
end
return { token, fmt(nowMicros), nextCounter, keyToken or '' }
`;

/**
 * KEYS: occurrences. ARGV: limit (>= 1). Returns the records (JSON), newest first. The hash holds
 * the last records alone (a trim keeps it to the record limit, 100 by default).
 */
const runHistoryScript = `
${occurrencesBlock}
local all = occurrencesOf(KEYS[1])
local fields = {}
for i = 1, math.min(#all, tonumber(ARGV[1])) do fields[i] = string.format('%d', all[#all + 1 - i]) end
if #fields == 0 then return {} end
local records = {}
for _, raw in ipairs(redis.call('HMGET', KEYS[1], unpack(fields))) do
  if raw then records[#records + 1] = raw end
end
return records
`;

/**
 * Locals: occurrences, time (a TIME reply). Increments the job's ledger counter, or seeds a missing
 * one from the time in microseconds, as a ledger write does.
 */
const bumpCounterBlock = `
if redis.call('HEXISTS', occurrences, 'v') == 1 then
  redis.call('HINCRBY', occurrences, 'v', 1)
else
  redis.call('HSET', occurrences, 'v', string.format('%d', tonumber(time[1]) * 1000000 + tonumber(time[2])))
end
`;

/**
 * KEYS: paused, occurrences. ARGV: by, '1' when a reason follows, reason. Records the pause at the
 * server's `TIME`, and increments the job's ledger counter (a claim decided before it is decided again).
 */
const pauseJobScript = `
local occurrences, time = KEYS[2], redis.call('TIME')
${bumpCounterBlock}
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'pausedAt', string.format('%d', now), 'by', ARGV[1])
if ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'reason', ARGV[3]) end
return 1
`;

/** KEYS: paused, occurrences. Lifts the pause, and increments the job's ledger counter. */
const resumeJobScript = `
local occurrences, time = KEYS[2], redis.call('TIME')
${bumpCounterBlock}
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
 * The batch form of a ledger script (see ../call-batches.ts): its body runs once per call, in
 * order, after the read block's functions and one `TIME` (`now`, in ms; `nowMicros`) for the whole
 * batch; the replies come back as one array. Each call sends one key, its lease key, and one
 * argument, its ARGV packed by {@link packArguments}: the body gets the nine keys of its job (in
 * the order of `RedisKeys.ledger`, made from the lease key, so they share its hash tag and a
 * client's key prefix) and the ARGV unpacked, so it reads as a script of its own. Two arguments a
 * call instead of thirty cost the client far less to encode (the batch of 100 calls is one
 * command). A body never replies nil (it would end the array); `false` comes back as a null element.
 */
function batchOf(body: string): string {
  return `${ledgerReadBlock}
local nowMicros = serverMicros()
local now = math.floor(nowMicros / 1000)
local function one(KEYS, ARGV)
${body}
end
local replies = {}
for i = 1, #KEYS do
  local lease, packed, args, at = KEYS[i], ARGV[i], {}, 1
  while at <= #packed do
    local colon = string.find(packed, ':', at, true)
    local size = tonumber(string.sub(packed, at, colon - 1))
    args[#args + 1] = string.sub(packed, colon + 1, colon + size)
    at = colon + size + 1
  end
  local base, job = string.sub(lease, 1, ${-leaseSuffix.length - 1}), args[1]
  local keys = { lease, ${ledgerKeySuffixes.map((suffix) => `base .. '${suffix}'${suffix.endsWith(':') ? ' .. job' : ''}`).join(', ')} }
  replies[i] = one(keys, args)
end
return replies
`;
}

/**
 * A ledger call's ARGV as the batch scripts take it: each argument as its length in bytes, a
 * colon, then the argument (`3:abc0:`), so any byte may appear in one.
 */
export function packArguments(argv: ReadonlyArray<string | number>): string {
  // Joined once: a string built by `+=` is a rope of as many pieces, flattened again to be sent.
  const parts: string[] = new Array(2 * argv.length);
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index]!;
    const text = typeof arg === 'string' ? arg : String(arg);
    parts[2 * index] = `${Buffer.byteLength(text)}:`;
    parts[2 * index + 1] = text;
  }
  return parts.join('');
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
  /** The run ledger's read and conditional write, in batch form (one call is a batch of one). */
  ledgerRead: new StoreScript(batchOf(ledgerReadScript), 1),
  ledgerWrite: new StoreScript(batchOf(ledgerWriteScript), 1),
  runHistory: new StoreScript(runHistoryScript, 1),
  pauseJob: new StoreScript(pauseJobScript, 2),
  resumeJob: new StoreScript(resumeJobScript, 2),
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
