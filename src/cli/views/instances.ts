import type { RegisteredInstance } from '../../ledger/contract.ts';

/** One live instance as `resil instances --json` prints it. */
export interface InstanceEntry {
  instance: string;
  host: string;
  pid: number;
  version: string;
  /** ISO 8601, on the store's clock as the instance estimated it. */
  startedAt: string;
  jobs: number;
  /** The store's clock minus the instance's, ms: about -2000 for an instance whose clock is 2 s ahead. */
  clockOffsetMs: number;
  /** Its last heartbeat, ISO 8601, store clock. */
  lastSeenAt: string;
}

/** A registered instance as `resil instances --json` prints it. */
export function instanceEntryOf(instance: RegisteredInstance): InstanceEntry {
  return {
    instance: instance.instance,
    host: instance.host,
    pid: instance.pid,
    version: instance.version,
    startedAt: new Date(instance.startedAt).toISOString(),
    jobs: instance.jobs,
    clockOffsetMs: instance.clockOffsetMs,
    lastSeenAt: new Date(instance.lastSeenAt).toISOString(),
  };
}
