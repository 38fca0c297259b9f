/**
 * The cohorts API against a real control plane and Postgres: CRUD with soft
 * delete, validation, dynamic counts from persons and from events (behavioural filters),
 * static cohorts from a CSV upload (multipart) with their members on the change log, scopes.
 * Persons and events are written by the real ingestion (`ingestEvents`).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { waitFor } from '../../support/wait.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';

let t: TestControlPlane;
let base: string;

/** Captures `event` for `distinctId` with `properties` (persons get `$set`), through real ingestion. */
async function capture(distinctId: string, event: string, properties: Record<string, unknown> = {}, at = new Date()): Promise<void> {
  const r = await ingestEvents(t.db.sql, [{ uuid: crypto.randomUUID(), project_id: t.projectId, event, distinct_id: distinctId, properties, timestamp: at.toISOString() }]);
  assert.equal(r.invalid ?? 0, 0);
}

async function calculated(id: number): Promise<Record<string, any>> {
  return waitFor(`cohort ${id} calculated`, async () => {
    const r = await t.request('GET', `${base}${id}/`);
    return r.body.is_calculating === false && r.body.count !== null ? r.body : null;
  });
}

before(async () => {
  t = await startTestControlPlane();
  base = `/api/projects/${t.projectId}/cohorts/`;
  // 10 persons: 4 on pro, 6 on free; pro-0 and free-0 bought twice, pro-1 once.
  for (let i = 0; i < 10; i++) {
    const plan = i < 4 ? 'pro' : 'free';
    await capture(`${plan}-${i}`, '$identify', { $set: { plan, email: `${plan}-${i}@example.com` } });
  }
  const day = 24 * 3600 * 1000;
  for (const [who, n] of [['pro-0', 2], ['free-4', 2], ['pro-1', 1]] as const) {
    for (let k = 0; k < n; k++) await capture(who, 'purchase', { amount: 10 }, new Date(Date.now() - (k + 1) * day));
  }
  await capture('pro-2', 'purchase', {}, new Date(Date.now() - 90 * day)); // outside a 30-day window
});
after(async () => { await t?.close(); });

const proFilter = { properties: { type: 'AND', values: [{ type: 'person', key: 'plan', value: ['pro'], operator: 'exact' }] } };

test('a dynamic cohort is created, listed and counted from stored persons', async () => {
  const r = await t.request('POST', base, { body: { name: 'Pro users', filters: proFilter } });
  assert.equal(r.status, 201);
  assert.equal(r.body.name, 'Pro users');
  assert.equal(r.body.is_static, false);
  assert.equal(r.body.cohort_type, 'person_property');
  assert.equal(r.body.created_by.id, t.userId);
  const done = await calculated(r.body.id);
  assert.equal(done.count, 4);
  const list = await t.request('GET', `${base}?search=pro`);
  assert.ok(list.body.results.some((c: { id: number }) => c.id === r.body.id));
});

test('behavioural cohorts count persons from stored events, with windows, counts and negation', async () => {
  const bought = { type: 'behavioral', value: 'performed_event', key: 'purchase', event_type: 'events', time_value: 30, time_interval: 'day' };
  const once = await t.request('POST', base, { body: { name: 'Buyers', filters: { properties: { type: 'OR', values: [bought] } } } });
  assert.equal(once.status, 201);
  assert.equal(once.body.cohort_type, 'behavioral');
  assert.equal((await calculated(once.body.id)).count, 3); // pro-0, free-4, pro-1 (pro-2 bought 90 days ago)
  const twice = await t.request('POST', base, {
    body: { name: 'Repeat', filters: { properties: { type: 'AND', values: [{ ...bought, value: 'performed_event_multiple', operator: 'gte', operator_value: 2 }] } } },
  });
  assert.equal((await calculated(twice.body.id)).count, 2);
  const proNonBuyers = await t.request('POST', base, {
    body: { name: 'Pro non-buyers', filters: { properties: { type: 'AND', values: [proFilter.properties.values[0], { ...bought, negation: true }] } } },
  });
  assert.equal((await calculated(proNonBuyers.body.id)).count, 2); // pro-2, pro-3
  const nested = await t.request('POST', base, {
    body: { name: 'In Buyers', filters: { properties: { type: 'AND', values: [{ type: 'cohort', key: 'id', value: once.body.id }] } } },
  });
  assert.equal((await calculated(nested.body.id)).count, 3);
});

