/**
 * The per-person event times ingestion keeps (migration 0017, ingestion/person-event-times.ts) on
 * real Postgres through the real ingestion: after batches arriving out of time order, a
 * redelivered batch, batches in time order, personless events, exposure calls (left out) and a
 * person with more events in a month than a row keeps times for, every row equals a direct computation from the events sent; each month's rows
 * live in that month's partition, and retention drops them with the events.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { useProjectDatabase } from '../../support/project-db.js';
import { prng } from '../../support/prng.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { dropExpiredEventPartitions } from '../../../src/control-plane/ingestion/event-partitions.js';
import { MAX_KEPT_TIMES } from '../../../src/control-plane/ingestion/person-event-times.js';

const world = useProjectDatabase();

interface Ev { uuid: string; project_id: number; event: string; distinct_id: string; properties: Record<string, unknown>; timestamp: string }

const monthKey = (iso: string) => iso.slice(0, 7);

test('rows equal a direct computation from the events: counts, first and last, sorted times up to the cap, NULL beyond', async () => {
  const rand = prng(11);
  const events: Ev[] = [];
  const base = Date.parse('2026-09-20T00:00:00Z');
  // Five persons over September and October; "heavy" sends more pageviews in October than a row keeps.
  for (const d of ['a', 'b', 'c', 'd', 'heavy']) {
    const n = d === 'heavy' ? MAX_KEPT_TIMES + 6 : 12;
    for (let i = 0; i < n; i++) {
      const at = d === 'heavy' ? Date.parse('2026-10-03T00:00:00Z') + Math.floor(rand() * 20 * 86_400_000) : base + Math.floor(rand() * 30 * 86_400_000);
      events.push({ uuid: crypto.randomUUID(), project_id: world.projectId, event: d === 'heavy' || rand() < 0.6 ? 'pageview' : 'purchase', distinct_id: `pet-${d}`, properties: {}, timestamp: new Date(at).toISOString() });
    }
  }
  // Exposure calls are left out of the rows (experiment_exposures keeps them).
  for (const d of ['a', 'b']) events.push({ uuid: crypto.randomUUID(), project_id: world.projectId, event: '$feature_flag_called', distinct_id: `pet-${d}`, properties: { $feature_flag: 'f', $feature_flag_response: true }, timestamp: '2026-10-02T00:00:00.000Z' });
  const personless = { uuid: crypto.randomUUID(), project_id: world.projectId, event: 'pageview', distinct_id: 'pet-nobody', properties: { $process_person_profile: false }, timestamp: '2026-10-05T00:00:00.000Z' };
  // Shuffled into batches of 17: each row is folded across several batches, out of time order.
  const shuffled = [...events, personless].sort(() => rand() - 0.5);
  for (let i = 0; i < shuffled.length; i += 17) await ingestEvents(world.db.sql, shuffled.slice(i, i + 17));
  const redelivered = await ingestEvents(world.db.sql, shuffled.slice(0, 17));
  assert.equal(redelivered.inserted, 0, 'a redelivered batch inserts nothing');
  // A person whose events come in time order, three per batch: each batch appends to the rows.
  const inOrder = Array.from({ length: 12 }, (_, i) => ({ uuid: crypto.randomUUID(), project_id: world.projectId, event: i % 4 === 0 ? 'purchase' : 'pageview',
    distinct_id: 'pet-in-order', properties: {}, timestamp: new Date(Date.parse('2026-10-10T00:00:00Z') + i * 60_000).toISOString() }));
  for (let i = 0; i < inOrder.length; i += 3) await ingestEvents(world.db.sql, inOrder.slice(i, i + 3));
  events.push(...inOrder);

  const expected = new Map<string, number[]>();
  for (const e of events) {
    if (e.event === '$feature_flag_called') continue;
    const k = `${e.distinct_id}|${e.event}|${monthKey(e.timestamp)}`;
    expected.set(k, [...(expected.get(k) ?? []), Date.parse(e.timestamp)]);
  }
  const rows = await world.db.sql<{ d: string; event: string; month: Date; n: number; first_ts: Date; last_ts: Date; times: Date[] | null; part: string }[]>`
    SELECT pd.distinct_id AS d, t.event, t.month, t.n, t.first_ts, t.last_ts, t.times, t.tableoid::regclass::text AS part
    FROM person_event_times t JOIN person_distinct_ids pd ON pd.person_id = (SELECT id FROM persons WHERE uuid = t.person_id)
    WHERE t.project_id = ${world.projectId}`;
  assert.equal(rows.length, expected.size, 'one row per person, event and month; none for the personless event');
  let overflowed = 0;
  for (const r of rows) {
    const iso = r.month.toISOString();
    const times = expected.get(`${r.d}|${r.event}|${monthKey(iso)}`)!.sort((x, y) => x - y);
    assert.ok(times, `${r.d} ${r.event} ${iso}`);
    assert.equal(iso.slice(7), '-01T00:00:00.000Z', 'month is the first instant of the UTC month');
    assert.equal(r.part, `person_event_times_y${iso.slice(0, 4)}m${iso.slice(5, 7)}`);
    assert.equal(r.n, times.length);
    assert.equal(r.first_ts.getTime(), times[0]);
    assert.equal(r.last_ts.getTime(), times.at(-1));
    if (times.length <= MAX_KEPT_TIMES) assert.deepEqual(r.times!.map((t) => t.getTime()), times, `${r.d} ${r.event} ${iso}`);
    else { assert.equal(r.times, null); overflowed++; }
  }
  assert.equal(overflowed > 0, true, 'the heavy person overflows a row');

  // Retention drops a month's rows with its events.
  const dropped = await dropExpiredEventPartitions(world.db.sql, 30, Date.parse('2026-11-15T00:00:00Z'));
  assert.deepEqual(dropped, ['events_old', 'events_y2026m09']);
  const months = await world.db.sql<{ m: string }[]>`SELECT DISTINCT to_char(month AT TIME ZONE 'UTC', 'YYYY-MM') AS m FROM person_event_times WHERE project_id = ${world.projectId} ORDER BY 1`;
  assert.deepEqual(months.map((r) => r.m), ['2026-10']);
  const parts = await world.db.sql<{ name: string }[]>`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'person_event_times'::regclass ORDER BY 1`;
  assert.deepEqual(parts.map((r) => r.name), ['person_event_times_y2026m10']);
});
