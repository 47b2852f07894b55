/**
 * Shared circuit breakers (`circuitBreaker.store`) on Redis: one Lua script per operation, so a
 * sync (counts in, a guarded transition, circuit out) and a probe claim are each atomic and one
 * round trip. The script does what `applyCircuitSync` (src/ledger/shared-circuit.ts) does, by the
 * server's `TIME`; no decision is taken here (the breaker decides when to open).
 *
 * | key | type | holds |
 * |---|---|---|
 * | `<prefix>{circuit:<key>}:state` | hash | `state` (`closed`, `open`, `isolated`), `until` (end of the break, server ms), `gen` (bumped by every transition); expires a day after its last sync unless isolated |
 * | `<prefix>{circuit:<key>}:counts` | hash | `s<n>` / `f<n>`: successes / failures of bucket `n` (server ms / (samplingDuration / 10)); expires a sampling duration after its last count |
 * | `<prefix>{circuit:<key>}:probe` | string, PX | owner of the half-open probe lease, for at most the break duration (`SET NX PX`) |
 */
import type {
  CircuitProbeClaim,
  CircuitSync,
  CircuitSyncReply,
  SharedCircuitState,
} from '../../strategies/circuit-breaker/shared.ts';
import { StoreScript } from './scripts.ts';

/** The KEYS of both scripts: state, counts, probe; in one hash tag (one Cluster slot). */
export function circuitKeys(prefix: string, key: string): string[] {
  const tag = `${prefix}{circuit:${key}}`;
  return [`${tag}:state`, `${tag}:counts`, `${tag}:probe`];
}

/** Locals: now (server ms), and the circuit's fields. */
const readState = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local fields = redis.call('HMGET', KEYS[1], 'state', 'until', 'gen')
local state = fields[1] or 'closed'
local openUntil = tonumber(fields[2]) or 0
local gen = tonumber(fields[3]) or 0
`;

/** Leaves `retry`: while open, ms until a probe may be claimed (the break, or the live lease). */
const retryAfter = `
local retry = 0
if state == 'open' then
  retry = math.max(openUntil - now, 0)
  local lease = redis.call('PTTL', KEYS[3])
  if lease > retry then retry = lease end
end
`;

/**
 * ARGV: owner, successes, failures, samplingDuration ms, transition ('' for none), breakDuration
 * ms, generation seen. Returns {state, retryAfter, gen, successes, failures}.
 */
const syncScript = `
${readState}
local owner, successes, failures = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local sampling, transition, breakMs = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local changed = false
if transition == 'open' then
  if state == 'closed' and gen == tonumber(ARGV[7]) then
    state = 'open'
    openUntil = now + breakMs
    gen = gen + 1
    changed = true
  end
elseif transition == 'close' or transition == 'reopen' then
  if state == 'open' and redis.call('GET', KEYS[3]) == owner then
    redis.call('DEL', KEYS[3])
    gen = gen + 1
    changed = true
    if transition == 'close' then
      state = 'closed'
      redis.call('DEL', KEYS[2])
    else
      openUntil = now + breakMs
    end
  end
elseif transition == 'isolate' then
  if state ~= 'isolated' then gen = gen + 1 end
  state = 'isolated'
  changed = true
  redis.call('DEL', KEYS[3])
elseif transition == 'reset' then
  if state ~= 'closed' then gen = gen + 1 end
  state = 'closed'
  changed = true
  redis.call('DEL', KEYS[3], KEYS[2])
end
local bucket = math.floor(now / (sampling / 10))
if successes > 0 then redis.call('HINCRBY', KEYS[2], 's' .. bucket, successes) end
if failures > 0 then redis.call('HINCRBY', KEYS[2], 'f' .. bucket, failures) end
if successes + failures > 0 then redis.call('PEXPIRE', KEYS[2], math.ceil(sampling)) end
local totalS, totalF = 0, 0
local counts = redis.call('HGETALL', KEYS[2])
for i = 1, #counts, 2 do
  local field = counts[i]
  if tonumber(string.sub(field, 2)) <= bucket - 10 then
    redis.call('HDEL', KEYS[2], field)
  elseif string.sub(field, 1, 1) == 's' then
    totalS = totalS + tonumber(counts[i + 1])
  else
    totalF = totalF + tonumber(counts[i + 1])
  end
end
if changed then
  redis.call('HSET', KEYS[1], 'state', state, 'until', string.format('%d', openUntil), 'gen', string.format('%d', gen))
end
if state == 'isolated' then
  redis.call('PERSIST', KEYS[1])
elseif changed or fields[1] then
  redis.call('PEXPIRE', KEYS[1], 86400000)
end
${retryAfter}
return {state, retry, gen, totalS, totalF}
`;

/** ARGV: owner, lease ms. Returns {claimed (1 or 0), state, retryAfter, gen}. */
const claimScript = `
${readState}
local claimed = 0
if state == 'open' and now >= openUntil and redis.call('SET', KEYS[3], ARGV[1], 'NX', 'PX', ARGV[2]) then
  claimed = 1
end
${retryAfter}
return {claimed, state, retry, gen}
`;

export const circuitScripts = {
  sync: new StoreScript(syncScript, 3),
  claim: new StoreScript(claimScript, 3),
} as const;

/** Runs one of {@link circuitScripts} with KEYS and ARGV, bounded like the store's other scripts. */
export type RunCircuitScript = (script: StoreScript, args: Array<string | number>) => Promise<unknown>;

function stateOf(state: unknown, retry: unknown, gen: unknown): SharedCircuitState {
  return {
    state: state === 'open' || state === 'isolated' ? state : 'closed',
    retryAfter: Number(retry),
    generation: Number(gen),
  };
}

export async function syncRedisCircuit(
  run: RunCircuitScript,
  prefix: string,
  key: string,
  sync: CircuitSync,
): Promise<CircuitSyncReply> {
  const reply = (await run(circuitScripts.sync, [
    ...circuitKeys(prefix, key),
    sync.owner,
    sync.successes,
    sync.failures,
    sync.samplingDuration,
    sync.transition ?? '',
    Math.ceil(sync.breakDuration),
    sync.generation,
  ])) as [string, number, number, number, number];
  return {
    ...stateOf(reply[0], reply[1], reply[2]),
    successes: Number(reply[3]),
    failures: Number(reply[4]),
  };
}

export async function claimRedisProbe(
  run: RunCircuitScript,
  prefix: string,
  key: string,
  claim: { readonly owner: string; readonly leaseMs: number },
): Promise<CircuitProbeClaim> {
  const reply = (await run(circuitScripts.claim, [
    ...circuitKeys(prefix, key),
    claim.owner,
    Math.max(1, Math.ceil(claim.leaseMs)),
  ])) as [number, string, number, number];
  return { ...stateOf(reply[1], reply[2], reply[3]), claimed: reply[0] === 1 };
}
