import { getEventListeners } from 'node:events';
import {
  currentContext,
  DerivedSignal,
  neverAbortedSignal,
  ResilienceContext,
  ResilienceProperties,
  ResiliencePropertyKey,
} from 'resil';
import { describe, expect, it } from 'vitest';

const TENANT = new ResiliencePropertyKey<string>('tenant');
const ATTEMPTS = new ResiliencePropertyKey<number>('attempts');

describe('ResilienceContext', () => {
  it('defaults to a signal that never aborts, no operation key and empty properties', () => {
    const context = new ResilienceContext();
    expect(context.signal).toBe(neverAbortedSignal);
    expect(context.operationKey).toBeUndefined();
    expect(context.properties.has(TENANT)).toBe(false);
  });

  it('reads a signal source only when the signal is first read', () => {
    let reads = 0;
    const controller = new AbortController();
    const context = new ResilienceContext({
      signal: {
        get signal() {
          reads++;
          return controller.signal;
        },
      },
    });
    expect(reads).toBe(0);
    expect(context.signal).toBe(controller.signal);
    expect(context.signal).toBe(controller.signal);
    expect(reads).toBe(1);
  });

  it('derive() keeps the operation key, swaps the signal and gives a child property bag', () => {
    const parent = new ResilienceContext({ operationKey: 'op' });
    parent.properties.set(TENANT, 'acme');
    const controller = new AbortController();
    const child = parent.derive(controller.signal);
    expect(child.operationKey).toBe('op');
    expect(child.signal).toBe(controller.signal);
    expect(child.properties.get(TENANT)).toBe('acme');
    child.properties.set(TENANT, 'inner');
    child.properties.set(ATTEMPTS, 2);
    expect(child.properties.get(TENANT)).toBe('inner');
    expect(parent.properties.get(TENANT)).toBe('acme');
    expect(parent.properties.has(ATTEMPTS)).toBe(false);
    // Written to the parent after deriving: still visible through the child.
    const late = new ResiliencePropertyKey<boolean>('late');
    parent.properties.set(late, true);
    expect(child.properties.get(late)).toBe(true);
  });
});

describe('ResilienceProperties', () => {
  it('keys compare by identity and values keep their type', () => {
    const properties = new ResilienceProperties();
    const other = new ResiliencePropertyKey<string>('tenant');
    properties.set(TENANT, 'acme');
    expect(properties.get(TENANT)).toBe('acme');
    expect(properties.get(other)).toBeUndefined();
    expect(properties.has(other)).toBe(false);
    expect(TENANT.name).toBe('tenant');
  });

  it('stores undefined as a value that shadows the parent', () => {
    const parent = new ResilienceProperties();
    parent.set(TENANT, 'acme');
    const child = new ResilienceProperties(parent);
    child.set(TENANT, undefined as unknown as string);
    expect(child.has(TENANT)).toBe(true);
    expect(child.get(TENANT)).toBeUndefined();
  });
});

describe('DerivedSignal', () => {
  it('creates no AbortController and adds no listener until read', () => {
    const parent = new AbortController();
    const derived = new DerivedSignal({ signal: parent.signal });
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    expect(derived.aborted).toBe(false);
    derived.signal;
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
    derived.dispose();
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
  });

  it('follows the parent abort with the parent reason', () => {
    const parent = new AbortController();
    const derived = new DerivedSignal({ signal: parent.signal });
    const signal = derived.signal;
    parent.abort('caller');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('caller');
  });

  it('abort() before the signal is read is seen when it is read', () => {
    const derived = new DerivedSignal({ signal: neverAbortedSignal });
    derived.abort('mine');
    expect(derived.aborted).toBe(true);
    expect(derived.signal.aborted).toBe(true);
    expect(derived.signal.reason).toBe('mine');
  });

  it('the first abort wins: a parent abort before abort() keeps the parent reason', () => {
    const parent = new AbortController();
    const derived = new DerivedSignal({ signal: parent.signal });
    parent.abort('caller');
    derived.abort('timeout');
    expect(derived.signal.reason).toBe('caller');

    const parent2 = new AbortController();
    const read = new DerivedSignal({ signal: parent2.signal });
    read.signal;
    parent2.abort('caller');
    read.abort('timeout');
    expect(read.signal.reason).toBe('caller');
  });

  it('the first abort wins: abort() before the parent aborts keeps its own reason', () => {
    const parent = new AbortController();
    const derived = new DerivedSignal({ signal: parent.signal });
    derived.abort('timeout');
    parent.abort('caller');
    expect(derived.signal.reason).toBe('timeout');
  });

  it('is already aborted when the parent was aborted before the first read', () => {
    const parent = new AbortController();
    parent.abort('early');
    const derived = new DerivedSignal({ signal: parent.signal });
    expect(derived.aborted).toBe(true);
    expect(derived.signal.reason).toBe('early');
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
  });
});

describe('currentContext', () => {
  it('is undefined outside any execution', () => {
    expect(currentContext()).toBeUndefined();
  });
});
