import { describe, expect, it } from 'vitest';
import type { ClaimRequest, OccurrenceLease } from '../../src/ledger/contract.ts';
import {
  decideClaim,
  decideFinish,
  decideRenew,
  isDone,
  type LedgerEntry,
  type LedgerView,
  leaseOf,
  recordDecides,
  resolvedTrim,
  trimmed,
} from '../../src/ledger/decide.ts';
import { checkConcurrency, ledgerMessages } from '../../src/ledger/defaults.ts';

// The decisions on plain data: a view in, an answer and the writes out. No store, no clock.

const now = 1_000_000;
const minute = 60_000;

function view(options: Partial<Omit<LedgerView, 'entries'>> & { entries?: LedgerEntry[] } = {}): LedgerView {
  const { entries = [], ...rest } = options;
  return {
    now,
    paused: false,
    ...rest,
    entries: new Map(entries.map((entry) => [entry.scheduledAt, entry])),
  };
}

function request(overrides: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    job: 'report',
    key: 'report',
    scheduledAt: now,
    owner: 'owner-b',
    instance: 'b',
    ttlMs: 30_000,
    overlap: 'skip',
    startingDeadlineMs: minute,
    ...overrides,
  };
}

const running = (at: number, extra: Partial<LedgerEntry> = {}): LedgerEntry => ({
  job: 'report',
  scheduledAt: at,
  outcome: 'running',
  token: 7,
  instance: 'a',
  startedAt: at,
  owner: 'owner-a',
  expiresAt: now + 10_000,
  ...extra,
});

const queued = (at: number, until = at + minute): LedgerEntry => ({
  job: 'report',
  scheduledAt: at,
  outcome: 'queued',
  instance: 'a',
  queuedUntil: until,
});

const heldBy = (owner: string) => ({ owner, expiresAt: now + 10_000 });

