/**
 * A store of your own shares a circuit breaker: it makes the breaker (`sharedCircuitBreaker()`) on
 * its own `syncCircuit` / `claimProbe`. This file imports no store that resil ships, nor the module
 * they keep their circuits with (src/ledger/shared-circuit.ts): the breaker must not depend on one
 * of them being loaded.
 */
import { describe, expect, it } from 'vitest';
import { PipelineBuilder } from '../../src/pipeline/pipeline-builder.ts';
import { isBrokenCircuitError } from '../../src/strategies/circuit-breaker/errors.ts';
import { SharedCircuitBreaker, sharedCircuitDefaults } from '../../src/strategies/circuit-breaker/fleet.ts';
import type {
  CircuitProbeClaim,
  CircuitSync,
  CircuitSyncReply,
  LocalCircuitBreaker,
  SharedCircuitStore,
  SharedCircuits,
} from '../../src/strategies/circuit-breaker/shared.ts';
import { circuitBreakerStrategy } from '../../src/strategies/circuit-breaker/strategy.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';

interface Circuit {
  state: 'closed' | 'open' | 'isolated';
  openUntil: number;
  generation: number;
  successes: number;
  failures: number;
  probeOwner?: string | undefined;
}

/** A key-value service's circuits, in a map: counts without buckets, the guards of the real stores. */
class KvCircuitStore implements SharedCircuitStore, SharedCircuits {
  readonly #circuits = new Map<string, Circuit>();

  constructor(readonly time: FakeTimeProvider) {}

  sharedCircuitBreaker(breaker: LocalCircuitBreaker) {
    return new SharedCircuitBreaker(breaker, this);
  }

  async syncCircuit(key: string, sync: CircuitSync): Promise<CircuitSyncReply> {
    const circuit = this.#circuit(key);
    const now = this.time.now();
    if (sync.transition === 'open' && circuit.state === 'closed' && circuit.generation === sync.generation) {
      circuit.state = 'open';
      circuit.openUntil = now + sync.breakDuration;
      circuit.generation++;
    } else if (sync.transition === 'close' || sync.transition === 'reopen') {
      if (circuit.state === 'open' && circuit.probeOwner === sync.owner) {
        circuit.generation++;
        circuit.probeOwner = undefined;
        if (sync.transition === 'close')
          Object.assign(circuit, { state: 'closed', successes: 0, failures: 0 });
        else circuit.openUntil = now + sync.breakDuration;
      }
    } else if (sync.transition === 'isolate' || sync.transition === 'reset') {
      circuit.generation++;
      circuit.state = sync.transition === 'isolate' ? 'isolated' : 'closed';
      circuit.probeOwner = undefined;
    }
    circuit.successes += sync.successes;
    circuit.failures += sync.failures;
    const { successes, failures } = circuit;
    return { ...this.#view(circuit, now), successes, failures };
  }

  async claimProbe(key: string, claim: { owner: string; leaseMs: number }): Promise<CircuitProbeClaim> {
    const circuit = this.#circuit(key);
    const now = this.time.now();
    const claimed = circuit.state === 'open' && now >= circuit.openUntil && circuit.probeOwner === undefined;
    if (claimed) circuit.probeOwner = claim.owner;
    return { ...this.#view(circuit, now), claimed };
  }

  #view(circuit: Circuit, now: number) {
    const retryAfter = circuit.state === 'open' ? Math.max(0, circuit.openUntil - now) : 0;
    return { state: circuit.state, retryAfter, generation: circuit.generation };
  }

  #circuit(key: string): Circuit {
    let circuit = this.#circuits.get(key);
    if (circuit === undefined) {
      circuit = { state: 'closed', openUntil: 0, generation: 0, successes: 0, failures: 0 };
      this.#circuits.set(key, circuit);
    }
    return circuit;
  }
}

describe('fleet-wide circuit breaker on a store of your own', () => {
  it("one instance's failures open the circuit for every instance on the store", async () => {
    const time = new FakeTimeProvider();
    const store = new KvCircuitStore(time);
    const [a, b] = [0, 1].map(() =>
      new PipelineBuilder({ timeProvider: time })
        .add(
          circuitBreakerStrategy({
            failureRatio: 0.5,
            minimumThroughput: 4,
            breakDuration: '5s',
            store,
            key: 'payments',
          }),
        )
        .build(),
    );
    await time.advance(0); // the first sync of each breaker
    for (let i = 0; i < 4; i++) await a!.settle(async () => Promise.reject(new Error('down')));
    await time.advance(sharedCircuitDefaults.syncInterval);

    let called = false;
    const outcome = await b!.settle(async () => {
      called = true;
      return 'ok';
    });
    expect(called).toBe(false);
    expect(!outcome.ok && isBrokenCircuitError(outcome.error)).toBe(true);
  });
});
