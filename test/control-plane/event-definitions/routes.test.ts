/** Event definitions D1–D5 over real HTTP and Postgres, seeded through ingestion. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';

let t: TestControlPlane;
let base: string;
const DAY = 86_400_000;
const now = Date.now();

/** name → days ago it was last seen (several events each). */
const SEEN: Record<string, number> = {
  'signed up': 0, 'signed in': 0, 'sign': 1, '$pageview': 1, '$autocapture': 2, 'purchase completed': 3,
  'purchase': 3, 'checkout started': 10, 'old event': 60, 'Percent 100%': 5, 'under_score': 5,
};

before(async () => {
  t = await startTestControlPlane();
  base = `/api/projects/${t.projectId}/event_definitions`;
  const events = Object.entries(SEEN).flatMap(([name, days]) => [days + 2, days].map((d) => ({
    uuid: crypto.randomUUID(), project_id: t.projectId, event: name, distinct_id: 'seed', properties: {},
    timestamp: new Date(now - d * DAY).toISOString(),
  })));
  await ingestEvents(t.db.sql, events);
});
after(async () => { await t.close(); });

async function list(query = ''): Promise<any> {
  const r = await t.request('GET', `${base}/${query}`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}
const names = (body: any): string[] => body.results.map((d: any) => d.name);
async function idOf(name: string): Promise<string> {
  return (await list(`?names=${encodeURIComponent(name)}`)).results[0].id;
}

test('D1 default order is -last_seen_at::date, name; record shape', async () => {
  const body = await list();
  assert.equal(body.count, Object.keys(SEEN).length);
  const expected = Object.keys(SEEN).sort((a, b) => SEEN[a]! - SEEN[b]! || (a < b ? -1 : a > b ? 1 : 0));
  assert.deepEqual(names(body), expected);
  const d = body.results.find((x: any) => x.name === 'purchase');
  assert.deepEqual(Object.keys(d).sort(), ['action_id', 'created_at', 'created_by', 'default_columns', 'description', 'hidden', 'id',
    'is_action', 'is_calculating', 'last_calculated_at', 'last_seen_at', 'last_updated_at', 'name', 'owner', 'post_to_slack',
    'query_usage_30_day', 'tags', 'updated_at', 'updated_by', 'verified', 'verified_at', 'verified_by', 'volume_30_day'].sort());
  assert.equal(d.description, '');
  assert.deepEqual(d.tags, []);
  assert.equal(d.verified, false);
  assert.equal(d.hidden, false);
  assert.equal(d.volume_30_day, 2);
  assert.equal(d.last_seen_at, new Date(now - 3 * DAY).toISOString());
  assert.equal(body.results.find((x: any) => x.name === 'old event').volume_30_day, 0, 'events older than 30 days are not counted');
});

test('D1 search: every term must match, case-insensitive, shorter names first; LIKE wildcards are literal', async () => {
  const cases: [string, string[]][] = [
    ['sign', ['sign', 'signed in', 'signed up']],
    ['SIGN up', ['signed up']],
    ['purchase', ['purchase', 'purchase completed']],
    ['nothing-matches', []],
    ['%', ['Percent 100%']],
    ['_', ['under_score']],
  ];
  for (const [search, want] of cases) assert.deepEqual(names(await list(`?search=${encodeURIComponent(search)}`)), want, search);
  assert.deepEqual(names(await list('?search=sign&ordering=-name')), ['signed up', 'signed in', 'sign'], 'explicit ordering wins');
});

test('D1 event_type and its errors', async () => {
  assert.deepEqual(names(await list('?event_type=event_posthog')), ['$pageview', '$autocapture']);
  assert.equal((await list('?event_type=event_custom')).count, Object.keys(SEEN).length - 2);
  for (const v of ['event', 'all', 'action_event']) assert.equal((await list(`?event_type=${v}`)).count, Object.keys(SEEN).length, v);
  const bad = await t.request('GET', `${base}/?event_type=bogus`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.type, 'validation_error');
  assert.equal(bad.body.attr, 'event_type');
});

test('D1 excluded_properties, names, tags, exclude_stale, errors', async () => {
  const ex = await list(`?excluded_properties=${encodeURIComponent(JSON.stringify(['sign', '$pageview']))}`);
  assert.ok(!names(ex).includes('sign') && !names(ex).includes('$pageview'));
  assert.equal(ex.count, Object.keys(SEEN).length - 2);
  assert.deepEqual(names(await list('?names=sign,purchase')), ['sign', 'purchase']);
  assert.deepEqual(names(await list('?names=sign&names=purchase')), ['sign', 'purchase']);
  assert.ok(!names(await list('?exclude_stale=true')).includes('old event'));
  const badJson = await t.request('GET', `${base}/?excluded_properties=not-json`);
  assert.equal(badJson.status, 400);
  assert.equal(badJson.body.attr, 'excluded_properties');
});

test('D1 ordering: allow-list, - prefix, comma-joined or repeated, unknown ignored', async () => {
  const all = Object.keys(SEEN);
  const byName = [...all].sort();
  assert.deepEqual(names(await list('?ordering=name')), byName);
  assert.deepEqual(names(await list('?ordering=-name')), [...byName].reverse());
  assert.deepEqual(names(await list('?ordering=bogus')), names(await list()), 'unknown ordering falls back to the default');
  const lastSeen = names(await list('?ordering=last_seen_at'));
  assert.equal(lastSeen[0], 'old event');
  const desc = names(await list('?ordering=-last_seen_at::date,name'));
  assert.deepEqual(desc, names(await list()));
  assert.deepEqual(names(await list('?ordering=-last_seen_at::date&ordering=-name')).slice(0, 2), ['signed up', 'signed in']);
  assert.deepEqual(names(await list('?ordering=created_at')).length, all.length);
});

test('D1 pagination walks to the end with absolute next/previous links', async () => {
  const full = names(await list());
  const seen: string[] = [];
  let url: string | null = `${t.baseUrl}${base}/?limit=3`;
  let pages = 0;
  let lastBody: any;
  while (url) {
    const r = await t.request('GET', url.slice(t.baseUrl.length));
    assert.equal(r.status, 200);
    assert.equal(r.body.count, full.length);
    seen.push(...names(r.body));
    lastBody = r.body;
    url = r.body.next;
    pages++;
  }
  assert.deepEqual(seen, full);
  assert.equal(pages, Math.ceil(full.length / 3));
  assert.match(lastBody.previous, /limit=3&offset=\d+|offset=\d+&limit=3|limit=3/);
  const first = await list('?limit=3&offset=3');
  assert.equal(first.previous, `${t.baseUrl}${base}/?limit=3`);
  assert.equal((await list('?limit=2&offset=100')).results.length, 0);
});

test('D2 retrieve; non-UUID and unknown ids are 404; other projects are not visible', async () => {
  const id = await idOf('purchase');
  const r = await t.request('GET', `${base}/${id}/`);
  assert.equal(r.status, 200);
  assert.equal(r.body.name, 'purchase');
  const bad = await t.request('GET', `${base}/not-a-uuid/`);
  assert.equal(bad.status, 404);
  assert.deepEqual(bad.body, { type: 'invalid_request', code: 'not_found', detail: 'Event definition not found.', attr: null });
  assert.equal((await t.request('GET', `${base}/${crypto.randomUUID()}/`)).status, 404);
  const [p2] = await t.db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token)
    VALUES (${t.organizationId}, 'other', 'phc_other_defs_project') RETURNING id`;
  assert.equal((await t.request('GET', `/api/projects/${p2!.id}/event_definitions/${id}/`)).status, 404);
  assert.equal((await t.request('GET', `/api/projects/${p2!.id}/event_definitions/`)).body.count, 0);
});

test('by_name finds a definition; missing name 400, unknown 404', async () => {
  assert.equal((await t.request('GET', `${base}/by_name/?name=sign`)).body.name, 'sign');
  assert.equal((await t.request('GET', `${base}/by_name/`)).status, 400);
  const r = await t.request('GET', `${base}/by_name/?name=zzz`);
  assert.equal(r.status, 404);
  assert.equal(r.body.detail, "Event definition with name 'zzz' not found");
});

test('D3 writes description, tags, owner, post_to_slack, default_columns; name is read-only', async () => {
  const id = await idOf('checkout started');
  const r = await t.request('PATCH', `${base}/${id}/`, { body: {
    name: 'renamed', description: 'Checkout', tags: [' a ', 'b', 'a', ''], owner: t.userId, post_to_slack: true, default_columns: ['x', 'y'],
  } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.name, 'checkout started');
  assert.equal(r.body.description, 'Checkout');
  assert.deepEqual(r.body.tags, ['a', 'b']);
  assert.equal(r.body.owner.id, t.userId);
  assert.equal(r.body.updated_by.id, t.userId);
  assert.equal(r.body.post_to_slack, true);
  assert.deepEqual(r.body.default_columns, ['x', 'y']);
  assert.deepEqual(names(await list(`?tags=${encodeURIComponent('["b","zzz"]')}`)), ['checkout started']);
  assert.equal((await t.request('PATCH', `${base}/${id}/`, { body: { owner: null } })).body.owner, null);
  const activity = await t.db.sql<{ activity: string; detail: any }[]>`SELECT activity, detail FROM activity_log
    WHERE scope = 'EventDefinition' AND item_id = ${id} ORDER BY created_at`;
  assert.equal(activity[0]!.activity, 'changed');
  assert.equal(activity[0]!.detail.name, 'checkout started');
  assert.deepEqual(activity[0]!.detail.changes.map((c: any) => c.field).sort(), ['default_columns', 'description', 'owner', 'post_to_slack', 'tags']);
});

test('D3 validation errors', async () => {
  const id = await idOf('sign');
  const cases: [unknown, string | null, number][] = [
    [{ hidden: true, verified: true }, null, 400],
    [{ owner: 999999 }, 'owner', 400],
    [{ owner: 'abc' }, 'owner', 400],
    [{ tags: 'a' }, 'tags', 400],
    [{ verified: 'maybe' }, 'verified', 400],
    [{ description: null }, 'description', 400],
    [{ default_columns: 'x' }, 'default_columns', 400],
    [[1, 2], null, 400],
  ];
  for (const [body, attr, status] of cases) {
    const r = await t.request('PATCH', `${base}/${id}/`, { body });
    assert.equal(r.status, status, JSON.stringify(body));
    assert.equal(r.body.attr, attr, JSON.stringify(body));
    assert.equal(r.body.type, 'validation_error');
  }
  const both = await t.request('PATCH', `${base}/${id}/`, { body: { hidden: true, verified: true } });
  assert.equal(both.body.detail, 'An event cannot be both hidden and verified');
  assert.equal((await t.request('PATCH', `${base}/not-a-uuid/`, { body: {} })).status, 404);
});

test('D3 hidden/verified rules', async () => {
  const id = await idOf('signed in');
  const patch = async (body: unknown) => (await t.request('PATCH', `${base}/${id}/`, { body })).body;
  const v1 = await patch({ verified: true });
  assert.equal(v1.verified, true);
  assert.equal(v1.verified_by.id, t.userId);
  assert.ok(v1.verified_at);
  const again = await patch({ verified: true });
  assert.equal(again.verified_at, v1.verified_at, 're-verifying is a no-op');
  const hidden = await patch({ hidden: true });
  assert.deepEqual([hidden.hidden, hidden.verified, hidden.verified_by, hidden.verified_at], [true, false, null, null]);
  const reverified = await patch({ verified: true });
  assert.deepEqual([reverified.hidden, reverified.verified], [false, true], 'verifying un-hides');
  const unverified = await patch({ verified: false });
  assert.deepEqual([unverified.verified, unverified.verified_by, unverified.verified_at], [false, null, null]);
  await patch({ hidden: true });
  assert.ok(!names(await list('?exclude_hidden=true')).includes('signed in'));
  assert.ok(names(await list()).includes('signed in'));
  await patch({ hidden: false, verified: true });
  const verifiedList = names(await list('?verified=true'));
  assert.ok(verifiedList.includes('signed in') && verifiedList.includes('$pageview'), 'verified or core events');
  assert.ok(!verifiedList.includes('purchase'));
  const unverifiedList = names(await list('?verified=false'));
  assert.ok(!unverifiedList.includes('signed in') && !unverifiedList.includes('$pageview') && unverifiedList.includes('purchase'));
});

test('D4 deletes (204, no body); the definition is gone; activity entry; unknown → 404', async () => {
  const id = await idOf('under_score');
  const r = await t.request('DELETE', `${base}/${id}/`);
  assert.equal(r.status, 204);
  assert.equal(r.text, '');
  assert.equal((await t.request('GET', `${base}/${id}/`)).status, 404);
  assert.equal((await t.request('DELETE', `${base}/${id}/`)).status, 404);
  const [a] = await t.db.sql<{ activity: string }[]>`SELECT activity FROM activity_log WHERE scope = 'EventDefinition' AND item_id = ${id}`;
  assert.equal(a!.activity, 'deleted');
});

test('D5 metrics', async () => {
  const id = await idOf('purchase');
  const r = await t.request('GET', `${base}/${id}/metrics/`);
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { query_usage_30_day: 0 });
  assert.equal((await t.request('GET', `${base}/${crypto.randomUUID()}/metrics/`)).status, 404);
  assert.equal((await t.request('GET', `${base}/nope/metrics/`)).status, 404);
});

test('scope matrix', async () => {
  const id = await idOf('purchase completed');
  const read = await t.createKey(['event_definition:read']);
  const write = await t.createKey(['event_definition:write']);
  const other = await t.createKey(['feature_flag:write']);
  const calls: [string, string, unknown][] = [
    ['GET', `${base}/`, undefined], ['GET', `${base}/${id}/`, undefined], ['GET', `${base}/${id}/metrics/`, undefined],
    ['GET', `${base}/by_name/?name=sign`, undefined], ['PATCH', `${base}/${id}/`, { description: 'x' }], ['DELETE', `${base}/${id}/`, undefined],
  ];
  for (const [method, path, body] of calls) {
    const isWrite = method !== 'GET';
    const scope = isWrite ? 'event_definition:write' : 'event_definition:read';
    const rOther = await t.request(method, path, { key: other, body });
    assert.equal(rOther.status, 403, `${method} ${path} other`);
    assert.equal(rOther.body.detail, `API key missing required scope '${scope}'`);
    assert.equal((await t.request(method, path, { key: read, body })).status, isWrite ? 403 : 200, `${method} ${path} read`);
    assert.equal((await t.request(method, path, { key: null, body })).status, 401);
  }
  for (const [method, path, body] of calls) {
    const expect = method === 'DELETE' ? 204 : 200;
    assert.equal((await t.request(method, path, { key: write, body })).status, expect, `${method} ${path} write`);
  }
});