describe('decideClaim', () => {
  it('grants a due occurrence on a free key: takes the key, a new token, a running entry', () => {
    const { answer, changes } = decideClaim(view(), request());
    expect(answer).toEqual({ status: 'granted', scheduledAt: now, takeover: false });
    expect(changes.grant).toEqual({ scheduledAt: now, owner: 'owner-b', ttlMs: 30_000, holdsKey: true });
    expect(changes.put).toEqual([
      {
        job: 'report',
        scheduledAt: now,
        outcome: 'running',
        instance: 'b',
        startedAt: now,
        owner: 'owner-b',
        expiresAt: now + 30_000,
      },
    ]);
    expect(changes.trim).toBeUndefined();
  });

  it('makes an early fire wait for its instant and writes nothing', () => {
    const { answer, changes } = decideClaim(view(), request({ scheduledAt: now + 5 }));
    expect(answer).toEqual({ status: 'wait', retryAt: now + 5, runningElsewhere: false });
    expect(changes).toEqual({ put: [] });
  });

  it('answers already-done for a final occurrence, and waits on one running elsewhere', () => {
    const done: LedgerEntry = { job: 'report', scheduledAt: now, outcome: 'success', endedAt: now };
    expect(decideClaim(view({ entries: [done] }), request()).answer).toEqual({
      status: 'skipped',
      reason: 'already-done',
    });
    const { answer, changes } = decideClaim(
      view({ entries: [running(now)], lease: heldBy('owner-a'), current: now }),
      request(),
    );
    expect(answer).toEqual({ status: 'wait', retryAt: now + 10_000, runningElsewhere: true });
    expect(changes.put).toEqual([]);
  });

  it('takes over an abandoned occurrence with its takeover counted', () => {
    const abandoned = running(now - 20_000, { expiresAt: now - 1 });
    const { answer, changes } = decideClaim(
      view({ entries: [abandoned], current: now - 20_000 }),
      request({ scheduledAt: now - 20_000 }),
    );
    expect(answer).toEqual({ status: 'granted', scheduledAt: now - 20_000, takeover: true });
    expect(changes.put[0]).toMatchObject({ outcome: 'running', owner: 'owner-b', takeovers: 1 });
  });

  it('fails an abandoned occurrence past its window, and a cancelled one', () => {
    const late = running(now - 5 * minute, { expiresAt: now - 2 * minute });
    const { answer, changes } = decideClaim(
      view({ entries: [late] }),
      request({ scheduledAt: now - 5 * minute }),
    );
    expect(answer).toEqual({ status: 'skipped', reason: 'already-done' });
    expect(changes.put).toEqual([
      {
        job: 'report',
        scheduledAt: now - 5 * minute,
        outcome: 'failure',
        token: 7,
        instance: 'a',
        startedAt: now - 5 * minute,
        endedAt: now,
        error: ledgerMessages.abandoned,
      },
    ]);
    const cancelled = running(now - 1_000, { expiresAt: now - 1, cancelled: true });
    const again = decideClaim(view({ entries: [cancelled] }), request({ scheduledAt: now - 1_000 }));
    expect(again.changes.put[0]).toMatchObject({ outcome: 'failure', error: ledgerMessages.cancelled });
  });

  it('skips a fire as paused, but lets a paused job run a manual run', () => {
    const { answer, changes } = decideClaim(view({ paused: true }), request());
    expect(answer).toEqual({ status: 'skipped', reason: 'paused' });
    expect(changes.put[0]).toMatchObject({ outcome: 'skipped', reason: 'paused', endedAt: now });
    expect(changes.trim).toEqual(resolvedTrim({}));
    expect(decideClaim(view({ paused: true }), request({ manual: true })).answer.status).toBe('granted');
  });

  it('refuses a manual run under skip while the key is held, and records nothing', () => {
    const decision = decideClaim(view({ lease: heldBy('owner-a') }), request({ manual: true }));
    expect(decision.answer).toEqual({ status: 'skipped', reason: 'overlap' });
    expect(decision.changes.put).toEqual([]);
  });

  it.each([
    ['buffer-one', 'queued', undefined],
    ['buffer-all', 'queued', undefined],
    ['cancel-other', 'queued', true],
  ] as const)('a manual run meets %s as a fire does: %s', (overlap, state, cancelled) => {
    const earlier = running(now - minute);
    const decision = decideClaim(
      view({ entries: [earlier], lease: heldBy('owner-a'), current: now - minute }),
      request({ overlap, manual: true, trigger: 'manual', actor: 'ops@host', triggerReason: 'rerun' }),
    );
    expect(decision.answer).toEqual({ status: 'wait', retryAt: now + 10_000, runningElsewhere: false });
    expect(decision.changes.put.find((entry) => entry.scheduledAt === now)).toMatchObject({
      outcome: state,
      trigger: 'manual',
      actor: 'ops@host',
      triggerReason: 'rerun',
    });
    expect(decision.changes.put.find((entry) => entry.scheduledAt === now - minute)?.cancelled).toBe(
      cancelled,
    );
  });

  it('a forced manual run is granted beside a held key, under a lease of its own, with its trigger', () => {
    const earlier = running(now - minute);
    const decision = decideClaim(
      view({ entries: [earlier], lease: heldBy('owner-a'), current: now - minute }),
      request({ manual: true, force: true, trigger: 'manual', actor: 'ops@host' }),
    );
    expect(decision.answer).toEqual({ status: 'granted', scheduledAt: now, takeover: false });
    expect(decision.changes.grant).toEqual({
      scheduledAt: now,
      owner: 'owner-b',
      ttlMs: 30_000,
      holdsKey: false,
    });
    expect(decision.changes.put).toEqual([
      expect.objectContaining({ scheduledAt: now, outcome: 'running', trigger: 'manual', actor: 'ops@host' }),
    ]);
    // Its lease is its own: renewing it does not touch the key's, which another holds.
    const lease = leaseOf(request({ manual: true, force: true }), now, 9);
    expect(lease.ownLease).toBe(true);
    const renewed = decideRenew(
      view({ entries: [decision.changes.put[0]!], lease: heldBy('owner-a') }),
      lease,
      30_000,
    );
    expect(renewed.answer).toBe(true);
    expect(renewed.changes.renewKey).toBeUndefined();
  });

  it('a manual run at the instant of a finished one runs afresh, with its own trigger', () => {
    const done: LedgerEntry = { job: 'report', scheduledAt: now, outcome: 'success', token: 3, endedAt: now };
    const decision = decideClaim(view({ entries: [done] }), request({ manual: true, trigger: 'manual' }));
    expect(decision.answer.status).toBe('granted');
    expect(decision.changes.put[0]).toMatchObject({ outcome: 'running', trigger: 'manual' });
    expect(decideClaim(view({ entries: [done] }), request()).answer).toEqual({
      status: 'skipped',
      reason: 'already-done',
    });
  });

  it.each([
    [{ outcome: 'skipped', reason: 'missed' }, 'granted'],
    [{ outcome: 'skipped', reason: 'paused' }, 'granted'],
    [{ outcome: 'skipped', reason: 'overlap' }, 'skipped'],
    [{ outcome: 'skipped', reason: 'overlap', trigger: 'backfill' }, 'granted'],
    [{ outcome: 'success' }, 'skipped'],
    [{ outcome: 'failure' }, 'skipped'],
  ] as const)('a backfill of an occurrence recorded %o: %s', (recorded, status) => {
    const past = now - 3 * 60 * minute;
    const entry = { job: 'report', scheduledAt: past, endedAt: past, ...recorded } as LedgerEntry;
    const backfill = request({ scheduledAt: past, trigger: 'backfill', startingDeadlineMs: 4 * 60 * minute });
    const decision = decideClaim(view({ entries: [entry] }), backfill);
    expect(decision.answer.status).toBe(status);
    expect(isDone(entry)).toBe(status === 'skipped');
    if (status === 'granted') {
      expect(decision.changes.put[0]).toEqual(expect.not.objectContaining({ reason: expect.anything() }));
      expect(decision.changes.put[0]).toMatchObject({ outcome: 'running', trigger: 'backfill' });
    } else {
      expect(decision.answer).toEqual({ status: 'skipped', reason: 'already-done' });
    }
  });

  it('a fire records no trigger (schedule is the default); a takeover keeps the trigger of the run it takes over', () => {
    expect(decideClaim(view(), request({ trigger: 'schedule' })).changes.put[0]).not.toHaveProperty(
      'trigger',
    );
    const abandoned = running(now - minute, {
      expiresAt: now - 1,
      trigger: 'backfill',
      actor: 'ops@host',
      triggerReason: 'outage',
    });
    const decision = decideClaim(view({ entries: [abandoned] }), request({ scheduledAt: now - minute }));
    expect(decision.answer).toEqual({ status: 'granted', scheduledAt: now - minute, takeover: true });
    expect(decision.changes.put[0]).toMatchObject({
      trigger: 'backfill',
      actor: 'ops@host',
      triggerReason: 'outage',
      takeovers: 1,
    });
  });

  it.each([
    ['skip', { status: 'skipped', reason: 'overlap' }, 'skipped'],
    ['buffer-one', { status: 'wait', retryAt: now + 10_000, runningElsewhere: false }, 'queued'],
    ['buffer-all', { status: 'wait', retryAt: now + 10_000, runningElsewhere: false }, 'queued'],
    ['cancel-other', { status: 'wait', retryAt: now + 10_000, runningElsewhere: false }, 'queued'],
  ] as const)('while another occurrence runs, %s answers as its policy says', (overlap, answer, state) => {
    const earlier = running(now - minute);
    const decision = decideClaim(
      view({ entries: [earlier], lease: heldBy('owner-a'), current: now - minute }),
      request({ overlap }),
    );
    expect(decision.answer).toEqual(answer);
    expect(decision.changes.put.find((entry) => entry.scheduledAt === now)?.outcome).toBe(state);
    const cancelled = decision.changes.put.find((entry) => entry.scheduledAt === now - minute)?.cancelled;
    expect(cancelled).toBe(overlap === 'cancel-other' ? true : undefined);
  });

  it('buffer-one keeps one waiting: a second fire is skipped as overlap', () => {
    const decision = decideClaim(
      view({ entries: [running(now - 2 * minute), queued(now - minute)], lease: heldBy('owner-a') }),
      request({ overlap: 'buffer-one' }),
    );
    expect(decision.answer).toEqual({ status: 'skipped', reason: 'overlap' });
  });

  it('allow-all grants beside a held key, without taking it', () => {
    const { answer, changes } = decideClaim(
      view({ lease: heldBy('owner-a'), entries: [running(now - minute)] }),
      request({ overlap: 'allow-all' }),
    );
    expect(answer).toEqual({ status: 'granted', scheduledAt: now, takeover: false });
    expect(changes.grant?.holdsKey).toBe(false);
  });

  it('hands a free key to the oldest queued occurrence and queues the requested one', () => {
    const { answer, changes } = decideClaim(
      view({ entries: [queued(now - 1_000)] }),
      request({ overlap: 'buffer-all' }),
    );
    expect(answer).toEqual({ status: 'granted', scheduledAt: now - 1_000, takeover: false });
    expect(Object.fromEntries(changes.put.map((entry) => [entry.scheduledAt, entry.outcome]))).toEqual({
      [now - 1_000]: 'running',
      [now]: 'queued',
    });
  });

  it('skips queued occurrences past their deadline as missed on the way to the oldest left', () => {
    const { answer, changes } = decideClaim(
      view({ entries: [queued(now - 3 * minute, now - 1), queued(now - 1_000)] }),
      request({ overlap: 'buffer-all' }),
    );
    expect(answer).toMatchObject({ status: 'granted', scheduledAt: now - 1_000 });
    expect(changes.put.find((entry) => entry.scheduledAt === now - 3 * minute)).toEqual({
      job: 'report',
      scheduledAt: now - 3 * minute,
      outcome: 'skipped',
      reason: 'missed',
      instance: 'a',
      endedAt: now,
    });
  });

  it('skips a fire past its starting deadline as missed', () => {
    const { answer } = decideClaim(view(), request({ scheduledAt: now - 2 * minute }));
    expect(answer).toEqual({ status: 'skipped', reason: 'missed' });
  });
});

