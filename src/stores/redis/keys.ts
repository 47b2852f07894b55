/**
 * Where the store keeps things. Every key starts with the prefix, and the keys of one lock, one
 * job or one fenced resource share a `{...}` hash tag, so each script touches a single Redis
 * Cluster slot:
 *
 * | key | type | holds |
 * |---|---|---|
 * | `<prefix>{<key>}:lease` | string, PX | owner of the live lease |
 * | `<prefix>{<key>}:token` | string, no expiry | last fencing token issued for the key |
 * | `<prefix>{<job>}:ledger` | hash | `token` (highest recorded), `retention` (ms) |
 * | `<prefix>{<job>}:runs` | list | run records (JSON), newest first |
 * | `<prefix>{<job>}:done` | sorted set | completed occurrences, scored by `scheduledAt` |
 * | `<prefix>{<resource>}:fence` | string | highest fencing token written to the resource |
 * | `<prefix>{<resource>}:value:<name>` | string | a fenced value |
 */
export class RedisKeys {
  constructor(readonly prefix: string) {}

  lease(key: string): string {
    return `${this.prefix}{${key}}:lease`;
  }

  token(key: string): string {
    return `${this.prefix}{${key}}:token`;
  }

  ledger(job: string): string {
    return `${this.prefix}{${job}}:ledger`;
  }

  runs(job: string): string {
    return `${this.prefix}{${job}}:runs`;
  }

  done(job: string): string {
    return `${this.prefix}{${job}}:done`;
  }

  fence(resource: string): string {
    return `${this.prefix}{${resource}}:fence`;
  }

  value(resource: string, name: string): string {
    return `${this.prefix}{${resource}}:value:${name}`;
  }
}
