/**
 * The fleet-wide circuit breaker with real processes: two Node processes (fixtures/
 * shared-circuit-member.ts) share one breaker through Redis, PostgreSQL or MySQL (MariaDB). Process A's failures
 * open it; B rejects within 1 s without calling its downstream; after the break, of many concurrent
 * calls from both, exactly one reaches a downstream; a Redis stopped mid-way leaves both serving on
 * their own breakers, and they share again when it is back.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mysqlUrlForTests, uniqueTableName } from '../support/mysql.ts';
import { databaseUrlForTests, uniqueSchemaName } from '../support/postgres.ts';
import { waitUntil } from '../support/processes.ts';
import {
  privateRedisUnavailableReason,
  type RedisServer,
  redisUrlForTests,
  startRedisServer,
  uniquePrefix,
} from '../support/redis.ts';

const fixture = fileURLToPath(new URL('./fixtures/shared-circuit-member.ts', import.meta.url));
const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));

/** A fleet member: JSON commands in, JSON lines out. Only its own pid is ever signalled. */
class Member {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly lines: Array<Record<string, unknown>> = [];
  #output = '';
  #nextId = 1;
  readonly #waiters = new Set<() => void>();

  constructor(env: Record<string, string>) {
    this.#child = spawn(process.execPath, ['--import', 'tsx', fixture], {
      cwd: repositoryRoot,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.#child.stdout.on('data', (chunk: Buffer) => {
      this.#output += chunk.toString('utf8');
      let newline = this.#output.indexOf('\n');
      while (newline >= 0) {
        const line = this.#output.slice(0, newline);
        this.#output = this.#output.slice(newline + 1);
        try {
          this.lines.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          this.lines.push({ text: line });
        }
        newline = this.#output.indexOf('\n');
      }
      for (const waiter of this.#waiters) waiter();
    });
    this.#child.stderr.on('data', (chunk: Buffer) => {
      this.lines.push({ stderr: chunk.toString('utf8') });
    });
  }

  /** Resolves with the first line (already printed or to come) that `matches`; rejects after `timeoutMs`. */
  next(matches: (line: Record<string, unknown>) => boolean, what: string, timeoutMs = 15_000) {
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const check = () => {
        const line = this.lines.find(matches);
        if (line === undefined) return;
        this.#waiters.delete(check);
        clearTimeout(timer);
        resolve(line);
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`no ${what} within ${timeoutMs} ms; lines: ${JSON.stringify(this.lines)}`));
      }, timeoutMs);
      this.#waiters.add(check);
      check();
    });
  }

  event(name: string, timeoutMs?: number) {
    return this.next((line) => line.event === name, `event ${name}`, timeoutMs);
  }

  count(name: string): number {
    return this.lines.filter((line) => line.event === name).length;
  }

  send(command: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.#nextId++;
    this.#child.stdin.write(`${JSON.stringify({ id, ...command })}\n`);
    return this.next((line) => line.id === id, `answer to ${JSON.stringify(command)}`);
  }

  async state(): Promise<string> {
    return (await this.send({ op: 'state' })).state as string;
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.#child.stdin.end();
    const kill = setTimeout(() => this.#child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(kill);
  }
}

const members: Member[] = [];
function member(env: Record<string, string>): Member {
  const started = new Member(env);
  members.push(started);
  return started;
}

afterEach(async () => {
  await Promise.all(members.splice(0).map((started) => started.stop()));
});

const codes = (reply: Record<string, unknown>) => reply.codes as string[];

/**
 * The scenario every store runs: A opens the circuit, B learns it within 1 s, and after the break
 * one call in the fleet probes and closes it for both.
 */
async function opensAndProbesOnce(env: () => Record<string, string>) {
  const breakMs = 2_000;
  const a = member({ ...env(), BREAK_MS: String(breakMs) });
  const b = member({ ...env(), BREAK_MS: String(breakMs) });
  await Promise.all([a.event('ready'), b.event('ready')]);
  // Both have synced once (they print nothing then): give them a sync interval.
  await new Promise((resolve) => setTimeout(resolve, 500));

  const failed = codes(await a.send({ op: 'fail', count: 6 }));
  const openedAt = performance.now();
  expect(failed.slice(0, 5)).toEqual(['downstream', 'downstream', 'downstream', 'downstream', 'downstream']);
  await a.event('OnCircuitOpened');

  await waitUntil('B to see the circuit open', async () => (await b.state()) === 'open', {
    timeoutMs: 3_000,
    intervalMs: 20,
  });
  const learnedAfter = performance.now() - openedAt;
  const rejected = await b.send({ op: 'burst', count: 1, delayMs: 0 });
  expect(rejected).toMatchObject({ downstream: 0, codes: ['CIRCUIT_OPEN'] });
  expect(learnedAfter).toBeLessThan(1_000);

  // After the break: 40 concurrent calls from each; exactly one of the 80 reaches a downstream.
  await new Promise((resolve) => setTimeout(resolve, breakMs - (performance.now() - openedAt) + 200));
  const [burstA, burstB] = await Promise.all([
    a.send({ op: 'burst', count: 40, delayMs: 300 }),
    b.send({ op: 'burst', count: 40, delayMs: 300 }),
  ]);
  expect((burstA.downstream as number) + (burstB.downstream as number)).toBe(1);
  const all = [...codes(burstA), ...codes(burstB)];
  expect(all.filter((code) => code === 'ok')).toHaveLength(1);
  expect(all.filter((code) => code === 'CIRCUIT_OPEN')).toHaveLength(79);
  expect(a.count('OnCircuitHalfOpened') + b.count('OnCircuitHalfOpened')).toBe(1);

  // The probe succeeded: closed for both.
  await waitUntil(
    'both to see the circuit closed',
    async () => (await a.state()) === 'closed' && (await b.state()) === 'closed',
    {
      timeoutMs: 3_000,
      intervalMs: 20,
    },
  );
  expect(await b.send({ op: 'burst', count: 3, delayMs: 0 })).toMatchObject({ downstream: 3 });
  expect(a.count('OnCircuitStoreUnavailable') + b.count('OnCircuitStoreUnavailable')).toBe(0);
}