describe('decideClaim with concurrency', () => {
  const bounded = (overrides: Partial<ClaimRequest> = {}) => request({ concurrency: 2, ...overrides });
  /** Two occurrences running under their own live leases: the limit of 2 reached. */
  const two = [
    running(now - 20_000, { owner: 'owner-1' }),
    running(now - 10_000, { owner: 'owner-2', expiresAt: now + 5_000 }),
  ];

  it('grants below the limit under its own lease, beside a running one and a held key', () => {
    const { answer, changes } = decideClaim(
      view({ entries: [two[0]!], lease: heldBy('plain-lock') }),
      bounded(),
    );
    expect(answer).toEqual({ status: 'granted', scheduledAt: now, takeover: false });
    expect(changes.grant).toEqual({ scheduledAt: now, owner: 'owner-b', ttlMs: 30_000, holdsKey: false });
  });

  it('skip: at the limit, a fire is recorded as skipped (overlap)', () => {
    const { answer, changes } = decideClaim(view({ entries: two }), bounded());
    expect(answer).toEqual({ status: 'skipped', reason: 'overlap' });
    expect(changes.put).toMatchObject([{ scheduledAt: now, outcome: 'skipped', reason: 'overlap' }]);
  });

  it('buffer-one / buffer-all: at the limit, a fire is queued until the first lease expires', () => {
    for (const overlap of ['buffer-one', 'buffer-all'] as const) {
      const { answer, changes } = decideClaim(view({ entries: two }), bounded({ overlap }));
      expect(answer).toEqual({ status: 'wait', retryAt: now + 5_000, runningElsewhere: false });
      expect(changes.put).toEqual([{ ...queued(now), instance: 'b' }]);
    }
    // buffer-one keeps one waiting: a second fire is skipped; buffer-all queues it too.
    const waiting = [...two, queued(now - 1_000)];
    expect(decideClaim(view({ entries: waiting }), bounded({ overlap: 'buffer-one' })).answer).toEqual({
      status: 'skipped',
      reason: 'overlap',
    });
    expect(decideClaim(view({ entries: waiting }), bounded({ overlap: 'buffer-all' })).answer).toMatchObject({
      status: 'wait',
    });
  });

  it('cancel-other: at the limit, the oldest running one is cancelled and the fire queued, once', () => {
    const { answer, changes } = decideClaim(view({ entries: two }), bounded({ overlap: 'cancel-other' }));
    expect(answer).toEqual({ status: 'wait', retryAt: now + 5_000, runningElsewhere: false });
    expect(changes.put).toEqual([
      { ...queued(now), instance: 'b' },
      { ...two[0], cancelled: true },
    ]);
    // Asked again (another instance's fire of it), the queued one cancels nothing more.
    const after = [{ ...two[0]!, cancelled: true }, two[1]!, { ...queued(now), instance: 'b' }];
    const again = decideClaim(view({ entries: after }), bounded({ overlap: 'cancel-other' }));
    expect(again.answer).toMatchObject({ status: 'wait' });
    expect(again.changes.put).toEqual([]);
  });

  it('frees a slot when a running one finishes: a queued one is granted, oldest first', () => {
    const entries = [two[1]!, queued(now - 2_000), queued(now - 1_000)];
    const { answer } = decideClaim(view({ entries }), bounded({ scheduledAt: now - 1_000 }));
    expect(answer).toEqual({ status: 'granted', scheduledAt: now - 2_000, takeover: false });
  });

  it('takes over an abandoned one first, under the limit, and counts only live leases', () => {
    const abandoned = running(now - 30_000, { owner: 'gone', expiresAt: now - 1_000 });
    const { answer, changes } = decideClaim(view({ entries: [abandoned, two[1]!] }), bounded());
    expect(answer).toEqual({ status: 'granted', scheduledAt: now - 30_000, takeover: true });
    expect(changes.grant).toMatchObject({ scheduledAt: now - 30_000, holdsKey: false });
    // The requested one waits for the next slot (the limit is now reached): skip says skipped.
    expect(changes.put).toContainEqual(expect.objectContaining({ scheduledAt: now, outcome: 'skipped' }));
    // With a slot still left (limit 3), it is queued for that slot, whatever the policy.
    const roomy = decideClaim(view({ entries: [abandoned, two[1]!] }), bounded({ concurrency: 3 }));
    expect(roomy.changes.put).toContainEqual({ ...queued(now), instance: 'b' });
  });

  it('gives up an abandoned one past its window, and a cancelled one, freeing their slots', () => {
    const old = running(now - 5 * minute, { expiresAt: now - 2 * minute });
    const cancelled = running(now - 4 * minute, { expiresAt: now - 2 * minute, cancelled: true });
    const { answer, changes } = decideClaim(view({ entries: [old, cancelled, two[1]!] }), bounded());
    expect(answer).toEqual({ status: 'granted', scheduledAt: now, takeover: false });
    expect(changes.put).toContainEqual(
      expect.objectContaining({
        scheduledAt: now - 5 * minute,
        outcome: 'failure',
        error: ledgerMessages.abandoned,
      }),
    );
    expect(changes.put).toContainEqual(
      expect.objectContaining({
        scheduledAt: now - 4 * minute,
        outcome: 'failure',
        error: ledgerMessages.cancelled,
      }),
    );
  });

  it('frees the slot of a cancelled one whose holder gave it back, leaving its end for the holder to report', () => {
    const cancelled = running(now - 20_000, { owner: 'owner-1', expiresAt: now, cancelled: true });
    const { answer, changes } = decideClaim(view({ entries: [cancelled, two[1]!] }), bounded());
    expect(answer).toEqual({ status: 'granted', scheduledAt: now, takeover: false });
    expect(changes.put.map((entry) => entry.scheduledAt)).toEqual([now]);
  });

  it('grants a manual run while fewer than the limit run; at the limit its policy decides, and force runs it', () => {
    const manual = bounded({ manual: true });
    expect(decideClaim(view({ entries: [two[0]!] }), manual).answer).toMatchObject({ status: 'granted' });
    const refused = decideClaim(view({ entries: two }), manual);
    expect(refused.answer).toEqual({ status: 'skipped', reason: 'overlap' });
    // Under skip nothing is recorded: nothing was due.
    expect(refused.changes.put).toEqual([]);
    const buffered = decideClaim(view({ entries: two }), bounded({ manual: true, overlap: 'buffer-all' }));
    expect(buffered.answer).toEqual({ status: 'wait', retryAt: now + 5_000, runningElsewhere: false });
    expect(buffered.changes.put).toMatchObject([{ scheduledAt: now, outcome: 'queued' }]);
    const forced = decideClaim(view({ entries: two }), bounded({ manual: true, force: true }));
    expect(forced.answer).toMatchObject({ status: 'granted', scheduledAt: now });
    expect(forced.changes.grant?.holdsKey).toBe(false);
  });
});

