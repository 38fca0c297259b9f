/**
 * The COPY path of ingestion (ingestion/events-copy.ts) over real Postgres: text the COPY format
 * must escape round-trips exactly; a repeated and a redelivered event are stored and counted in
 * `person_event_times` once; a COPY that Postgres refuses is reported (not left hanging) and
 * the batch is rerun on the statement path, so a conflicting row stored by another transaction
 * between the dedupe and the COPY never makes a duplicate.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { useProjectDatabase } from '../../support/project-db.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { CopyFailed, CopySession } from '../../../src/control-plane/ingestion/events-copy.js';

const world = useProjectDatabase();

let clock = Date.parse('2026-03-01T00:00:00Z');
function ev(event: string, distinctId: string, properties: Record<string, unknown> = {}) {
  clock += 1000;
  return { uuid: crypto.randomUUID(), project_id: world.projectId, event, distinct_id: distinctId, properties, timestamp: new Date(clock).toISOString() };
}

test('names, distinct ids, event and person properties holding tabs, newlines, backslashes, \\N and unicode round-trip exactly', async () => {
  const tricky = 'a\tb\nc\rd\\e\\N\\\\t "q" \'s\' é 漢字 🙂 \u2028 {x,y}';
  const props = { [tricky]: tricky, list: [tricky, '\\N', 1.5, null, true], nested: { k: '\\', t: '\t' }, empty: '' };
  const e = ev(`ev ${tricky}`, `id ${tricky}`, { ...props, $set: { [tricky]: tricky } });
  const bare = ev('\\N', '\\N', {});
  assert.deepEqual(await ingestEvents(world.db.sql, [e, bare]), { inserted: 2, duplicates: 0, invalid: 0 });
  const rows = await world.db.sql<{ uuid: string; event: string; distinct_id: string; properties: unknown; person_id: string | null }[]>`
    SELECT uuid::text, event, distinct_id, properties, person_id::text FROM events WHERE uuid IN (${e.uuid}, ${bare.uuid})`;
  const byUuid = new Map(rows.map((r) => [r.uuid, r]));
  assert.equal(byUuid.get(e.uuid)!.event, `ev ${tricky}`);
  assert.equal(byUuid.get(e.uuid)!.distinct_id, `id ${tricky}`);
  assert.deepEqual(byUuid.get(e.uuid)!.properties, { ...props, $set: { [tricky]: tricky } });
  // The new person and its distinct id went in by COPY too.
  const [person] = await world.db.sql<{ uuid: string; properties: unknown }[]>`SELECT p.uuid::text, p.properties FROM person_distinct_ids d
    JOIN persons p ON p.id = d.person_id WHERE d.project_id = ${world.projectId} AND d.distinct_id = ${`id ${tricky}`}`;
  assert.equal(person!.uuid, byUuid.get(e.uuid)!.person_id);
  assert.deepEqual(person!.properties, { [tricky]: tricky });
  assert.equal(byUuid.get(bare.uuid)!.event, '\\N');
  assert.equal(byUuid.get(bare.uuid)!.distinct_id, '\\N');
  assert.notEqual(byUuid.get(bare.uuid)!.person_id, null, 'the text \\N is a distinct id with a person, not NULL');
  const [pet] = await world.db.sql<{ event: string; n: number }[]>`SELECT event, n FROM person_event_times WHERE person_id = ${byUuid.get(e.uuid)!.person_id}`;
  assert.deepEqual({ ...pet }, { event: `ev ${tricky}`, n: 1 });
});

test('the same event twice in a batch and a redelivered batch are stored and counted once', async () => {
  const a = ev('copy-once', 'copy-user');
  const b = ev('copy-once', 'copy-user');
  assert.deepEqual(await ingestEvents(world.db.sql, [a, { ...a }, b]), { inserted: 2, duplicates: 1, invalid: 0 });
  assert.deepEqual(await ingestEvents(world.db.sql, [b, a]), { inserted: 0, duplicates: 2, invalid: 0 });
  const [{ n }] = await world.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE event = 'copy-once'`;
  assert.equal(n, 2);
  const [row] = await world.db.sql<{ n: number; times: Date[] }[]>`SELECT n, times FROM person_event_times WHERE event = 'copy-once'`;
  assert.equal(row!.n, 2);
  assert.deepEqual(row!.times.map((t) => t.toISOString()), [a.timestamp, b.timestamp]);
});

test('a COPY Postgres refuses is reported as CopyFailed when settled and the transaction rolls back; COPYs in a row all land', async () => {
  await world.db.sql`CREATE TABLE copy_probe (n int NOT NULL)`;
  await assert.rejects(world.db.sql.begin(async (tx) => {
    const copies = new CopySession(tx);
    await copies.copy('COPY copy_probe (n) FROM STDIN', '1\nnot a number\n');
    await copies.settle();
  }), CopyFailed);
  // Two COPYs back to back in one transaction, each settled before the next.
  await world.db.sql.begin(async (tx) => {
    const copies = new CopySession(tx);
    for (let i = 0; i < 20; i++) await copies.copy('COPY copy_probe (n) FROM STDIN', '1\n2\n');
    await copies.settle();
  });
  const [{ n }] = await world.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM copy_probe`;
  assert.equal(n, 40);
});

test('an event stored by another transaction after the dedupe: the COPY fails, the rerun counts it a duplicate, one row', async () => {
  const e = ev('raced', 'race-user');
  let stored!: () => void;
  const storedP = new Promise<void>((r) => { stored = r; });
  let release!: () => void;
  const gate = new Promise<void>((r) => { release = r; });
  // A writer that does not take the ingestion lock (none exists in the product; this is the
  // safety net the COPY path relies on).
  const other = world.db.sql.begin(async (tx) => {
    await tx`INSERT INTO events (project_id, uuid, event, distinct_id, properties, timestamp)
      VALUES (${world.projectId}, ${e.uuid}, 'raced', 'race-user', '{}', ${e.timestamp})`;
    stored();
    await gate;
  });
  await storedP;
  const ingest = ingestEvents(world.db.sql, [e]);
  // The COPY waits on the other transaction's uncommitted key.
  for (;;) {
    const [w] = await world.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'`;
    if (w!.n > 0) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  release();
  await other;
  assert.deepEqual(await ingest, { inserted: 0, duplicates: 1, invalid: 0 });
  const [{ n }] = await world.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE uuid = ${e.uuid}`;
  assert.equal(n, 1);
  const [{ m }] = await world.db.sql<{ m: number }[]>`SELECT count(*)::int AS m FROM person_event_times WHERE event = 'raced'`;
  assert.equal(m, 0, 'nothing folded for an event this batch did not store');
});

test('a transaction whose backend dies while a COPY is unconfirmed fails with CONNECTION_CLOSED; the process and the pool live', async () => {
  // The driver then writes its ROLLBACK to the dead connection; unguarded, that write throws
  // outside any promise and ends the process (scripts/patch-postgres.mjs).
  await world.db.sql`CREATE TABLE IF NOT EXISTS copy_probe (n int NOT NULL)`;
  await assert.rejects(world.db.sql.begin(async (tx) => {
    const [{ pid }] = await tx<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    const copies = new CopySession(tx);
    await copies.copy('COPY copy_probe (n) FROM STDIN', '1\n2\n');
    await world.db.sql`SELECT pg_terminate_backend(${pid})`;
    await new Promise((r) => setTimeout(r, 300));
    await copies.settle();
  }), (e: unknown) => ['CONNECTION_CLOSED', '57P01'].includes((e as { code?: string }).code ?? ''));
  await new Promise((r) => setTimeout(r, 100)); // the driver's deferred writes have run
  const [{ one }] = await world.db.sql<{ one: number }[]>`SELECT 1 AS one`;
  assert.equal(one, 1, 'the pool still serves');
});
