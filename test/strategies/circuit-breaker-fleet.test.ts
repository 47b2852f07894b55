/**
 * The fleet-wide circuit breaker (`store` + `key`), on MemoryLockStore with a FakeTimeProvider:
 * several pipelines built on one store stand for the processes of a fleet. The real-process runs
 * on Redis, PostgreSQL and MySQL are in test/stores/shared-circuit.test.ts.
 */
import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import {
  CircuitBreakerManualControl,
  CircuitBreakerStateProvider,
  circuitBreakerStrategy,
  InvalidOptionError,
  isBrokenCircuitError,
  isIsolatedCircuitError,
  MemoryLockStore,
  PipelineBuilder,
  ResiliencePipelineBuilder,
  type TelemetryEvent,
} from '../../src/index.ts';
import { RedisLockStore } from '../../src/stores/redis/index.ts';
import { SharedCircuitBreaker, sharedCircuitDefaults } from '../../src/strategies/circuit-breaker/fleet.ts';
import type {
  CircuitSync,
  SharedCircuitStore,
  SharedCircuits,
} from '../../src/strategies/circuit-breaker/shared.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';

const options = {
  failureRatio: 0.5,
  minimumThroughput: 4,
  samplingDuration: '10s',
  breakDuration: '5s',
} as const;

const fail = async () => {
  throw new Error('down');
};
const succeed = async () => 'ok';

/** A store that counts its round trips and can be made unreachable. */
function countingStore(time: FakeTimeProvider) {
  const inner = new MemoryLockStore({ timeProvider: time });
  const calls = { sync: 0, claim: 0, syncs: [] as CircuitSync[] };
  let down = false;
  const store: SharedCircuitStore & SharedCircuits = {
    sharedCircuitBreaker: (breaker) => new SharedCircuitBreaker(breaker, store),
    async syncCircuit(key, sync) {
      calls.sync++;
      calls.syncs.push(sync);
      if (down) throw new Error('ECONNREFUSED');
      return inner.syncCircuit(key, sync);
    },
    async claimProbe(key, claim) {
      calls.claim++;
      if (down) throw new Error('ECONNREFUSED');
      return inner.claimProbe(key, claim);
    },
  };
  return {
    store,
    calls,
    setDown: (value: boolean) => {
      down = value;
    },
  };
}

function fleetOf(count: number, time: FakeTimeProvider, store: SharedCircuitStore, extra = {}) {
  const events: TelemetryEvent[] = [];
  const pipelines = Array.from({ length: count }, (_, index) =>
    new ResiliencePipelineBuilder({
      timeProvider: time,
      telemetry: (event) => {
        if (event.strategy === 'circuit-breaker') events.push({ ...event, strategy: `#${index}` });
      },
    })
      .addCircuitBreaker({ ...options, store, key: 'payments', ...extra })
      .build(),
  );
  return { pipelines, events };
}

