/** Activity log (F6, F12) and change log of flag writes, including 50 concurrent updates of one flag. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { featureFlagEntity } from '../../../src/contract/entities.js';

let t: TestControlPlane;
let base: string;
before(async () => { t = await startTestControlPlane(); base = `/api/projects/${t.projectId}/feature_flags/`; });
after(async () => { await t.close(); });

async function create(body: Record<string, unknown>): Promise<any> {
  const r = await t.request('POST', base, { body });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

test('create / update / no-op / delete / restore write created, updated, —, deleted, restored with field diffs', async () => {
  const f = await create({ key: 'act', name: 'first', tags: ['a'] });
  await t.request('PATCH', `${base}${f.id}/`, { body: { name: 'second', tags: ['a', 'b'] } });
  await t.request('PATCH', `${base}${f.id}/`, { body: { name: 'second' } }); // no-op: no entry
  await t.request('PATCH', `${base}${f.id}/`, { body: { deleted: true } });
  await t.request('PATCH', `${base}${f.id}/`, { body: { deleted: false } });
  const r = await t.request('GET', `${base}${f.id}/activity/`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.total_count, 4);
  assert.deepEqual(r.body.results.map((e: { activity: string }) => e.activity), ['restored', 'deleted', 'updated', 'created']);
  const [restored, deleted, updated, created] = r.body.results;
  for (const e of r.body.results) {
    assert.equal(e.scope, 'FeatureFlag');
    assert.equal(e.item_id, String(f.id));
    assert.equal(e.detail.name, 'act');
    assert.equal(e.user.email, f.created_by.email);
    assert.ok(e.id && e.created_at);
  }
  assert.deepEqual(updated.detail.changes.map((c: { field: string }) => c.field).sort(), ['name', 'tags']);
  assert.deepEqual(updated.detail.changes.find((c: { field: string }) => c.field === 'name'),
    { type: 'FeatureFlag', action: 'changed', field: 'name', before: 'first', after: 'second' });
  assert.deepEqual(deleted.detail.changes, [{ type: 'FeatureFlag', action: 'changed', field: 'deleted', before: false, after: true }]);
  assert.deepEqual(restored.detail.changes, [{ type: 'FeatureFlag', action: 'changed', field: 'deleted', before: true, after: false }]);
  assert.ok(created.detail.changes.some((c: { field: string; action: string; after: unknown }) => c.field === 'key' && c.action === 'created' && c.after === 'act'));
});

test('F6: unknown or malformed flag id → 404 with an empty body; soft-deleted flags still answer', async () => {
  for (const id of ['999999', 'abc']) {
    const r = await t.request('GET', `${base}${id}/activity/`);
    assert.equal(r.status, 404, id);
    assert.equal(r.text, '');
  }
  const f = await create({ key: 'gone-activity' });
  await t.request('PATCH', `${base}${f.id}/`, { body: { deleted: true } });
  assert.equal((await t.request('GET', `${base}${f.id}/activity/`)).status, 200);
});

test('F12 pages: limit default 10, page default 1, next/previous absolute, total_count; bad values → 400', async () => {
  const f = await create({ key: 'pager' });
  for (let i = 0; i < 12; i++) await t.request('PATCH', `${base}${f.id}/`, { body: { name: `n${i}` } });
  const first = await t.request('GET', `${base}activity/`);
  assert.equal(first.status, 200);
  assert.equal(first.body.results.length, 10);
  const total = first.body.total_count;
  assert.ok(total >= 13);
  assert.equal(first.body.previous, null);
  const next = new URL(first.body.next);
  assert.equal(next.searchParams.get('page'), '2');
  assert.equal(next.searchParams.get('limit'), '10');
  // Walk the per-flag log 5 at a time.
  const seen: string[] = [];
  let url: string | null = `${t.baseUrl}${base}${f.id}/activity/?limit=5`;
  while (url) {
    const r = await t.request('GET', url.slice(t.baseUrl.length));
    assert.equal(r.body.total_count, 13);
    seen.push(...r.body.results.map((e: { id: string }) => e.id));
    url = r.body.next;
  }
  assert.equal(seen.length, 13);
  assert.equal(new Set(seen).size, 13);
  const p3 = await t.request('GET', `${base}${f.id}/activity/?limit=5&page=3`);
  assert.equal(p3.body.results.length, 3);
  assert.equal(new URL(p3.body.previous).searchParams.get('page'), '2');
  const beyond = await t.request('GET', `${base}${f.id}/activity/?limit=5&page=9`);
  assert.equal(beyond.status, 200);
  assert.deepEqual(beyond.body.results, []);
  for (const [q, attr] of [['limit=0', 'limit'], ['limit=x', 'limit'], ['page=0', 'page'], ['page=-2', 'page']] as const) {
    const r = await t.request('GET', `${base}activity/?${q}`);
    assert.equal(r.status, 400, q);
    assert.equal(r.body.attr, attr);
  }
});

test('50 concurrent PATCHes of one flag: version +50, every change landed and logged once', async () => {
  const f = await create({ key: 'hot', tags: [] });
  const N = 50;
  const results = await Promise.all(Array.from({ length: N }, (_, i) =>
    t.request('PATCH', `${base}${f.id}/`, { body: { name: `writer-${i}` } })));
  for (const r of results) assert.equal(r.status, 200, r.text);
  const versions = results.map((r) => r.body.version).sort((a, b) => a - b);
  assert.deepEqual(versions, Array.from({ length: N }, (_, i) => i + 2), 'each update got its own version');
  const final = (await t.request('GET', `${base}${f.id}/`)).body;
  assert.equal(final.version, 1 + N);
  const lastWriter = results.find((r) => r.body.version === 1 + N)!;
  assert.equal(final.name, lastWriter.body.name, 'the last version carries the last writer\'s change');
  const act = await t.request('GET', `${base}${f.id}/activity/?limit=100`);
  const names = act.body.results.filter((e: { activity: string }) => e.activity === 'updated')
    .map((e: { detail: { changes: { field: string; after: string }[] } }) => e.detail.changes.find((c) => c.field === 'name')!.after);
  assert.equal(names.length, N);
  assert.deepEqual(names.sort(), Array.from({ length: N }, (_, i) => `writer-${i}`).sort(), 'every writer\'s change landed');
  // Change log: one revision per write, increasing with the version.
  const log = await t.db.sql<{ revision: number; payload: { version: number } }[]>`SELECT revision, payload FROM change_log
    WHERE kind = 'feature_flag' AND entity_id = ${String(f.id)} ORDER BY revision`;
  assert.deepEqual(log.map((c) => c.payload.version), Array.from({ length: N + 1 }, (_, i) => i + 1));
});

test('change log across concurrent writers: strictly increasing revisions, each flag\'s last payload equals its row', async () => {
  const start = (await t.db.sql<{ r: number | null }[]>`SELECT max(revision) AS r FROM change_log`)[0]!.r ?? 0;
  const flags = await Promise.all(Array.from({ length: 10 }, (_, i) => create({ key: `cc-${i}` })));
  await Promise.all(flags.flatMap((f, i) => [
    t.request('PATCH', `${base}${f.id}/`, { body: { active: i % 2 === 0 } }),
    t.request('PATCH', `${base}${f.id}/`, { body: { tags: [`t${i}`], filters: { groups: [{ properties: [], rollout_percentage: i * 10 }] } } }),
    t.request('PATCH', `${base}${f.id}/`, { body: { name: `name-${i}` } }),
  ]));
  await t.request('PATCH', `${base}${flags[0].id}/`, { body: { deleted: true } });
  const log = await t.db.sql<{ revision: number; entity_id: string; op: string; payload: Record<string, unknown> }[]>`
    SELECT revision, entity_id, op, payload FROM change_log WHERE revision > ${start} AND kind = 'feature_flag' ORDER BY revision`;
  for (let i = 1; i < log.length; i++) assert.ok(log[i]!.revision > log[i - 1]!.revision);
  assert.equal(log.length, 10 * 4 + 1);
  const last = new Map(log.map((c) => [c.entity_id, c]));
  for (const f of flags) {
    const [row] = await t.db.sql`SELECT * FROM feature_flags WHERE id = ${f.id}`;
    const c = last.get(String(f.id))!;
    assert.equal(c.op, 'upsert');
    assert.deepEqual(c.payload, JSON.parse(JSON.stringify(featureFlagEntity(row as never))));
  }
  assert.equal(last.get(String(flags[0].id))!.payload.deleted, true, 'soft delete is an upsert with deleted: true');
});

test('a create that frees a soft-deleted key logs the rename and publishes the tombstone', async () => {
  const old = await create({ key: 'recycled' });
  await t.request('PATCH', `${base}${old.id}/`, { body: { deleted: true } });
  await create({ key: 'recycled' });
  const act = await t.request('GET', `${base}${old.id}/activity/`);
  assert.deepEqual(act.body.results[0].detail.changes, [{ type: 'FeatureFlag', action: 'changed', field: 'key', before: 'recycled', after: `recycled:deleted:${old.id}` }]);
  const [c] = await t.db.sql<{ payload: { key: string } }[]>`SELECT payload FROM change_log
    WHERE kind = 'feature_flag' AND entity_id = ${String(old.id)} ORDER BY revision DESC LIMIT 1`;
  assert.equal(c!.payload.key, `recycled:deleted:${old.id}`);
});

test('validation failures write nothing', async () => {
  const before = (await t.db.sql<{ n: number }[]>`SELECT (SELECT count(*) FROM change_log)::int + (SELECT count(*) FROM activity_log)::int AS n`)[0]!.n;
  const f = await create({ key: 'atomic' });
  assert.equal((await t.request('PATCH', `${base}${f.id}/`, { body: { filters: { groups: [{ rollout_percentage: 500 }] } } })).status, 400);
  assert.equal((await t.request('POST', base, { body: { key: 'atomic' } })).status, 400);
  const after = (await t.db.sql<{ n: number }[]>`SELECT (SELECT count(*) FROM change_log)::int + (SELECT count(*) FROM activity_log)::int AS n`)[0]!.n;
  assert.equal(after, before + 2, 'only the create wrote (one change, one activity entry)');
  assert.equal((await t.request('GET', `${base}${f.id}/`)).body.version, 1);
});
