/**
 * The floor of one person change on this machine, measured beside the real
 * path by `make bench-scale`: the least CPU the rows and the entry a new person leaves behind can
 * cost, with no decision made, no JSON parsed twice, no network and no capture.
 *
 * - Postgres: `COPY … FROM STDIN` of n synthetic new persons into the very tables ingestion
 *   writes (same indexes, same database, WAL on), one row each in `persons`,
 *   `person_distinct_ids`, `events`, `person_event_times` and `change_log`, in one transaction that
 *   is then rolled back (the database is left as it was). COPY is Postgres' cheapest way in.
 * - LMDB: a bare lmdb-js `putSync` of each person's payload (as the control plane encodes it),
 *   500 per write transaction, into a new environment: what each node, and the control plane's
 *   snapshot image, must at least do per person change (bench/apply.ts measures the same baseline
 *   against the node's real apply).
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { open } from 'lmdb';
import type { Sql } from '../src/control-plane/db/connect.js';
import { personEntity } from '../src/contract/entities.js';
import { encodePayload } from '../src/contract/payload.js';

/** Postgres CPU-µs per person for each table, and their sum. */
export interface PostgresFloor { tables: { table: string; us: number }[]; total: number }

/**
 * The properties bench-scale `$set`s on its person `i` named `name` (an email, one of three plans,
 * an age), which the floor's synthetic persons carry too.
 */
export function benchPersonProperties(name: string, i: number): { email: string; plan: string; age: number } {
  return { email: `${name}@example.com`, plan: ['free', 'pro', 'enterprise'][i % 3]!, age: i % 90 };
}

/** Properties of synthetic person i of the floor. */
const propertiesOf = (i: number) => benchPersonProperties(`floor-${i}`, i);

/** Rolls the floor's transaction back. */
class Rollback extends Error {}

/**
 * COPYs `n` synthetic new persons of `projectId` into the five tables (module doc), timing each
 * table's COPY with `postgresCpuUs` (the server's CPU so far, µs); rolled back afterwards.
 * @throws when a COPY fails or takes over `timeoutMs` (the driver may never settle a failed COPY).
 */
export async function postgresWriteFloor(sql: Sql, projectId: number, n: number, postgresCpuUs: () => number, timeoutMs = 120_000): Promise<PostgresFloor> {
  const now = new Date().toISOString();
  const month = `${now.slice(0, 7)}-01T00:00:00Z`;
  const uuids = Array.from({ length: n }, () => crypto.randomUUID());
  const json = (v: unknown) => JSON.stringify(v).replace(/\\/g, '\\\\');
  const tables: { table: string; us: number }[] = [];
  const work = sql.begin(async (tx) => {
    const [block] = await tx<{ last: string }[]>`SELECT setval(pg_get_serial_sequence('persons', 'id'),
      nextval(pg_get_serial_sequence('persons', 'id')) + ${n - 1}) AS last`;
    const firstId = Number(block!.last) - n + 1;
    const copy = async (table: string, columns: string, line: (i: number) => string) => {
      const lines: string[] = [];
      for (let i = 0; i < n; i++) lines.push(line(i));
      const chunks: string[] = [];
      for (let i = 0; i < n; i += 1000) chunks.push(lines.slice(i, i + 1000).join(''));
      const before = postgresCpuUs();
      await pipeline(Readable.from(chunks), await tx.unsafe(`COPY ${table} (${columns}) FROM STDIN`).writable());
      tables.push({ table, us: (postgresCpuUs() - before) / n });
    };
    await copy('persons', 'id, uuid, project_id, properties, is_identified, created_at',
      (i) => `${firstId + i}\t${uuids[i]}\t${projectId}\t${json(propertiesOf(i))}\tf\t${now}\n`);
    await copy('person_distinct_ids', 'project_id, distinct_id, person_id', (i) => `${projectId}\tfloor-${i}\t${firstId + i}\n`);
    await copy('events', 'project_id, uuid, event, distinct_id, person_id, properties, timestamp',
      (i) => `${projectId}\t${crypto.randomUUID()}\t$identify\tfloor-${i}\t${uuids[i]}\t${json({ $set: propertiesOf(i) })}\t${now}\n`);
    await copy('person_event_times', 'project_id, event, month, person_id, n, first_ts, last_ts, times',
      (i) => `${projectId}\t$identify\t${month}\t${uuids[i]}\t1\t${now}\t${now}\t{"${now}"}\n`);
    await copy('change_log', 'project_id, kind, entity_id, op, payload',
      (i) => `${projectId}\tperson\t${uuids[i]}\tupsert\t${json(personEntity({ uuid: uuids[i]!, project_id: projectId, properties: propertiesOf(i) }, [`floor-${i}`]))}\n`);
    throw new Rollback();
  }).catch((e: unknown) => { if (!(e instanceof Rollback)) throw e; });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`the COPY floor took over ${timeoutMs} ms`)), timeoutMs); });
  try { await Promise.race([work, timeout]); } finally { clearTimeout(timer); }
  return { tables, total: tables.reduce((t, x) => t + x.us, 0) };
}

/**
 * CPU-µs of this process per bare lmdb-js `putSync` of a person's payload, `n` persons, 500 per
 * write transaction, into a new environment under `dir` (module doc).
 */
export async function lmdbPutFloor(dir: string, n: number): Promise<number> {
  const env = open({ path: path.join(dir, 'floor-lmdb'), mapSize: 4 * 2 ** 30 });
  const db = env.openDB<Buffer, string>({ name: 'entities', encoding: 'binary' });
  try {
    let cpu = 0;
    for (let s = 0; s < n; s += 500) {
      const batch = Array.from({ length: Math.min(500, n - s) }, (_, j) => {
        const uuid = crypto.randomUUID();
        return [uuid, encodePayload(personEntity({ uuid, project_id: 1, properties: propertiesOf(s + j) }, [`floor-${s + j}`]))] as const;
      });
      const t = process.cpuUsage();
      await db.transaction(() => { for (const [k, v] of batch) db.putSync(k, v); });
      const d = process.cpuUsage(t);
      cpu += d.user + d.system;
    }
    return cpu / n;
  } finally {
    await env.close();
  }
}