test('validation: bodies, filter shapes, unknown cohorts and reference loops are 400 naming the field', async () => {
  const cases: [unknown, string | null, RegExp][] = [
    [[1], null, /^Invalid data\. Expected a dictionary, but got list\.$/],
    [{ name: 'x', filters: [] }, 'filters', /Expected a dictionary of items but got type "list"/],
    [{ name: 'x', filters: { properties: { type: 'XOR', values: [] } } }, 'filters', /AND" or "OR/],
    [{ name: 'x', filters: { properties: { type: 'AND', values: [{ type: 'event', key: 'a', value: 1 }] } } }, 'filters', /not supported in cohorts/],
    [{ name: 'x', filters: { properties: { type: 'AND', values: [{ type: 'cohort', key: 'id', value: 999999 }] } } }, 'filters', /Cohort with id 999999 does not exist/],
    [{ name: 'x', filters: { properties: { type: 'AND', values: [{ type: 'person', key: 'a', operator: 'bogus', value: 1 }] } } }, 'filters', /Invalid cohort filters/],
    [{ name: 'x', filters: { properties: { type: 'AND', values: [{ type: 'OR', values: [{ type: 'person', key: 'email', operator: 'regex', value: '(?i)\\w{1,1000}!' }] }] } } }, 'filters',
      /^Invalid regex pattern \(\?i\)\\w\{1,1000\}! \(person property "email"\): the compiled pattern is too large \(about \d+ program units, more than 250000\)\.$/],
    [{ name: 'x', filters: { properties: { type: 'AND', values: [{ type: 'person', key: 'name', operator: 'not_regex', value: '([a-z' }] } } }, 'filters', /^Invalid regex pattern \(\[a-z \(person property "name"\): /],
    [{ name: 'x'.repeat(401) }, 'name', /no more than 400 characters/],
    [{ name: 'x', is_static: 'maybe' }, 'is_static', /Must be a valid boolean/],
  ];
  for (const [body, attr, detail] of cases) {
    const r = await t.request('POST', base, { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.attr, attr, JSON.stringify(body));
    assert.match(r.body.detail, detail);
  }
  const a = await t.request('POST', base, { body: { name: 'A', filters: proFilter } });
  const b = await t.request('POST', base, { body: { name: 'B', filters: { properties: { type: 'AND', values: [{ type: 'cohort', key: 'id', value: a.body.id }] } } } });
  const loop = await t.request('PATCH', `${base}${a.body.id}/`, { body: { filters: { properties: { type: 'AND', values: [{ type: 'cohort', key: 'id', value: b.body.id }] } } } });
  assert.equal(loop.status, 400);
  assert.equal(loop.body.detail, 'Cohorts cannot reference other cohorts in a loop.');
  const toStatic = await t.request('PATCH', `${base}${a.body.id}/`, { body: { is_static: true } });
  assert.equal(toStatic.status, 400);
  assert.equal(toStatic.body.attr, 'is_static');
});

test('soft delete: PATCH deleted hides the cohort, DELETE is 405 with no body, restore brings it back; a cohort used by a flag cannot be deleted', async () => {
  const c = await t.request('POST', base, { body: { name: 'Temp', filters: proFilter } });
  const id = c.body.id as number;
  const del = await t.request('DELETE', `${base}${id}/`);
  assert.equal(del.status, 405);
  assert.equal(del.text, '');
  assert.equal((await t.request('PATCH', `${base}${id}/`, { body: { deleted: true } })).status, 200);
  assert.equal((await t.request('GET', `${base}${id}/`)).status, 404);
  assert.equal((await t.request('GET', base)).body.results.some((x: { id: number }) => x.id === id), false);
  assert.equal((await t.request('PATCH', `${base}${id}/`, { body: { name: 'still gone' } })).status, 404);
  const restored = await t.request('PATCH', `${base}${id}/`, { body: { deleted: false } });
  assert.equal(restored.status, 200);
  assert.equal(restored.body.deleted, false);
  const flag = await t.request('POST', `/api/projects/${t.projectId}/feature_flags/`, {
    body: { key: 'uses-temp', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: id }], rollout_percentage: 100 }] } },
  });
  assert.equal(flag.status, 201);
  const blocked = await t.request('PATCH', `${base}${id}/`, { body: { deleted: true } });
  assert.equal(blocked.status, 400);
  assert.match(blocked.body.detail, /uses-temp/);
  const activity = await t.db.sql`SELECT activity FROM activity_log WHERE scope = 'Cohort' AND item_id = ${String(id)} ORDER BY created_at`;
  assert.deepEqual(activity.map((a) => a.activity), ['created', 'deleted', 'restored']);
});