describe('checkConcurrency', () => {
  it('takes a whole number >= 1, 1 when absent, and only 1 with allow-all', () => {
    expect(checkConcurrency({ overlap: 'skip' })).toBe(1);
    expect(checkConcurrency({ overlap: 'buffer-all', concurrency: 4 })).toBe(4);
    expect(checkConcurrency({ overlap: 'allow-all', concurrency: 1 })).toBe(1);
    for (const concurrency of [0, 1.5, 'x', -1, Number.NaN]) {
      expect(() => checkConcurrency({ overlap: 'skip', concurrency }, 'request.concurrency')).toThrow(
        expect.objectContaining({
          code: 'INVALID_OPTION',
          option: 'request.concurrency',
          value: concurrency,
        }),
      );
    }
    expect(() => checkConcurrency({ overlap: 'allow-all', concurrency: 2 })).toThrow(/allow-all/);
  });
});

describe('decideRenew', () => {
  const lease: OccurrenceLease = {
    job: 'report',
    key: 'report',
    scheduledAt: now,
    owner: 'owner-a',
    token: 7,
    overlap: 'skip',
  };

  it('pushes the entry and the key to now + ttl while both are the holder`s', () => {
    const { answer, changes } = decideRenew(
      view({ entries: [running(now)], lease: heldBy('owner-a') }),
      lease,
      30_000,
    );
    expect(answer).toBe(true);
    expect(changes.renewKey).toEqual({ owner: 'owner-a', ttlMs: 30_000 });
    expect(changes.put[0]?.expiresAt).toBe(now + 30_000);
  });

  it('refuses a holder whose key went to another, and frees a cancelled occurrence', () => {
    expect(decideRenew(view({ entries: [running(now)], lease: heldBy('x') }), lease, 1).answer).toBe(false);
    const { answer, changes } = decideRenew(
      view({ entries: [running(now, { cancelled: true })], lease: heldBy('owner-a') }),
      lease,
      1,
    );
    expect(answer).toBe(false);
    expect(changes.releaseKey).toEqual({ owner: 'owner-a', scheduledAt: now });
    expect(changes.put[0]?.expiresAt).toBe(now);
  });
});

