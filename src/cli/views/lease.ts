import type { LeaseInfo } from '../../strategies/lock/store.ts';

/** A live lease as `resil lock status --json` and the dashboard show it. */
export interface LeaseEntry {
  owner: string;
  /** The instance in an owner id of the form `<instance>/<uuid>`; null otherwise. */
  instance: string | null;
  token: number;
  /** ISO 8601, store clock. */
  expiresAt: string;
}

/** `<instance>/<uuid>` (or 32 hex digits where randomUUID is missing): the lock strategy's `ownerPrefix` form. */
const prefixedOwner = /^(.+)\/(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/;

export function leaseEntryOf(lease: LeaseInfo): LeaseEntry {
  return {
    owner: lease.owner,
    instance: prefixedOwner.exec(lease.owner)?.[1] ?? null,
    token: lease.token,
    expiresAt: lease.expiresAt.toISOString(),
  };
}
