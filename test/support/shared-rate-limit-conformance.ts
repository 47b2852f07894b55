/**
 * The cases every store that shares rate limits (`sharedRateLimiter()`) must pass, run against each
 * real store: one budget per key across limiters and store objects, atomic under concurrency,
 * refilled by the store's clock, `retryAfter` bounded by one interval. Time here is the store's own
 * clock (Redis `TIME`, PostgreSQL `now()`), so the refill cases wait in real time, briefly.
 */
import {
  InvalidOptionError,
  isRateLimiterRejectedError,
  type RateLimiterStrategyOptions,
  ResiliencePipelineBuilder,
  type SharedRateLimitStore,
} from 'resil';
import { describe, expect, it } from 'vitest';

export interface SharedRateLimitConformance {
  /** A store on the shared backend; called twice with one namespace, the two must share their limits. */
  store(namespace: string): SharedRateLimitStore | Promise<SharedRateLimitStore>;
  /** A key the store refuses, when it refuses some. */
  invalidKey?: string;
}

let namespaces = 0;
const run = Math.floor(Math.random() * 2 ** 32).toString(36);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function limited(store: SharedRateLimitStore, options: RateLimiterStrategyOptions) {
  return new ResiliencePipelineBuilder()
    .addRateLimiter({ ...options, store } as RateLimiterStrategyOptions)
    .build();
}

type Pipeline = ReturnType<typeof limited>;

/** Settles `count` executions at once: how many ran, and the rejections' `retryAfter`. */
async function together(pipelines: Pipeline[], count: number) {
  const outcomes = await Promise.all(
    Array.from({ length: count }, (_, index) => pipelines[index % pipelines.length]!.settle(() => 'ran')),
  );
  const retryAfters: Array<number | undefined> = [];
  let ran = 0;
  for (const outcome of outcomes) {
    if (outcome.ok) ran++;
    else if (isRateLimiterRejectedError(outcome.error)) retryAfters.push(outcome.error.retryAfter);
    else throw outcome.error;
  }
  return { ran, retryAfters };
}

export function describeSharedRateLimitConformance(
  name: string,
  conformance: SharedRateLimitConformance,
): void {
  describe(`${name}: shared rate limits`, () => {
    async function setUp() {
      const namespace = `rl-${run}-${++namespaces}:`;
      return { namespace, store: await conformance.store(namespace), key: `${namespace}limit` };
    }

    it('a token bucket grants tokenLimit at once, then rejects with retryAfter within one interval', async () => {
      const { store, key } = await setUp();
      const pipeline = limited(store, { tokenLimit: 5, tokensPerPeriod: 1, replenishmentPeriod: '1m', key });
      const { ran, retryAfters } = await together([pipeline], 8);
      expect(ran).toBe(5);
      expect(retryAfters).toHaveLength(3);
      for (const retryAfter of retryAfters) {
        expect(retryAfter).toBeGreaterThan(55_000);
        expect(retryAfter).toBeLessThanOrEqual(60_000);
      }
    });

    it('a sliding window grants permitLimit at once, then one every window / permitLimit', async () => {
      const { store, key } = await setUp();
      const pipeline = limited(store, { permitLimit: 4, window: '2m', key });
      const { ran, retryAfters } = await together([pipeline], 6);
      expect(ran).toBe(4);
      for (const retryAfter of retryAfters) {
        expect(retryAfter).toBeGreaterThan(25_000);
        expect(retryAfter).toBeLessThanOrEqual(30_000);
      }
    });

    it('is atomic: 200 concurrent calls from 4 pipelines on 2 store objects take exactly 50 permits', async () => {
      const { namespace, store, key } = await setUp();
      const other = await conformance.store(namespace);
      const options = { tokenLimit: 50, replenishmentPeriod: '1h', key } as const;
      const pipelines = [
        limited(store, options),
        limited(other, options),
        limited(store, options),
        limited(other, options),
      ];
      expect((await together(pipelines, 200)).ran).toBe(50);
    });

    it('keeps one budget per key', async () => {
      const { store, key } = await setUp();
      const first = limited(store, { tokenLimit: 2, replenishmentPeriod: '1h', key });
      const second = limited(store, { tokenLimit: 2, replenishmentPeriod: '1h', key: `${key}-other` });
      expect((await together([first], 3)).ran).toBe(2);
      expect((await together([second], 3)).ran).toBe(2);
    });

    it('refills by the store clock: one permit per interval after the burst', async () => {
      const { store, key } = await setUp();
      // A permit every 500 ms, bursts of 2.
      const pipeline = limited(store, { tokenLimit: 2, tokensPerPeriod: 2, replenishmentPeriod: 1_000, key });
      expect((await together([pipeline], 3)).ran).toBe(2);
      await sleep(550);
      expect((await together([pipeline], 2)).ran).toBe(1);
      await sleep(1_050);
      expect((await together([pipeline], 3)).ran).toBe(2);
    });

    it('answers retryAfter that is enough: a retry after it is granted', async () => {
      const { store, key } = await setUp();
      const pipeline = limited(store, { permitLimit: 1, window: 400, key });
      expect((await together([pipeline], 1)).ran).toBe(1);
      const [retryAfter] = (await together([pipeline], 1)).retryAfters;
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(400);
      await sleep(retryAfter! + 20);
      expect((await together([pipeline], 1)).ran).toBe(1);
    });

    it('refuses at build() a limit without key, with queueLimit, or with segmentsPerWindow', async () => {
      const { store, key } = await setUp();
      const build = (options: Record<string, unknown>) => () =>
        limited(store, { tokenLimit: 1, ...options } as unknown as RateLimiterStrategyOptions);
      expect(build({})).toThrow(InvalidOptionError);
      expect(build({})).toThrow(/rateLimiter\.key/);
      expect(build({ key, queueLimit: 2 })).toThrow(/rateLimiter\.queueLimit/);
      expect(() =>
        limited(store, { permitLimit: 1, segmentsPerWindow: 4, key } as RateLimiterStrategyOptions),
      ).toThrow(/rateLimiter\.segmentsPerWindow/);
    });

    if (conformance.invalidKey !== undefined) {
      const invalidKey = conformance.invalidKey;
      it('refuses at build() a key the store cannot keep', async () => {
        const { store } = await setUp();
        expect(() => limited(store, { tokenLimit: 1, key: invalidKey })).toThrow(
          expect.objectContaining({ code: 'INVALID_KEY' }),
        );
      });
    }
  });
}
