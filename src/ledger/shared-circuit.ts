import type { TimeProvider } from '../pipeline/time.ts';
import type {
  CircuitProbeClaim,
  CircuitSync,
  CircuitSyncReply,
  SharedCircuitState,
} from '../strategies/circuit-breaker/shared.ts';

/** The counts are kept in this many buckets of a tenth of the sampling duration each. */
export const circuitBuckets = 10;

/** One shared circuit, as every store keeps it (the Redis hash and the SQL rows have these fields). */
export interface StoredCircuit {
  state: 'closed' | 'open' | 'isolated';
  /** Store clock, epoch ms: when the break ends. */
  openUntil: number;
  generation: number;
  /** The probe lease: its owner and when it ends (store clock). */
  probeOwner: string | undefined;
  probeUntil: number;
  /** Bucket number (floor(now / width)) -> [successes, failures]. */
  buckets: Map<number, [number, number]>;
}

/** A circuit no instance has synced yet: closed, generation 0, no counts. */
export function newCircuit(): StoredCircuit {
  return {
    state: 'closed',
    openUntil: 0,
    generation: 0,
    probeOwner: undefined,
    probeUntil: 0,
    buckets: new Map(),
  };
}

/**
 * One sync, applied to `circuit` (changed in place) at `now` (store clock): the transition if its
 * guard holds, then the counts; returns the reply. The memory and MySQL stores run it on their
 * state; the Redis script and the PostgreSQL statement do the same in one round trip.
 */
export function applyCircuitSync(circuit: StoredCircuit, sync: CircuitSync, now: number): CircuitSyncReply {
  switch (sync.transition) {
    case 'open':
      if (circuit.state === 'closed' && circuit.generation === sync.generation) {
        circuit.state = 'open';
        circuit.openUntil = now + sync.breakDuration;
        circuit.generation++;
      }
      break;
    case 'close':
    case 'reopen':
      if (circuit.state === 'open' && circuit.probeOwner === sync.owner && circuit.probeUntil > now) {
        circuit.generation++;
        circuit.probeOwner = undefined;
        if (sync.transition === 'close') {
          circuit.state = 'closed';
          circuit.buckets.clear();
        } else {
          circuit.openUntil = now + sync.breakDuration;
        }
      }
      break;
    case 'isolate':
      if (circuit.state !== 'isolated') circuit.generation++;
      circuit.state = 'isolated';
      circuit.probeOwner = undefined;
      break;
    case 'reset':
      if (circuit.state !== 'closed') circuit.generation++;
      circuit.state = 'closed';
      circuit.probeOwner = undefined;
      circuit.buckets.clear();
      break;
  }
  const bucket = Math.floor(now / (sync.samplingDuration / circuitBuckets));
  if (sync.successes + sync.failures > 0) {
    const counts = circuit.buckets.get(bucket) ?? [0, 0];
    counts[0] += sync.successes;
    counts[1] += sync.failures;
    circuit.buckets.set(bucket, counts);
  }
  let successes = 0;
  let failures = 0;
  for (const [number, counts] of circuit.buckets) {
    if (number <= bucket - circuitBuckets) circuit.buckets.delete(number);
    else {
      successes += counts[0];
      failures += counts[1];
    }
  }
  return { ...circuitView(circuit, now), successes, failures };
}

/** A probe claim, applied to `circuit` (changed in place) at `now`: the lease if it is free. */
export function applyProbeClaim(
  circuit: StoredCircuit,
  claim: { readonly owner: string; readonly leaseMs: number },
  now: number,
): CircuitProbeClaim {
  const claimed =
    circuit.state === 'open' &&
    now >= circuit.openUntil &&
    (circuit.probeOwner === undefined || circuit.probeUntil <= now);
  if (claimed) {
    circuit.probeOwner = claim.owner;
    circuit.probeUntil = now + claim.leaseMs;
  }
  return { ...circuitView(circuit, now), claimed };
}

function circuitView(circuit: StoredCircuit, now: number): SharedCircuitState {
  let retryAfter = 0;
  if (circuit.state === 'open') {
    retryAfter = Math.max(0, circuit.openUntil - now);
    if (circuit.probeOwner !== undefined) retryAfter = Math.max(retryAfter, circuit.probeUntil - now);
  }
  return { state: circuit.state, retryAfter, generation: circuit.generation };
}

/**
 * The shared circuits of `MemoryLockStore`. Synchronous, so each call is atomic. Counts and
 * guarded transitions only: the breaker (fleet.ts) decides when the circuit opens.
 */
export class MemoryCircuits {
  readonly #circuits = new Map<string, StoredCircuit>();
  readonly #time: TimeProvider;

  constructor(time: TimeProvider) {
    this.#time = time;
  }

  sync(key: string, sync: CircuitSync): CircuitSyncReply {
    return applyCircuitSync(this.#circuit(key), sync, this.#time.now());
  }

  claimProbe(key: string, claim: { readonly owner: string; readonly leaseMs: number }): CircuitProbeClaim {
    return applyProbeClaim(this.#circuit(key), claim, this.#time.now());
  }

  #circuit(key: string): StoredCircuit {
    let circuit = this.#circuits.get(key);
    if (circuit === undefined) {
      circuit = newCircuit();
      this.#circuits.set(key, circuit);
    }
    return circuit;
  }
}
