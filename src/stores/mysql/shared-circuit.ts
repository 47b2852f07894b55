/**
 * Shared circuit breakers (`circuitBreaker.store`) in MySQL or MariaDB: one row per breaker key in
 * `<table>_circuits`, created with the store's other tables. A sync or a probe claim is one short
 * transaction on the key's row, locked first, and applies the same TypeScript as the memory store
 * (`applyCircuitSync` / `applyProbeClaim`, src/ledger/shared-circuit.ts) at the database's clock: a
 * few round trips, all in the background (the breaker's calls never wait for them).
 */
import type { PoolConnection } from 'mysql2/promise';
import {
  applyCircuitSync,
  applyProbeClaim,
  newCircuit,
  type StoredCircuit,
} from '../../ledger/shared-circuit.ts';
import type {
  CircuitProbeClaim,
  CircuitSync,
  CircuitSyncReply,
} from '../../strategies/circuit-breaker/shared.ts';
import { nowMs } from './schema.ts';

/** Counts are a JSON array of `[bucket, successes, failures]`, one per bucket of a tenth of the sampling duration. */
export function circuitTableSql(circuits: string): string {
  return `CREATE TABLE IF NOT EXISTS ${circuits} (
  lock_key VARBINARY(1255) NOT NULL,
  state ENUM('closed', 'open', 'isolated') NOT NULL,
  open_until_ms BIGINT NOT NULL,
  generation BIGINT NOT NULL,
  probe_owner BLOB,
  probe_until_ms BIGINT NOT NULL,
  buckets MEDIUMTEXT NOT NULL,
  PRIMARY KEY (lock_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`;
}

export function circuitStatements(circuits: string) {
  return {
    // Creates the row of a new key, and takes the row lock in any case (an exclusive one at once,
    // which INSERT IGNORE would not take: two of those upgrading their shared locks deadlock).
    lock: `INSERT INTO ${circuits} (lock_key, state, open_until_ms, generation, probe_until_ms, buckets)
VALUES (?, 'closed', 0, 0, 0, '[]') ON DUPLICATE KEY UPDATE lock_key = lock_key`,
    read: `SELECT state, open_until_ms, generation, probe_owner, probe_until_ms, buckets, ${nowMs} AS now_ms
FROM ${circuits} WHERE lock_key = ? FOR UPDATE`,
    write: `UPDATE ${circuits} SET state = ?, open_until_ms = ?, generation = ?, probe_owner = ?, probe_until_ms = ?,
  buckets = ? WHERE lock_key = ?`,
  };
}

export type CircuitStatements = ReturnType<typeof circuitStatements>;

interface CircuitRow {
  state: StoredCircuit['state'];
  open_until_ms: number | string;
  generation: number | string;
  probe_owner: Buffer | string | null;
  probe_until_ms: number | string;
  buckets: string;
  now_ms: number | string;
}

/** Locks and reads the key's row, lets `apply` change it, writes it back and commits. */
async function inTransaction<R>(
  connection: PoolConnection,
  sql: CircuitStatements,
  key: string,
  abandoned: () => boolean,
  apply: (circuit: StoredCircuit, now: number) => R,
): Promise<R> {
  await connection.query('START TRANSACTION');
  try {
    await connection.execute(sql.lock, [key]);
    const [rows] = await connection.execute(sql.read, [key]);
    const row = (rows as CircuitRow[])[0]!;
    const circuit = newCircuit();
    circuit.state = row.state;
    circuit.openUntil = Number(row.open_until_ms);
    circuit.generation = Number(row.generation);
    circuit.probeOwner = row.probe_owner === null ? undefined : String(row.probe_owner);
    circuit.probeUntil = Number(row.probe_until_ms);
    for (const [bucket, successes, failures] of JSON.parse(row.buckets) as Array<[number, number, number]>) {
      circuit.buckets.set(bucket, [successes, failures]);
    }
    const reply = apply(circuit, Number(row.now_ms));
    await connection.execute(sql.write, [
      circuit.state,
      circuit.openUntil,
      circuit.generation,
      circuit.probeOwner ?? null,
      circuit.probeUntil,
      JSON.stringify(
        [...circuit.buckets].map(([bucket, [successes, failures]]) => [bucket, successes, failures]),
      ),
      key,
    ]);
    if (abandoned()) throw new Error('abandoned: the bound ran out before COMMIT');
    await connection.query('COMMIT');
    return reply;
  } catch (error) {
    await connection.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

export function syncMysqlCircuit(
  connection: PoolConnection,
  sql: CircuitStatements,
  key: string,
  sync: CircuitSync,
  abandoned: () => boolean,
): Promise<CircuitSyncReply> {
  return inTransaction(connection, sql, key, abandoned, (circuit, now) =>
    applyCircuitSync(circuit, sync, now),
  );
}

export function claimMysqlProbe(
  connection: PoolConnection,
  sql: CircuitStatements,
  key: string,
  claim: { readonly owner: string; readonly leaseMs: number },
  abandoned: () => boolean,
): Promise<CircuitProbeClaim> {
  return inTransaction(connection, sql, key, abandoned, (circuit, now) =>
    applyProbeClaim(circuit, claim, now),
  );
}
