import {
  type ConformanceFactory,
  type ConformanceTestFunctions,
  sleep,
  testFunctionsOf,
  uniqueNamespace,
} from '../testing/conformance-namespace.ts';
import type { InstanceInfo, InstanceRegistry } from './contract.ts';

const second = 1_000;

/**
 * Registers a test suite (vitest, jest or node:test) that checks `factory`'s store against the {@link InstanceRegistry}
 * contract: a registered instance is listed with what it registered and its last heartbeat (store
 * clock); registering again replaces it and moves `lastSeenAt`; it disappears `ttlMs` after its last
 * heartbeat, or at once when removed. Instances of other tests on a shared store are ignored (only
 * names under the test's namespace are looked at). Some tests wait for a short ttl (300 ms) to pass.
 *
 * @example
 * describeInstanceRegistryConformance('PostgresLockStore', () => new PostgresLockStore(pool, { schema }));
 */
export function describeInstanceRegistryConformance(
  name: string,
  factory: ConformanceFactory<InstanceRegistry>,
  options: { test?: ConformanceTestFunctions } = {},
): void {
  const { describe, it, expect } = testFunctionsOf(options.test, 'describeInstanceRegistryConformance');
  async function setUp() {
    const namespace = uniqueNamespace();
    const store = await factory(namespace);
    const info = (suffix: string, overrides: Partial<InstanceInfo> = {}): InstanceInfo => ({
      instance: `${namespace}${suffix}`,
      host: 'conformance-host',
      pid: 4242,
      version: '1.2.3',
      startedAt: Date.now() - 60 * second,
      jobs: 3,
      clockOffsetMs: -2_000.5,
      ...overrides,
    });
    /** The live instances of this test, by name. */
    const listed = async () =>
      (await store.listInstances()).filter((each) => each.instance.startsWith(namespace));
    return { store, info, listed };
  }

  describe(`InstanceRegistry conformance: ${name}`, () => {
    it('lists a registered instance with what it registered and when the store saw it', async () => {
      const { store, info, listed } = await setUp();
      expect(await listed()).toEqual([]);
      const worker = info('worker-1');
      await store.registerInstance(worker, { ttlMs: 10 * second });
      const [entry, ...rest] = await listed();
      expect(rest).toEqual([]);
      expect(entry).toMatchObject(worker);
      expect(Math.abs(entry!.lastSeenAt - Date.now())).toBeLessThan(5 * second);
    });

    it('registering again replaces what the instance registered and moves lastSeenAt', async () => {
      const { store, info, listed } = await setUp();
      await store.registerInstance(info('worker-1'), { ttlMs: 10 * second });
      const [first] = await listed();
      await sleep(20);
      const again = info('worker-1', { jobs: 5, clockOffsetMs: 12, pid: 7 });
      await store.registerInstance(again, { ttlMs: 10 * second });
      const entries = await listed();
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject(again);
      expect(entries[0]!.lastSeenAt).toBeGreaterThan(first!.lastSeenAt);
    });

    it('lists every live instance, by name', async () => {
      const { store, info, listed } = await setUp();
      await store.registerInstance(info('b'), { ttlMs: 10 * second });
      await store.registerInstance(info('a'), { ttlMs: 10 * second });
      expect((await listed()).map((each) => each.instance.slice(-1))).toEqual(['a', 'b']);
    });

    it('an instance that misses its heartbeat for ttlMs is no longer listed; another one stays', async () => {
      const { store, info, listed } = await setUp();
      await store.registerInstance(info('short'), { ttlMs: 300 });
      await store.registerInstance(info('long'), { ttlMs: 10 * second });
      await sleep(600);
      expect((await listed()).map((each) => each.instance)).toEqual([info('long').instance]);
      // A heartbeat after it expired registers it again.
      await store.registerInstance(info('short'), { ttlMs: 10 * second });
      expect(await listed()).toHaveLength(2);
    });

    it('a removed instance is no longer listed; removing an unknown one is fine', async () => {
      const { store, info, listed } = await setUp();
      await store.registerInstance(info('worker-1'), { ttlMs: 10 * second });
      await store.registerInstance(info('worker-2'), { ttlMs: 10 * second });
      await store.removeInstance(info('worker-1').instance);
      await store.removeInstance(info('never-registered').instance);
      expect((await listed()).map((each) => each.instance)).toEqual([info('worker-2').instance]);
    });

    it('keeps the definitions string as registered (large ones too), and drops it when a heartbeat has none', async () => {
      const { store, info, listed } = await setUp();
      // What an instance of 10,000 jobs publishes while it tells its fleet every fingerprint, and more.
      const definitions = JSON.stringify({
        v: 1,
        d: 'digest-ü-✓',
        h: Object.fromEntries(Array.from({ length: 12_000 }, (_, index) => [`job-${index}`, 'AbCd-_9z'])),
      });
      await store.registerInstance(info('worker-1', { definitions }), { ttlMs: 10 * second });
      await store.registerInstance(info('worker-2'), { ttlMs: 10 * second });
      const [first, second_] = await listed();
      expect(first!.definitions).toBe(definitions);
      expect(second_!.definitions).toBeUndefined();
      await store.registerInstance(info('worker-1', { definitions: 'short' }), { ttlMs: 10 * second });
      expect((await listed())[0]!.definitions).toBe('short');
      await store.registerInstance(info('worker-1'), { ttlMs: 10 * second });
      expect((await listed())[0]!.definitions).toBeUndefined();
    });

    it('refuses an incomplete registration', async () => {
      const { store, info } = await setUp();
      await expect(store.registerInstance(info('x', { instance: '' }), { ttlMs: second })).rejects.toThrow(
        /instance/,
      );
      await expect(store.registerInstance(info('x'), { ttlMs: 0 })).rejects.toThrow(/ttlMs/);
      await expect(
        store.registerInstance(info('x', { definitions: 42 as unknown as string }), { ttlMs: second }),
      ).rejects.toThrow(/definitions/);
    });
  });
}
