/** appendChanges: order, contiguous revisions for multi-change appends, concurrency. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { appendChanges, readChangesAfter, currentRevision, type ChangeInput } from '../../../src/control-plane/change-log/store.js';

let db: TestDatabase;
before(async () => { db = await createTestDatabase(); });
after(async () => { await db.drop(); });

const change = (i: number, op: 'upsert' | 'delete' = 'upsert'): ChangeInput =>
  ({ projectId: i % 2 === 0 ? null : i, kind: 'person', entityId: `e${i}`, op, payload: op === 'delete' ? null : { i, nested: { a: [i] } } });

test('single and multi-change appends keep input order with increasing revisions', async () => {
  const start = await currentRevision(db.sql);
  const one = await db.sql.begin((tx) => appendChanges(tx, [change(1)]));
  const many = await db.sql.begin((tx) => appendChanges(tx, [change(2, 'delete'), change(3), change(4), change(5)]));
  assert.equal(many.length, 4);
  for (let i = 1; i < many.length; i++) assert.equal(many[i], many[i - 1]! + 1, 'contiguous');
  assert.ok(many[0]! > one[0]!);
  const rows = await readChangesAfter(db.sql, start, 100);
  assert.deepEqual(rows.map((r) => r.entity_id), ['e1', 'e2', 'e3', 'e4', 'e5']);
  assert.deepEqual(rows.map((r) => r.revision), [one[0], ...many]);
  assert.equal(rows[1]!.payload, null);
  assert.equal(rows[1]!.op, 'delete');
  assert.equal(rows[1]!.project_id, null);
  assert.deepEqual(rows[2]!.payload, { i: 3, nested: { a: [3] } });
  assert.equal(rows[2]!.project_id, 3);
  const after = await db.sql.begin((tx) => appendChanges(tx, [change(6)]));
  assert.equal(after[0], many[3]! + 1, 'the serial default continues after a reserved block');
});

test('concurrent appenders never interleave and revisions stay unique', async () => {
  const start = await currentRevision(db.sql);
  const batches = Array.from({ length: 8 }, (_, b) => Array.from({ length: 5 }, (_, i) => ({ ...change(i), entityId: `b${b}-${i}` })));
  const results = await Promise.all(batches.map((cs) => db.sql.begin((tx) => appendChanges(tx, cs))));
  const all = results.flat();
  assert.equal(new Set(all).size, all.length);
  for (const r of results) for (let i = 1; i < r.length; i++) assert.equal(r[i], r[i - 1]! + 1);
  const rows = await readChangesAfter(db.sql, start, 1000);
  assert.equal(rows.length, 40);
  for (let i = 1; i < rows.length; i++) assert.ok(rows[i]!.revision > rows[i - 1]!.revision);
});

test('a rolled-back append leaves no rows', async () => {
  const start = await currentRevision(db.sql);
  await assert.rejects(db.sql.begin(async (tx) => { await appendChanges(tx, [change(1), change(3)]); throw new Error('abort'); }));
  assert.equal((await readChangesAfter(db.sql, start, 10)).length, 0);
});
