/**
 * F17 user_blast_radius against a real control plane: persons and groups come
 * from the real ingestion; every count equals a direct count over the generated properties.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { prng } from '../../support/prng.js';

let t: TestControlPlane;
let url: string;
const people: { d: string; props: Record<string, unknown> }[] = [];

before(async () => {
  t = await startTestControlPlane();
  url = `/api/projects/${t.projectId}/feature_flags/user_blast_radius/`;
  const rand = prng(3);
  for (let i = 0; i < 300; i++) {
    const props: Record<string, unknown> = { plan: rand() < 0.4 ? 'pro' : 'free', age: Math.floor(rand() * 60) + 18 };
    if (rand() < 0.5) props.email = `p${i}@${rand() < 0.5 ? 'example.com' : 'mail.test'}`;
    if (rand() < 0.1) props.beta = null;
    people.push({ d: `b-${i}`, props });
  }
  await ingestEvents(t.db.sql, people.map((p) => ({ uuid: crypto.randomUUID(), project_id: t.projectId, event: '$identify', distinct_id: p.d, properties: { $set: p.props }, timestamp: new Date().toISOString() })));
  await ingestEvents(t.db.sql, Array.from({ length: 30 }, (_, i) => ({
    uuid: crypto.randomUUID(), project_id: t.projectId, event: '$groupidentify', distinct_id: 'admin',
    properties: { $group_type: 'company', $group_key: `co-${i}`, $group_set: { size: i * 10 } }, timestamp: new Date().toISOString(),
  })));
});
after(async () => { await t?.close(); });

const count = (f: (p: Record<string, unknown>) => boolean) => people.filter((p) => f(p.props)).length;
/** Every person: the generated ones plus `admin`, who sent the $groupidentify events (no properties). */
const total = () => people.length + 1;

test('person conditions: the count of matching persons out of all persons', async () => {
  const cases: [unknown[], number][] = [
    [[{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }], count((p) => p.plan === 'pro')],
    [[{ key: 'email', type: 'person', operator: 'icontains', value: 'example.com' }], count((p) => typeof p.email === 'string' && p.email.includes('example.com'))],
    [[{ key: 'email', type: 'person', operator: 'is_set', value: 'is_set' }], count((p) => 'email' in p)],
    [[{ key: 'age', type: 'person', operator: 'gt', value: '50' }, { key: 'plan', type: 'person', operator: 'exact', value: ['free'] }],
      count((p) => (p.age as number) > 50 && p.plan === 'free')],
    [[], total()],
  ];
  for (const [properties, expected] of cases) {
    const r = await t.request('POST', url, { body: { condition: { properties, rollout_percentage: 20 }, group_type_index: null } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { users_affected: expected, total_users: total() }, JSON.stringify(properties));
  }
});

test('cohort conditions: a dynamic and a static cohort', async () => {
  const dynamic = await t.request('POST', `/api/projects/${t.projectId}/cohorts/`, { body: { name: 'Pros', filters: { properties: { type: 'AND', values: [{ type: 'person', key: 'plan', operator: 'exact', value: ['pro'] }] } } } });
  const r = await t.request('POST', url, { body: { condition: { properties: [{ key: 'id', type: 'cohort', value: dynamic.body.id }] } } });
  assert.deepEqual(r.body, { users_affected: count((p) => p.plan === 'pro'), total_users: total() });
  const form = new FormData();
  form.set('name', 'Few');
  form.set('is_static', 'true');
  form.set('csv', new Blob(['b-1\nb-2\nb-3\n']), 'f.csv');
  const st = await (await fetch(`${t.baseUrl}/api/projects/${t.projectId}/cohorts/`, { method: 'POST', headers: { authorization: `Bearer ${t.personalKey}` }, body: form })).json() as { id: number };
  const s = await t.request('POST', url, { body: { condition: { properties: [{ key: 'id', type: 'cohort', value: st.id }] } } });
  assert.deepEqual(s.body, { users_affected: 3, total_users: total() });
});

test('group conditions count groups of the type; a property of another type is refused; no condition is 400', async () => {
  const [mapping] = await t.db.sql<{ i: number }[]>`SELECT group_type_index AS i FROM group_type_mappings WHERE project_id = ${t.projectId} AND group_type = 'company'`;
  const i = mapping!.i;
  const r = await t.request('POST', url, { body: { condition: { properties: [{ key: 'size', type: 'group', group_type_index: i, operator: 'gte', value: '100' }] }, group_type_index: i } });
  assert.deepEqual(r.body, { users_affected: 20, total_users: 30 });
  const wrong = await t.request('POST', url, { body: { condition: { properties: [{ key: 'size', type: 'group', group_type_index: i + 1, operator: 'gte', value: '1' }] }, group_type_index: i } });
  assert.deepEqual([wrong.status, wrong.body.detail], [400, 'Invalid group type index for feature flag condition.']);
  const none = await t.request('POST', url, { body: {} });
  assert.deepEqual([none.status, none.body.detail], [400, 'Missing condition for which to get blast radius']);
});