describe('renewing and finishing an occurrence of its own lease (concurrency above 1)', () => {
  const lease: OccurrenceLease = {
    job: 'report',
    key: 'report',
    scheduledAt: now,
    owner: 'owner-a',
    token: 7,
    overlap: 'skip',
    concurrency: 2,
  };

  it('leaves the key`s lease alone', () => {
    const renewed = decideRenew(view({ entries: [running(now)], lease: heldBy('other') }), lease, 30_000);
    expect(renewed.answer).toBe(true);
    expect(renewed.changes.renewKey).toBeUndefined();
    const finished = decideFinish(
      view({ entries: [running(now)], lease: heldBy('owner-a') }),
      lease,
      { outcome: 'success' },
      resolvedTrim({}),
    );
    expect(finished.changes.releaseKey).toBeUndefined();
    expect(finished.changes.put).toMatchObject([{ outcome: 'success' }]);
  });
});

describe('decideFinish', () => {
  const lease: OccurrenceLease = {
    job: 'report',
    key: 'report',
    scheduledAt: now - 5_000,
    owner: 'owner-a',
    token: 7,
    overlap: 'skip',
  };
  const trim = resolvedTrim({});

  it('records the outcome without the lease fields, releases the key and trims', () => {
    const { answer, changes } = decideFinish(
      view({ entries: [running(now - 5_000)], lease: heldBy('owner-a') }),
      lease,
      { outcome: 'failure', error: 'boom' },
      trim,
    );
    expect(answer).toEqual({ stale: false });
    expect(changes.releaseKey).toEqual({ owner: 'owner-a', scheduledAt: now - 5_000 });
    expect(changes.put).toEqual([
      {
        job: 'report',
        scheduledAt: now - 5_000,
        outcome: 'failure',
        token: 7,
        instance: 'a',
        startedAt: now - 5_000,
        endedAt: now,
        error: 'boom',
      },
    ]);
    expect(changes.trim).toBe(trim);
  });

  it('refuses a stale token, writing only the release', () => {
    const successor = running(now - 5_000, { token: 9, owner: 'owner-b' });
    const { answer, changes } = decideFinish(
      view({ entries: [successor], lease: heldBy('owner-b') }),
      lease,
      { outcome: 'success' },
      trim,
    );
    expect(answer).toEqual({ stale: true, latestToken: 9 });
    expect(changes).toEqual({ put: [] });
  });
});