test('static cohort: a multipart CSV upload adds the known distinct ids, the persons carry the cohort on the change log, and PATCH appends', async () => {
  const form = new FormData();
  form.set('name', 'Beta testers');
  form.set('is_static', 'true');
  form.set('csv', new Blob(['distinct_id\npro-0\nfree-5\nnobody-here\n\npro-0\n'], { type: 'text/csv' }), 'beta.csv');
  const res = await fetch(t.baseUrl + base, { method: 'POST', headers: { authorization: `Bearer ${t.personalKey}` }, body: form });
  const body = await res.json() as Record<string, any>;
  assert.equal(res.status, 201, JSON.stringify(body));
  assert.equal(body.is_static, true);
  assert.equal(body.cohort_type, 'static');
  assert.equal(body.count, 2); // nobody-here has no person; duplicates count once
  const persons = await t.request('GET', `${base}${body.id}/persons/`);
  assert.deepEqual(persons.body.results.map((p: { distinct_ids: string[] }) => p.distinct_ids[0]).sort(), ['free-5', 'pro-0']);
  const [entry] = await t.db.sql<{ payload: { cohort_ids?: number[]; distinct_ids: string[] } }[]>`
    SELECT payload FROM change_log WHERE kind = 'person' AND payload->'distinct_ids' ? 'free-5' ORDER BY revision DESC LIMIT 1`;
  assert.deepEqual(entry!.payload.cohort_ids, [body.id]);

  const more = new FormData();
  more.set('csv', new Blob(['pro-3\n'], { type: 'text/csv' }), 'more.csv');
  const patched = await fetch(`${t.baseUrl}${base}${body.id}/`, { method: 'PATCH', headers: { authorization: `Bearer ${t.personalKey}` }, body: more });
  assert.equal(patched.status, 200);
  assert.equal(((await patched.json()) as { count: number }).count, 3);

  const dynamic = new FormData();
  dynamic.set('name', 'nope');
  dynamic.set('csv', new Blob(['pro-3\n']), 'x.csv');
  const refused = await fetch(t.baseUrl + base, { method: 'POST', headers: { authorization: `Bearer ${t.personalKey}` }, body: dynamic });
  assert.equal(refused.status, 400);
  assert.equal(((await refused.json()) as { attr: string }).attr, 'csv');
});

test('scopes: cohort:read reads but cannot write; no scope cannot read', async () => {
  const reader = await t.createKey(['cohort:read']);
  assert.equal((await t.request('GET', base, { key: reader })).status, 200);
  const w = await t.request('POST', base, { key: reader, body: { name: 'x' } });
  assert.equal(w.status, 403);
  assert.equal(w.body.detail, "API key missing required scope 'cohort:write'");
  const none = await t.createKey(['feature_flag:read']);
  assert.equal((await t.request('GET', base, { key: none })).status, 403);
});
