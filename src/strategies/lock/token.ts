import { currentContext } from '../../pipeline/ambient.ts';
import type { ResilienceContext } from '../../pipeline/context.ts';
import { ResiliencePropertyKey } from '../../pipeline/properties.ts';

/**
 * The fencing token of the innermost lock an execution runs under, in `context.properties`.
 *
 * @example
 * const token = context.properties.get(LOCK_TOKEN);
 */
export const LOCK_TOKEN = /* @__PURE__ */ ResiliencePropertyKey.for<number>('resil.lockToken');

/**
 * The fencing token of the innermost lock the code runs under, or `undefined` outside a lock.
 * Without an argument it reads the ambient context, so it works deep inside the callback's call
 * stack. Pass the token with every write the lock protects, and let the resource refuse lower ones.
 *
 * @example
 * await pipeline.execute(async () => {
 *   await db.query('update report set body = $1 where fence_token <= $2', [body, getLockToken()]);
 * });
 */
export function getLockToken(context?: ResilienceContext): number | undefined {
  return (context ?? currentContext())?.properties.get(LOCK_TOKEN);
}