describe('trimmed', () => {
  const records = (ats: number[], outcome: 'success' | 'running' = 'success') =>
    ats.map((scheduledAt) => ({ scheduledAt, outcome }));

  it('drops records past the retention, never a running one', () => {
    const trim = { retentionMs: 1_000, recordLimit: 100, keepWithinMs: 0 };
    expect(trimmed([...records([now - 2_000]), ...records([now - 3_000], 'running')], now, trim)).toEqual([
      now - 2_000,
    ]);
  });

  it('drops the oldest past the limit, but none inside keepWithin, and counts a running one', () => {
    const trim = { retentionMs: 10 * minute, recordLimit: 2, keepWithinMs: 1_500 };
    const all = [...records([now - 4_000], 'running'), ...records([now - 3_000, now - 2_000, now - 1_000])];
    // Two too many: the running one and now - 3000 are the oldest; the running one stays.
    expect(trimmed(all, now, trim)).toEqual([now - 3_000]);
    expect(trimmed(records([now - 1_200, now - 1_100, now - 1_000]), now, trim)).toEqual([]);
  });
});

describe('recordDecides', () => {
  // Every record a claim can find, and every rest of the view around it.
  const records: Array<LedgerEntry | undefined> = [
    undefined,
    running(now),
    running(now, { expiresAt: now - 1 }),
    running(now, { expiresAt: now - minute - 1 }),
    running(now, { cancelled: true, expiresAt: now - 1 }),
    queued(now),
    { job: 'report', scheduledAt: now, outcome: 'success', instance: 'a', token: 3 },
    { job: 'report', scheduledAt: now, outcome: 'failure', instance: 'a', token: 3 },
    { job: 'report', scheduledAt: now, outcome: 'skipped', reason: 'missed', instance: 'a' },
    { job: 'report', scheduledAt: now, outcome: 'skipped', reason: 'overlap', instance: 'a' },
  ];
  const rests: Array<Partial<Omit<LedgerView, 'entries'>> & { entries?: LedgerEntry[] }> = [
    {},
    { paused: true },
    { lease: heldBy('owner-a'), current: now - minute, entries: [running(now - minute)] },
    { lease: heldBy('someone'), entries: [queued(now - 1_000)] },
  ];
  const requests = [
    request(),
    request({ scheduledAt: now + 1_000 }),
    request({ overlap: 'buffer-all' }),
    request({ concurrency: 2 }),
    request({ manual: true, trigger: 'manual' }),
    request({ trigger: 'backfill' }),
  ];

  it('says yes only where the record alone decides: the same answer whatever else the view holds, and no write', () => {
    let decided = 0;
    for (const claim of requests) {
      for (const record of records) {
        const entry = record === undefined ? undefined : { ...record, scheduledAt: claim.scheduledAt };
        if (!recordDecides(claim, entry, now)) continue;
        decided++;
        const alone = decideClaim(view({ entries: entry === undefined ? [] : [entry] }), claim);
        expect(alone.changes.put).toEqual([]);
        expect(alone.changes.grant).toBeUndefined();
        for (const rest of rests) {
          const whole = view({
            ...rest,
            entries: [...(rest.entries ?? []), ...(entry === undefined ? [] : [entry])],
          });
          const decision = decideClaim(whole, claim);
          expect(decision.answer).toEqual(alone.answer);
          expect(decision.changes.put).toEqual([]);
        }
      }
    }
    // The fire not due yet, whatever its record; the three due fires: the four final records and
    // the running one whose lease lasts.
    expect(decided).toBe(records.length + 3 * 5);
  });

  it('says no for a manual run, a backfill, a missing or queued record, and a lease run out', () => {
    expect(recordDecides(request({ manual: true }), records[6], now)).toBe(false);
    expect(recordDecides(request({ trigger: 'backfill' }), records[6], now)).toBe(false);
    expect(recordDecides(request(), undefined, now)).toBe(false);
    expect(recordDecides(request(), queued(now), now)).toBe(false);
    expect(recordDecides(request(), running(now, { expiresAt: now }), now)).toBe(false);
    expect(recordDecides(request(), running(now, { expiresAt: now + 1 }), now)).toBe(true);
  });
});
