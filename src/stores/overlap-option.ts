import { type OverlapPolicy, overlapPolicies } from '../ledger/contract.ts';
import { InvalidOptionError } from '../pipeline/errors.ts';

/** `value` when it is an overlap policy, else `InvalidOptionError` naming `option` and the policies. */
export function checkOverlap(option: string, value: unknown): OverlapPolicy {
  if (!overlapPolicies.includes(value as OverlapPolicy)) {
    throw new InvalidOptionError(
      option,
      value,
      `one of ${overlapPolicies.map((policy) => `'${policy}'`).join(', ')}`,
    );
  }
  return value as OverlapPolicy;
}
