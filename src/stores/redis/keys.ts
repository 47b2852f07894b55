/**
 * Where the store keys things. Every key starts with the prefix, and the keys of one lock (with
 * the run ledger of the occurrences claimed under it) or one fenced resource share a `{...}` hash
 * tag, so each script touches a single Redis Cluster slot:
 *
 * | key | type | holds |
 * |---|---|---|
 * | `<prefix>{<key>}:lease` | string, PX | owner of the live lease (a plain acquire's, or a claimed occurrence's unless `allow-all` or a `concurrency` above 1) |
 * | `<prefix>{<key>}:token` | string, no expiry | last fencing token issued for the key (acquires and claims, `allow-all` ones too) |
 * | `<prefix>{<key>}:current` | hash | `job`, `at`: the occurrence the live lease was granted to by a claim |
 * | `<prefix>{<key>}:occ:<job>` | hash | `scheduledAt` -> the occurrence's record (JSON): public fields, plus `owner`, `expiresAt` (its lease while `running`, judged against `TIME`), `cancelled`, `queuedUntil`; and `v`, a counter every run ledger write, pause and resume of the job increments (a write made on a read checks it) |
 * | `<prefix>{<key>}:idx:<job>` | sorted set | every recorded occurrence, scored by `scheduledAt`: history order, trimming |
 * | `<prefix>{<key>}:queue:<job>` | sorted set | queued (buffered) occurrences, scored by `scheduledAt`; their deadline is in the record |
 * | `<prefix>{<key>}:succeeded:<job>` | sorted set | occurrences whose record says `success`, scored by `scheduledAt` (`lastCompleted`) |
 * | `<prefix>{<key>}:running:<job>` | sorted set | occurrences granted to a claim with a `concurrency` above 1 and still `running`, scored by `scheduledAt`: such a claim reads them all |
 * | `<prefix>{<key>}:paused:<job>` | hash | `pausedAt`, `by`, `reason`: the job's pause, while it is paused (`pauseJob`); read by every claim |
 * | `<prefix>{instances}:registry` | hash | instance name -> `<lastSeenAt> <info JSON>`: what each `resil run` registered (`registerInstance`) |
 * | `<prefix>{instances}:registry-expiry` | sorted set | instance names, scored by when they expire (server clock, ms): `listInstances` reads the live ones |
 * | `<prefix>{<key>}:released` | pub/sub channel, not a key | a `release` publishes on it; waiters on the key subscribe (`onRelease`) |
 * | `<prefix>{<resource>}:fence` | string | highest fencing token written to the resource |
 * | `<prefix>{<resource>}:value:<name>` | string | a fenced value |
 *
 * `<key>` is the claim's lease key (a job's lock key, by default its name): jobs sharing it share
 * one slot and exclude each other, and their records stay apart by `<job>`.
 */
export class RedisKeys {
  constructor(readonly prefix: string) {}

  lease(key: string): string {
    return `${this.prefix}{${key}}:lease`;
  }

  token(key: string): string {
    return `${this.prefix}{${key}}:token`;
  }

  /** The pub/sub channel a release of `key` publishes on. */
  released(key: string): string {
    return `${this.prefix}{${key}}:released`;
  }

  current(key: string): string {
    return `${this.prefix}{${key}}:current`;
  }

  occurrences(key: string, job: string): string {
    return `${this.prefix}{${key}}:occ:${job}`;
  }

  index(key: string, job: string): string {
    return `${this.prefix}{${key}}:idx:${job}`;
  }

  queue(key: string, job: string): string {
    return `${this.prefix}{${key}}:queue:${job}`;
  }

  succeeded(key: string, job: string): string {
    return `${this.prefix}{${key}}:succeeded:${job}`;
  }

  running(key: string, job: string): string {
    return `${this.prefix}{${key}}:running:${job}`;
  }

  paused(key: string, job: string): string {
    return `${this.prefix}{${key}}:paused:${job}`;
  }

  /**
   * The keys of one job's run ledger, in the order its scripts use them. A batch sends only the
   * first (the lease key); the script builds the others from it in this order (`batchOf` in
   * scripts.ts).
   */
  ledger(key: string, job: string): string[] {
    return [
      this.lease(key),
      this.token(key),
      this.current(key),
      this.occurrences(key, job),
      this.index(key, job),
      this.queue(key, job),
      this.succeeded(key, job),
      this.paused(key, job),
      this.running(key, job),
    ];
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
