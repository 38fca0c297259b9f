/**
 * The control plane's answers for one person equal
 * what a real node serves on `/flags` for that person (stored properties, static cohort, rollout,
 * variants) — the same evaluation core over the same stored state — and bulk_keys follows
 * PostHog's shapes. One control plane and one node serve the file.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { keepAliveClient } from '../support/keep-alive.js';
import { waitFor } from '../support/wait.js';
import { ingestEvents } from '../../src/control-plane/ingestion/service.js';
import { createFlag, flags, startCluster, waitReady, type SystemCluster } from './support.js';

/** One control plane and node serve the file (the cases use flags and persons of their own: h-…, s-…). */
let c: SystemCluster;
let node: Awaited<ReturnType<SystemCluster['startNode']>>;

before(async () => {
  c = await startCluster();
  node = await c.startNode(c.tempDir());
  await waitReady(node.http.url);
});

after(async () => {
  await c?.close();
});

test('evaluation_reasons and my_flags equal the node\'s /flags; bulk_keys maps ids to keys', async () => {
  const t = c.t;
  const people = Array.from({ length: 40 }, (_, i) => `h-${i}`);
  const [user] = await t.db.sql<{ distinct_id: string }[]>`SELECT distinct_id FROM users WHERE id = ${t.userId}`;
  await ingestEvents(t.db.sql, [...people, user!.distinct_id].map((d, i) => ({
    uuid: crypto.randomUUID(), project_id: t.projectId, event: '$identify', distinct_id: d,
    properties: { $set: { email: i % 3 === 0 ? `${d}@example.com` : `${d}@mail.test`, plan: i % 2 ? 'pro' : 'free' } }, timestamp: new Date().toISOString(),
  })));
  const form = new FormData();
  form.set('name', 'Static');
  form.set('is_static', 'true');
  form.set('csv', new Blob([people.slice(0, 7).join('\n')]), 'c.csv');
  const cohort = await (await fetch(`${t.baseUrl}/api/projects/${t.projectId}/cohorts/`, { method: 'POST', headers: { authorization: `Bearer ${t.personalKey}` }, body: form })).json() as { id: number };
  const email = await createFlag(c, { key: 'h-email', filters: { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }], rollout_percentage: 100 }] } });
  await createFlag(c, { key: 'h-rollout', filters: { groups: [{ properties: [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }], rollout_percentage: 50 }, { properties: [], rollout_percentage: 10 }] } });
  await createFlag(c, { key: 'h-mv', filters: { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: { variants: [{ key: 'a', rollout_percentage: 30 }, { key: 'b', rollout_percentage: 70 }] } } });
  await createFlag(c, { key: 'h-static', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: cohort.id }], rollout_percentage: 100 }] } });
  await createFlag(c, { key: 'h-off', active: false, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });

  await waitFor('the node knows the persons and flags', async () => {
    const r = await flags(node.http.url, t.projectKey, people[0]!);
    return r.body?.flags?.['h-email']?.enabled === true && r.body.flags['h-static']?.enabled === true;
  }, { timeoutMs: 30_000 });

  for (const d of people) {
    const served = (await flags(node.http.url, t.projectKey, d)).body.flags as Record<string, { enabled: boolean; variant: string | null; reason: { code: string; condition_index: number | null } }>;
    const reasons = await t.request('GET', `/api/projects/${t.projectId}/feature_flags/evaluation_reasons/?distinct_id=${d}`);
    assert.equal(reasons.status, 200, reasons.text);
    for (const key of ['h-email', 'h-rollout', 'h-mv', 'h-static']) {
      const s = served[key]!;
      assert.deepEqual(reasons.body[key], { value: s.variant ?? s.enabled, evaluation: { reason: s.reason.code, condition_index: s.reason.condition_index } }, `${d} ${key}`);
    }
    assert.deepEqual(reasons.body['h-off'], { value: false, evaluation: { reason: 'disabled', condition_index: null } });
  }
  const missing = await t.request('GET', `/api/projects/${t.projectId}/feature_flags/evaluation_reasons/`);
  assert.deepEqual([missing.status, missing.body.attr], [400, 'distinct_id']);
  const badGroups = await t.request('GET', `/api/projects/${t.projectId}/feature_flags/evaluation_reasons/?distinct_id=x&groups=nope`);
  assert.deepEqual([badGroups.status, badGroups.body.detail], [400, 'Invalid JSON in groups parameter']);

  const mine = await t.request('GET', `/api/projects/${t.projectId}/feature_flags/my_flags/`);
  assert.equal(mine.status, 200, mine.text);
  const servedMine = (await flags(node.http.url, t.projectKey, user!.distinct_id)).body.flags as Record<string, { enabled: boolean; variant: string | null }>;
  const own = (mine.body as { feature_flag: { key: string; active: boolean }; value: unknown }[]).filter((m) => m.feature_flag.key.startsWith('h-'));
  assert.deepEqual(own.map((m) => m.feature_flag.key), ['h-off', 'h-static', 'h-mv', 'h-rollout', 'h-email']);
  for (const m of own) {
    const s = servedMine[m.feature_flag.key];
    assert.deepEqual(m.value, m.feature_flag.active ? (s!.variant ?? s!.enabled) : false, m.feature_flag.key);
  }

  const keys = await t.request('POST', `/api/projects/${t.projectId}/feature_flags/bulk_keys/`, { body: { ids: [email.id, String(email.id + 1), 999999, 'x'] } });
  assert.equal(keys.status, 200);
  assert.deepEqual(keys.body.keys, { [String(email.id)]: 'h-email', [String(email.id + 1)]: 'h-rollout' });
  assert.equal(keys.body.warning, 'Invalid flag IDs ignored: ["x"]');
  assert.deepEqual((await t.request('POST', `/api/projects/${t.projectId}/feature_flags/bulk_keys/`, { body: {} })).body, { keys: {} });
  const bad = await t.request('POST', `/api/projects/${t.projectId}/feature_flags/bulk_keys/`, { body: { ids: ['x', -1] } });
  assert.deepEqual([bad.status, bad.body], [400, { error: 'Invalid flag IDs provided' }]);
});