describe('fleet-wide circuit breaker (MemoryLockStore, FakeTimeProvider)', () => {
  it("one instance's failures open the circuit; the others reject within one sync, without calling the downstream", async () => {
    const time = new FakeTimeProvider();
    const { store } = countingStore(time);
    const {
      pipelines: [a, b],
      events,
    } = fleetOf(2, time, store);
    await time.advance(0); // the first sync of each breaker
    for (let i = 0; i < 4; i++) await a!.settle(fail);
    await time.advance(0);
    expect((await a!.settle(succeed)).ok).toBe(false);

    await time.advance(sharedCircuitDefaults.syncInterval);
    const downstream = vi.fn(succeed);
    const outcome = await b!.settle(downstream);
    expect(downstream).not.toHaveBeenCalled();
    expect(outcome.ok === false && isBrokenCircuitError(outcome.error)).toBe(true);
    expect(
      events.filter((event) => event.event === 'OnCircuitOpened').map((event) => event.strategy),
    ).toEqual(['#0', '#1']);
  });

  it('the ratio is over the whole fleet: failures spread over instances add up, successes elsewhere hold it closed', async () => {
    const time = new FakeTimeProvider();
    const { store } = countingStore(time);
    const {
      pipelines: [a, b, c],
    } = fleetOf(3, time, store);
    await time.advance(0);
    // 2 failures on A, 2 on B: no instance alone reaches minimumThroughput 4.
    for (const pipeline of [a, a, b, b]) await pipeline!.settle(fail);
    await time.advance(sharedCircuitDefaults.syncInterval * 2);
    expect((await c!.settle(succeed)).ok).toBe(false);

    const time2 = new FakeTimeProvider();
    const counted = countingStore(time2);
    const fleet2 = fleetOf(2, time2, counted.store);
    await time2.advance(0);
    for (let i = 0; i < 6; i++) await fleet2.pipelines[1]!.settle(succeed);
    await time2.advance(sharedCircuitDefaults.syncInterval);
    // 3 failures of 9 outcomes: a third, under 0.5, though A alone failed every call.
    for (let i = 0; i < 3; i++) await fleet2.pipelines[0]!.settle(fail);
    await time2.advance(sharedCircuitDefaults.syncInterval * 2);
    expect((await fleet2.pipelines[0]!.settle(succeed)).ok).toBe(true);
    expect((await fleet2.pipelines[1]!.settle(succeed)).ok).toBe(true);
  });

  it('instances that reach the ratio in the same interval open the circuit once (the store opens it at the generation they saw)', async () => {
    const time = new FakeTimeProvider();
    const { store, calls } = countingStore(time);
    const {
      pipelines: [a, b, c],
      events,
    } = fleetOf(3, time, store, { minimumThroughput: 6 });
    await time.advance(0);
    for (const pipeline of [a, b, c]) await pipeline!.settle(fail);
    await time.advance(sharedCircuitDefaults.syncInterval);
    // Each has 1 failure synced; 2 more each reach 6 failures of 6 on all three at once.
    for (const pipeline of [a, b, c]) for (let i = 0; i < 2; i++) await pipeline!.settle(fail);
    await time.advance(sharedCircuitDefaults.syncInterval * 2);
    expect(calls.syncs.filter((sync) => sync.transition === 'open').length).toBeGreaterThanOrEqual(1);
    const reply = await store.syncCircuit('payments', {
      ...calls.syncs.at(-1)!,
      successes: 0,
      failures: 0,
      transition: undefined,
    });
    expect(reply).toMatchObject({ state: 'open', generation: 1, failures: 9 });
    expect(events.filter((event) => event.event === 'OnCircuitOpened')).toHaveLength(3);
  });

  it("breakDurationGenerator sets the fleet's break, with the fleet's counts", async () => {
    const time = new FakeTimeProvider();
    const { store } = countingStore(time);
    const seen: Array<{ failureCount: number; failureRate: number }> = [];
    const {
      pipelines: [a, b],
    } = fleetOf(2, time, store, {
      breakDurationGenerator: ({
        failureCount,
        failureRate,
      }: {
        failureCount: number;
        failureRate: number;
      }) => {
        seen.push({ failureCount, failureRate });
        return '8s';
      },
    });
    await time.advance(0);
    for (let i = 0; i < 2; i++) await b!.settle(succeed);
    await time.advance(sharedCircuitDefaults.syncInterval);
    for (let i = 0; i < 2; i++) await a!.settle(fail);
    await time.advance(sharedCircuitDefaults.syncInterval * 2);
    expect(seen).toEqual([{ failureCount: 2, failureRate: 0.5 }]);
    const outcome = await b!.settle(succeed);
    expect(
      outcome.ok === false && isBrokenCircuitError(outcome.error) && outcome.error.retryAfter,
    ).toBeGreaterThan(7_000);
  });

  it('a call on a closed circuit makes no store round trip of its own: one sync per breaker per interval', async () => {
    const time = new FakeTimeProvider();
    const { store, calls } = countingStore(time);
    const {
      pipelines: [a],
    } = fleetOf(1, time, store);
    await time.advance(0);
    const before = calls.sync;
    for (let i = 0; i < 1_000; i++) await a!.execute(succeed);
    expect(calls.sync).toBe(before);
    await time.advance(sharedCircuitDefaults.syncInterval);
    expect(calls.sync).toBe(before + 1);
    expect(calls.syncs.at(-1)).toMatchObject({ successes: 1_000, failures: 0, samplingDuration: 10_000 });
  });

  it('after the break exactly one call in the fleet probes; its success closes the circuit for all', async () => {
    const time = new FakeTimeProvider();
    const { store } = countingStore(time);
    const {
      pipelines: [a, b],
      events,
    } = fleetOf(2, time, store);
    await time.advance(0);
    for (let i = 0; i < 4; i++) await a!.settle(fail);
    await time.advance(sharedCircuitDefaults.syncInterval);
    await time.advance(5_000);

    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const downstream = vi.fn(async () => {
      await gate;
      return 'ok';
    });
    const calls = Array.from({ length: 50 }, (_, index) => (index % 2 ? a : b)!.settle(downstream));
    await time.advance(0);
    expect(downstream).toHaveBeenCalledTimes(1);
    release();
    const outcomes = await Promise.all(calls);
    expect(outcomes.filter((outcome) => outcome.ok)).toHaveLength(1);
    expect(outcomes.filter((outcome) => !outcome.ok && isBrokenCircuitError(outcome.error)).length).toBe(49);
    expect(events.filter((event) => event.event === 'OnCircuitHalfOpened')).toHaveLength(1);

    await time.advance(sharedCircuitDefaults.syncInterval);
    expect((await a!.settle(succeed)).ok).toBe(true);
    expect((await b!.settle(succeed)).ok).toBe(true);
    expect(
      events
        .filter((event) => event.event === 'OnCircuitClosed')
        .map((event) => event.strategy)
        .sort(),
    ).toEqual(['#0', '#1']);
  });

  it('a failed probe re-opens the circuit for all, for another break', async () => {
    const time = new FakeTimeProvider();
    const { store } = countingStore(time);
    const {
      pipelines: [a, b],
    } = fleetOf(2, time, store);
    await time.advance(0);
    for (let i = 0; i < 4; i++) await a!.settle(fail);
    await time.advance(sharedCircuitDefaults.syncInterval);
    await time.advance(5_000);
    expect((await b!.settle(fail)).ok).toBe(false); // the probe, failed
    await time.advance(sharedCircuitDefaults.syncInterval);
    const downstream = vi.fn(succeed);
    const outcome = await a!.settle(downstream);
    expect(downstream).not.toHaveBeenCalled();
    expect(
      outcome.ok === false && isBrokenCircuitError(outcome.error) && outcome.error.retryAfter,
    ).toBeGreaterThan(4_000);
  });

  it('a store that fails leaves each instance on its own breaker, reported once, and they share again when it is back', async () => {
    const time = new FakeTimeProvider();
    const { store, setDown } = countingStore(time);
    const {
      pipelines: [a, b],
      events,
    } = fleetOf(2, time, store);
    await time.advance(0);
    setDown(true);
    await time.advance(sharedCircuitDefaults.syncInterval);
    expect(events.filter((event) => event.event === 'OnCircuitStoreUnavailable')).toHaveLength(2);
    // Calls keep working, and the local breaker works as without a store.
    for (let i = 0; i < 20; i++) expect((await b!.settle(succeed)).ok).toBe(true);
    for (let i = 0; i < 4; i++) await a!.settle(fail);
    await time.advance(sharedCircuitDefaults.retryInterval * 3);
    expect((await b!.settle(succeed)).ok).toBe(true); // B did not hear of A's failures
    expect((await a!.settle(succeed)).ok).toBe(false); // A's own breaker opened
    expect(events.filter((event) => event.event === 'OnCircuitStoreUnavailable')).toHaveLength(2);

    setDown(false);
    await time.advance(sharedCircuitDefaults.retryInterval);
    expect(events.filter((event) => event.event === 'OnCircuitStoreRestored')).toHaveLength(2);
    // Shared again: the fleet's circuit (closed) applies, and A's failures reach B.
    expect((await a!.settle(succeed)).ok).toBe(true);
    for (let i = 0; i < 4; i++) await a!.settle(fail);
    await time.advance(sharedCircuitDefaults.syncInterval);
    expect((await b!.settle(succeed)).ok).toBe(false);
  });

  it('a sync that gets no answer counts as an outage after the timeout', async () => {
    const time = new FakeTimeProvider();
    const hanging: SharedCircuitStore & SharedCircuits = {
      sharedCircuitBreaker: (breaker) => new SharedCircuitBreaker(breaker, hanging),
      syncCircuit: () => new Promise(() => {}),
      claimProbe: () => new Promise(() => {}),
    };
    const {
      pipelines: [a],
      events,
    } = fleetOf(1, time, hanging);
    expect((await a!.settle(succeed)).ok).toBe(true);
    await time.advance(sharedCircuitDefaults.timeout);
    expect(events.map((event) => event.event)).toContain('OnCircuitStoreUnavailable');
    expect((await a!.settle(succeed)).ok).toBe(true);
  });

  it('manual isolate and close act on every instance', async () => {
    const time = new FakeTimeProvider();
    const { store } = countingStore(time);
    const manualControl = new CircuitBreakerManualControl();
    const stateProvider = new CircuitBreakerStateProvider();
    const a = new ResiliencePipelineBuilder({ timeProvider: time })
      .addCircuitBreaker({ ...options, store, key: 'payments', manualControl })
      .build();
    const b = new ResiliencePipelineBuilder({ timeProvider: time })
      .addCircuitBreaker({ ...options, store, key: 'payments', stateProvider })
      .build();
    await time.advance(0);
    await manualControl.isolate();
    await time.advance(sharedCircuitDefaults.syncInterval);
    expect(stateProvider.circuitState).toBe('isolated');
    const outcome = await b.settle(succeed);
    expect(outcome.ok === false && isIsolatedCircuitError(outcome.error)).toBe(true);
    await manualControl.close();
    await time.advance(sharedCircuitDefaults.syncInterval);
    expect(stateProvider.circuitState).toBe('closed');
    expect((await b.settle(succeed)).ok).toBe(true);
    expect((await a.settle(succeed)).ok).toBe(true);
  });

  it('stops syncing when idle and starts again on the next call; timers are the pipeline clock', async () => {
    const time = new FakeTimeProvider();
    const { store, calls } = countingStore(time);
    const {
      pipelines: [a],
    } = fleetOf(1, time, store);
    await a!.execute(succeed);
    await time.advance(sharedCircuitDefaults.idleAfter + sharedCircuitDefaults.syncInterval * 2);
    expect(time.pendingTimers).toBe(0);
    const stopped = calls.sync;
    await time.advance(10_000);
    expect(calls.sync).toBe(stopped);
    await a!.execute(succeed);
    await time.advance(0);
    expect(calls.sync).toBe(stopped + 1);
    expect(time.pendingTimers).toBe(1);
  });

  it('rejects a store without the capability, a missing key, and consecutiveFailures, as InvalidOptionError', () => {
    const time = new FakeTimeProvider();
    const store = new MemoryLockStore({ timeProvider: time });
    const build = (extra: object) => () =>
      new PipelineBuilder({ timeProvider: time }).add(circuitBreakerStrategy(extra)).build();
    expect(build({ store: { acquire() {} }, key: 'k' })).toThrow(InvalidOptionError);
    expect(build({ store: { acquire() {} }, key: 'k' })).toThrow(/circuitBreaker\.store/);
    expect(build({ store })).toThrow(/circuitBreaker\.key/);
    expect(build({ store, key: 'k', consecutiveFailures: 3 })).toThrow(/consecutiveFailures/);
  });

  it("refuses at build() a key the store cannot keep, with the store's InvalidKeyError", () => {
    const client = new Redis({ lazyConnect: true });
    const store = new RedisLockStore(client);
    const build = () =>
      new ResiliencePipelineBuilder().addCircuitBreaker({ store, key: 'payments}eu' }).build();
    expect(build).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
    client.disconnect();
  });

  it('pins the sharing defaults', () => {
    expect(sharedCircuitDefaults).toEqual({
      syncInterval: 250,
      retryInterval: 1_000,
      timeout: 1_000,
      idleAfter: 60_000,
    });
  });
});