const redisUrl = await redisUrlForTests();

describe.skipIf(!redisUrl)('shared circuit breaker on Redis, two processes', () => {
  it("A's failures open it, B rejects within 1 s without calling its downstream; after the break exactly one of 80 concurrent calls probes", async () => {
    const prefix = uniquePrefix('shared-circuit');
    await opensAndProbesOnce(() => ({ STORE: 'redis', URL: redisUrl!, PREFIX: prefix, KEY: 'payments' }));
  }, 40_000);
});

const privateRedis = privateRedisUnavailableReason() === undefined;

describe.skipIf(!privateRedis)('shared circuit breaker, Redis stopped mid-way', () => {
  let server: RedisServer | undefined;
  afterAll(async () => {
    await server?.stop();
  });

  it('both keep serving on their own breakers while Redis is down (reported once), and share again once it is back', async () => {
    server = await startRedisServer();
    const port = server.port;
    const env = {
      STORE: 'redis',
      URL: server.url,
      PREFIX: 'outage:',
      KEY: 'payments',
      BREAK_MS: '30000',
    };
    const a = member(env);
    const b = member(env);
    await Promise.all([a.event('ready'), b.event('ready')]);
    await new Promise((resolve) => setTimeout(resolve, 500));

    await server.stop();
    await Promise.all([a.event('OnCircuitStoreUnavailable'), b.event('OnCircuitStoreUnavailable')]);
    // Serving: no call fails because of the store.
    expect(await a.send({ op: 'burst', count: 20, delayMs: 0 })).toMatchObject({ downstream: 20 });
    expect(await b.send({ op: 'burst', count: 20, delayMs: 0 })).toMatchObject({ downstream: 20 });
    // A's own breaker opens on A's failures (5 of 25 is under 0.5: fail enough to reach it).
    const failed = codes(await a.send({ op: 'fail', count: 30 }));
    expect(failed).toContain('CIRCUIT_OPEN');
    // B heard nothing of them.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await b.send({ op: 'burst', count: 5, delayMs: 0 })).toMatchObject({ downstream: 5 });
    expect(a.count('OnCircuitStoreUnavailable')).toBe(1);
    expect(b.count('OnCircuitStoreUnavailable')).toBe(1);

    server = await startRedisServer({ port });
    await Promise.all([a.event('OnCircuitStoreRestored'), b.event('OnCircuitStoreRestored')]);
    // Shared again: the fleet's circuit (closed: the restarted Redis is empty) applies to A too,
    await waitUntil('A to take the fleet state', async () => (await a.state()) === 'closed', {
      timeoutMs: 3_000,
      intervalMs: 20,
    });
    // and A's failures now reach B.
    await a.send({ op: 'fail', count: 6 });
    await waitUntil('B to see the circuit open', async () => (await b.state()) === 'open', {
      timeoutMs: 1_500,
      intervalMs: 20,
    });
    expect(await b.send({ op: 'burst', count: 1, delayMs: 0 })).toMatchObject({
      downstream: 0,
      codes: ['CIRCUIT_OPEN'],
    });
  }, 60_000);
});

const databaseUrl = await databaseUrlForTests();

describe.skipIf(!databaseUrl)('shared circuit breaker on PostgreSQL, two processes', () => {
  const schema = uniqueSchemaName(`circuit_${randomBytes(2).toString('hex')}`);
  let pool: pg.Pool;
  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    await pool.query(`CREATE SCHEMA ${schema}`);
  });
  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  it("A's failures open it, B rejects within 1 s without calling its downstream; after the break exactly one of 80 concurrent calls probes", async () => {
    await opensAndProbesOnce(() => ({
      STORE: 'postgres',
      URL: databaseUrl!,
      SCHEMA: schema,
      KEY: 'payments',
    }));
    const { rows } = await pool.query(`SELECT key, state, generation FROM ${schema}.resil_locks_circuits`);
    expect(rows).toEqual([{ key: 'payments', state: 'closed', generation: '2' }]);
  }, 40_000);
});

const mysqlUrl = await mysqlUrlForTests();

describe.skipIf(!mysqlUrl)('shared circuit breaker on MySQL, two processes', () => {
  const table = uniqueTableName('circuit');
  let pool: mysql.Pool;
  beforeAll(() => {
    pool = mysql.createPool({ uri: mysqlUrl!, connectionLimit: 1 });
  });
  afterAll(async () => {
    for (const suffix of ['', '_occurrences', '_pauses', '_fences', '_instances', '_circuits']) {
      await pool.query(`DROP TABLE IF EXISTS \`${table}${suffix}\``);
    }
    await pool.end();
  });

  it("A's failures open it, B rejects within 1 s without calling its downstream; after the break exactly one of 80 concurrent calls probes", async () => {
    await opensAndProbesOnce(() => ({ STORE: 'mysql', URL: mysqlUrl!, TABLE: table, KEY: 'payments' }));
    const [rows] = await pool.query(`SELECT lock_key, state, generation FROM \`${table}_circuits\``);
    expect(
      (rows as Array<{ lock_key: Buffer; state: string; generation: number }>).map((row) => ({
        key: String(row.lock_key),
        state: row.state,
        generation: Number(row.generation),
      })),
    ).toEqual([{ key: 'payments', state: 'closed', generation: 2 }]);
  }, 40_000);
});
