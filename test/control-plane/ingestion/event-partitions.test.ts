/**
 * Events partitioned by month (migration 0015) and their retention, on real Postgres: partitions
 * appear as batches need them, redelivery stays idempotent, expired months are dropped whole,
 * months a live experiment reads are kept, and a late event for a dropped month is stored again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { useProjectDatabase } from '../../support/project-db.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { dropExpiredEventPartitions, monthPartition } from '../../../src/control-plane/ingestion/event-partitions.js';
import { seedFlag } from '../../support/seed.js';

const world = useProjectDatabase();

const NOW = Date.parse('2026-11-26T12:00:00Z');
const DAY = 24 * 60 * 60 * 1000;
const ev = (timestamp: string, name = 'pageview') => ({ uuid: crypto.randomUUID(), project_id: world.projectId, event: name, distinct_id: `u-${timestamp}`,
  properties: {}, timestamp });

const partitions = async (): Promise<string[]> => (await world.db.sql<{ name: string }[]>`
  SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass ORDER BY 1`).map((r) => r.name);
const countIn = async (fromIso: string, toIso: string): Promise<number> =>
  (await world.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE project_id = ${world.projectId} AND timestamp >= ${fromIso} AND timestamp < ${toIso}`)[0]!.n;

test('month partitions: names and bounds in UTC, one partition for everything before 2020', () => {
  assert.deepEqual(monthPartition(new Date('2025-01-31T23:59:59.999Z')), { name: 'events_y2025m01', from: '2025-01-01T00:00:00.000Z', to: '2025-02-01T00:00:00.000Z' });
  assert.deepEqual(monthPartition(new Date('2025-12-15T00:00:00Z')), { name: 'events_y2025m12', from: '2025-12-01T00:00:00.000Z', to: '2026-01-01T00:00:00.000Z' });
  assert.equal(monthPartition(new Date('1999-05-01T00:00:00Z')).name, 'events_old');
  assert.equal(monthPartition(new Date('0001-01-01T00:00:00Z')).name, 'events_old');
});

test('partitions appear as batches need them; redelivery is idempotent; retention drops whole expired months and keeps what live experiments read', async () => {
  const batch = [ev('2019-06-01T00:00:00Z'), ev('2025-01-10T00:00:00Z'), ev('2025-01-20T00:00:00Z'), ev('2025-02-10T00:00:00Z'), ev('2026-11-20T00:00:00Z')];
  const first = await ingestEvents(world.db.sql, batch);
  assert.equal(first.inserted, 5);
  assert.deepEqual(await partitions(), ['events_old', 'events_y2025m01', 'events_y2025m02', 'events_y2026m11']);
  const again = await ingestEvents(world.db.sql, batch);
  assert.deepEqual([again.inserted, again.duplicates], [0, 5], 'a redelivered batch inserts nothing');

  assert.deepEqual(await dropExpiredEventPartitions(world.db.sql, null, NOW), [], 'no retention configured: nothing dropped');

  // A live experiment that started 2025-02-15 reads back to 2025-01-16 (30-day lookback).
  const flagId = await seedFlag(world.db.sql, world.projectId, 'exp-flag');
  const [x] = await world.db.sql<{ id: number }[]>`INSERT INTO experiments (project_id, name, feature_flag_id, start_date)
    VALUES (${world.projectId}, 'x', ${flagId}, '2025-02-15T00:00:00Z') RETURNING id`;
  assert.deepEqual(await dropExpiredEventPartitions(world.db.sql, 365, NOW), ['events_old'], 'January 2025 overlaps the lookback');
  assert.equal(await countIn('2025-01-01', '2025-03-01'), 3);
  assert.equal(await countIn('1900-01-01', '2020-01-01'), 0);

  await world.db.sql`UPDATE experiments SET archived = true WHERE id = ${x!.id}`;
  assert.deepEqual(await dropExpiredEventPartitions(world.db.sql, 365, NOW), ['events_y2025m01', 'events_y2025m02']);
  assert.deepEqual(await partitions(), ['events_y2026m11']);
  assert.equal(await countIn('2025-01-01', '2025-03-01'), 0);
  assert.equal(await countIn('2026-11-01', '2026-12-01'), 1, 'the current month is untouched');
  assert.deepEqual(await dropExpiredEventPartitions(world.db.sql, 365, NOW), [], 'nothing left to drop');

  // A late event for a dropped month: its partition comes back and it is stored.
  const late = await ingestEvents(world.db.sql, [ev('2025-01-05T00:00:00Z', 'late')]);
  assert.equal(late.inserted, 1);
  assert.equal(await countIn('2025-01-01', '2025-02-01'), 1);
  // A month just inside the retention is kept whole even where part of it is older.
  await ingestEvents(world.db.sql, [ev(new Date(NOW - 40 * DAY).toISOString(), 'inside')]);
  assert.deepEqual(await dropExpiredEventPartitions(world.db.sql, 45, NOW), ['events_y2025m01']);
  assert.equal(await countIn(new Date(NOW - 40 * DAY).toISOString(), new Date(NOW).toISOString()), 2);
});
