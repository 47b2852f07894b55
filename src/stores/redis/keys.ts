/** What follows `<prefix>{<key>}` in a lease key. */
export const leaseSuffix = ':lease';

/** What follows `<prefix>{<key>}` in the key that says someone waits on the lease. */
export const waitersSuffix = ':waiters';

/**
 * What follows `<prefix>{<key>}` in the key holding the token of the key's last acquisition that
 * took its lease, while grants that did not take it issued tokens since.
 */
export const heldSuffix = ':held';

/**
 * The keys of one job's run ledger after its lease key, in the order its scripts use them, as
 * what follows `<prefix>{<key>}`: a suffix ending in `:` is followed by the job's name. A ledger
 * batch sends only the lease key; the script builds the others from it (`batchOf` in scripts.ts).
 */
export const ledgerKeySuffixes = [
  ':token',
  ':current',
  ':occ:',
  ':idx:',
  ':queue:',
  ':succeeded:',
  ':paused:',
  ':running:',
  waitersSuffix,
  heldSuffix,
] as const;

type LedgerKeySuffix = (typeof ledgerKeySuffixes)[number];

/**
 * Where the store keys things. Every key starts with the prefix, and the keys of one lock (with
 * the run ledger of the occurrences claimed under it) or one fenced resource share a `{...}` hash
 * tag, so each script touches a single Redis Cluster slot:
 *
 * | key | type | holds |
 * |---|---|---|
 * | `<prefix>{<key>}:lease` | string, PX | owner of the live lease (a plain acquire's, or a claimed occurrence's unless `allow-all` or a `concurrency` above 1) |
 * | `<prefix>{<key>}:token` | string, no expiry | last fencing token issued for the key (acquires and claims, `allow-all` ones too) |
 * | `<prefix>{<key>}:current` | hash | written by earlier releases only (`job`, `at`: the occurrence their claims granted the lease to); read when `c` does not tell, cleared by a plain acquire and by the release of that occurrence |
 * | `<prefix>{<key>}:occ:<job>` | hash | `scheduledAt` -> the occurrence's record (JSON): public fields, plus `owner`, `expiresAt` (its lease while `running`, judged against `TIME`), `cancelled`, `queuedUntil`, `unindexed` (a running occurrence not in `running:<job>`: its finish leaves that index alone); `v`, a counter every run ledger write, pause and resume of the job increments (a write made on a read checks it); `c`, `<scheduledAt> <token>`: the occurrence of the job the key's lease was last granted to, current while no acquisition took the key's lease since (see `held`); `' <token>'` once released |
 * | `<prefix>{<key>}:idx:<job>` | sorted set | written by earlier releases only (every recorded occurrence); this one orders the records hash's fields instead |
 * | `<prefix>{<key>}:queue:<job>` | sorted set | queued (buffered) occurrences, scored by `scheduledAt`; their deadline is in the record |
 * | `<prefix>{<key>}:succeeded:<job>` | sorted set | written by earlier releases only (occurrences that succeeded); this one reads the records instead (`lastCompleted`) |
 * | `<prefix>{<key>}:running:<job>` | sorted set | occurrences granted to a claim with a `concurrency` above 1 and still `running`, scored by `scheduledAt`: such a claim reads them all |
 * | `<prefix>{<key>}:paused:<job>` | hash | `pausedAt`, `by`, `reason`: the job's pause, while it is paused (`pauseJob`); read by every claim |
 * | `<prefix>{<key>}:held` | string, no expiry | the token of the key's last acquisition that took its lease, set when a grant that does not take it (`allow-all`, a `concurrency` above 1, a forced manual run) issues the next token; deleted by the next acquisition that takes the lease. A job's current occurrence (`c`) is current while its token is this one, or the key's last token when this is not there |
 * | `<prefix>{<key>}:waiters` | string, PX | set (and renewed) while a process waits on the key's lease (`onRelease`): a release publishes only then |
 * | `<prefix>{instances}:registry` | hash | instance name -> `<lastSeenAt> <info JSON>`: what each `resil run` registered (`registerInstance`) |
 * | `<prefix>{instances}:registry-expiry` | sorted set | instance names, scored by when they expire (server clock, ms): `listInstances` reads the live ones |
 * | `<prefix>{<key>}:released` | pub/sub channel, not a key | a `release` publishes on it while `waiters` is there; waiters on the key subscribe (`onRelease`) |
 * | `<prefix>{<resource>}:fence` | string | highest fencing token written to the resource |
 * | `<prefix>{<resource>}:value:<name>` | string | a fenced value |
 *
 * `<key>` is the claim's lease key (a job's lock key, by default its name): jobs sharing it share
 * one slot and exclude each other, and their records stay apart by `<job>`.
 */
export class RedisKeys {
  constructor(readonly prefix: string) {}

  lease(key: string): string {
    return `${this.prefix}{${key}}${leaseSuffix}`;
  }

  token(key: string): string {
    return this.#ofKey(key, ':token');
  }

  /** Set while someone waits on `key`'s lease: a release publishes only then. */
  waiters(key: string): string {
    return this.#ofKey(key, waitersSuffix);
  }

  /** The pub/sub channel a release of `key` publishes on. */
  released(key: string): string {
    return `${this.prefix}{${key}}:released`;
  }

  current(key: string): string {
    return this.#ofKey(key, ':current');
  }

  occurrences(key: string, job: string): string {
    return this.#ofKey(key, ':occ:', job);
  }

  queue(key: string, job: string): string {
    return this.#ofKey(key, ':queue:', job);
  }

  running(key: string, job: string): string {
    return this.#ofKey(key, ':running:', job);
  }

  paused(key: string, job: string): string {
    return this.#ofKey(key, ':paused:', job);
  }

  /** The keys of one job's run ledger, in the order its scripts use them: the lease key first. */
  ledger(key: string, job: string): string[] {
    return [this.lease(key), ...ledgerKeySuffixes.map((suffix) => this.#ofKey(key, suffix, job))];
  }

  #ofKey(key: string, suffix: LedgerKeySuffix, job?: string): string {
    return suffix.endsWith(':') ? `${this.prefix}{${key}}${suffix}${job}` : `${this.prefix}{${key}}${suffix}`;
  }

  /** The KEYS of the instance registry's scripts: the registry hash, then its expiries. */
  instances(): string[] {
    return [`${this.prefix}{instances}:registry`, `${this.prefix}{instances}:registry-expiry`];
  }

  fence(resource: string): string {
    return `${this.prefix}{${resource}}:fence`;
  }

  value(resource: string, name: string): string {
    return `${this.prefix}{${resource}}:value:${name}`;
  }
}