test('create_static_cohort_for_flag: the members are exactly the persons the node serves the flag to (1,000 persons), and a node matches the cohort', async () => {
  const t = c.t;
  const people = Array.from({ length: 1000 }, (_, i) => `s-${i}`);
  for (let i = 0; i < people.length; i += 250) {
    await ingestEvents(t.db.sql, people.slice(i, i + 250).map((d, j) => ({
      uuid: crypto.randomUUID(), project_id: t.projectId, event: '$identify', distinct_id: d,
      properties: { $set: { plan: (i + j) % 4 === 0 ? 'free' : 'pro' } }, timestamp: new Date().toISOString(),
    })));
  }
  const flag = await createFlag(c, { key: 's-rollout', filters: { groups: [{ properties: [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }], rollout_percentage: 40 }] } });
  const r = await t.request('POST', `/api/projects/${t.projectId}/feature_flags/${flag.id}/create_static_cohort_for_flag/`, { body: {} });
  assert.equal(r.status, 201, r.text);
  assert.match(r.body.cohort.name, /^Users with feature flag s-rollout enabled at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  assert.equal(r.body.cohort.is_static, true);
  const cohortId = r.body.cohort.id as number;
  const done = await waitFor('cohort filled', async () => {
    const g = await t.request('GET', `/api/projects/${t.projectId}/cohorts/${cohortId}/`);
    return g.body.is_calculating === false ? g.body : null;
  }, { timeoutMs: 60_000, intervalMs: 200 });
  const members = new Set((await t.db.sql<{ d: string }[]>`SELECT d.distinct_id AS d FROM cohort_people cp
    JOIN person_distinct_ids d ON d.person_id = cp.person_id WHERE cp.cohort_id = ${cohortId}`).map((x) => x.d));
  assert.equal(done.count, members.size);

  await createFlag(c, { key: 's-members', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: cohortId }], rollout_percentage: 100 }] } });
  await waitFor('the node serves both flags', async () => (await flags(node.http.url, t.projectKey, people[1]!)).body?.flags?.['s-members'] !== undefined, { timeoutMs: 30_000 });
  let enabled = 0;
  const http = keepAliveClient(50); // 1,000 requests over reused connections: a third of fetch's CPU each
  try {
    for (let i = 0; i < people.length; i += 50) {
      await Promise.all(people.slice(i, i + 50).map(async (d) => {
        const r = await http.post(`${node.http.url}/flags?v=2`, { api_key: t.projectKey, distinct_id: d });
        assert.equal(r.status, 200, r.text);
        const served = r.body.flags;
        assert.equal(members.has(d), served['s-rollout'].enabled, d);
        assert.equal(served['s-members'].enabled, served['s-rollout'].enabled, `${d} matches the cohort on the node`);
        if (served['s-rollout'].enabled) enabled++;
      }));
    }
  } finally {
    http.close();
  }
  assert.ok(enabled > 200 && enabled < 400, `${enabled} of 1,000 enabled`);
});
