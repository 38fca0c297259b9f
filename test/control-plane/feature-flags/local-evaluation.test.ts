/** F15 local_evaluation over real HTTP and Postgres: feed shape, dependency rewrite, cohorts, ETag, scope, quota. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { setMonthlyFlagRequestLimit, recordFlagRequestUsage, usagePeriod } from '../../../src/control-plane/quota/service.js';

let t: TestControlPlane;
let base: string;
let cohortId: number;
let staticCohortId: number;

before(async () => {
  t = await startTestControlPlane();
  base = `/api/projects/${t.projectId}/feature_flags`;
  [{ id: cohortId }] = await t.db.sql<{ id: number }[]>`INSERT INTO cohorts (project_id, name, filters)
    VALUES (${t.projectId}, 'paid', ${t.db.sql.json({ properties: { type: 'OR', values: [{ type: 'AND', values: [{ key: 'plan', type: 'person', value: ['pro'], operator: 'exact' }] }] } })}) RETURNING id`;
  [{ id: staticCohortId }] = await t.db.sql<{ id: number }[]>`INSERT INTO cohorts (project_id, name, is_static) VALUES (${t.projectId}, 'list', true) RETURNING id`;
});
after(async () => { await t.close(); });

async function create(body: Record<string, unknown>): Promise<{ id: number; key: string }> {
  const r = await t.request('POST', `${base}/`, { body });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body;
}

test('feed: live non-remote flags, dependency keys with dependency_chain, referenced non-static cohorts', async () => {
  const dep = await create({ key: 'base-flag', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
  await create({ key: 'child-flag', filters: { groups: [{ properties: [
    { key: String(dep.id), type: 'flag', operator: 'flag_evaluates_to', value: true },
    { key: 'id', type: 'cohort', value: cohortId },
    { key: 'id', type: 'cohort', value: staticCohortId }], rollout_percentage: 50 }] } });
  await create({ key: 'remote', is_remote_configuration: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
  const gone = await create({ key: 'gone', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
  assert.equal((await t.request('PATCH', `${base}/${gone.id}/`, { body: { deleted: true } })).status, 200);

  const r = await t.request('GET', `${base}/local_evaluation/?send_cohorts`);
  assert.equal(r.status, 200);
  const keys = r.body.flags.map((f: { key: string }) => f.key);
  assert.deepEqual(keys.sort(), ['base-flag', 'child-flag']);
  const child = r.body.flags.find((f: { key: string }) => f.key === 'child-flag');
  const depFilter = child.filters.groups[0].properties[0];
  assert.equal(depFilter.key, 'base-flag');
  assert.deepEqual(depFilter.dependency_chain, ['base-flag']);
  assert.deepEqual(Object.keys(r.body.cohorts), [String(cohortId)], 'static cohorts are left out');
  assert.deepEqual(r.body.group_type_mapping, { 0: 'organization' });
  for (const field of ['id', 'team_id', 'name', 'key', 'filters', 'deleted', 'active', 'ensure_experience_continuity', 'has_encrypted_payloads', 'version', 'evaluation_runtime', 'bucketing_identifier', 'evaluation_tags']) {
    assert.ok(field in child, field);
  }
  const noCohorts = await t.request('GET', `${base}/local_evaluation/`);
  assert.deepEqual(noCohorts.body.cohorts, {});
});

test('ETag and If-None-Match → 304; a change gives a new ETag', async () => {
  const first = await t.request('GET', `${base}/local_evaluation/?send_cohorts`);
  const etag = first.headers.get('etag')!;
  assert.match(etag, /^W\/"[0-9a-f]{40}"$/);
  assert.equal(first.headers.get('cache-control'), 'private, must-revalidate');
  const again = await t.request('GET', `${base}/local_evaluation/?send_cohorts`, { headers: { 'if-none-match': etag } });
  assert.equal(again.status, 304);
  assert.equal(again.text, '');
  await create({ key: `another-${Date.now()}`, filters: { groups: [{ properties: [], rollout_percentage: 10 }] } });
  const changed = await t.request('GET', `${base}/local_evaluation/?send_cohorts`, { headers: { 'if-none-match': etag } });
  assert.equal(changed.status, 200);
  assert.notEqual(changed.headers.get('etag'), etag);
});

test('scope feature_flag:read is required', async () => {
  const other = await t.createKey(['experiment:read']);
  const r = await t.request('GET', `${base}/local_evaluation/`, { key: other });
  assert.equal(r.status, 403);
  assert.equal(r.body.detail, "API key missing required scope 'feature_flag:read'");
  const reader = await t.createKey(['feature_flag:read']);
  assert.equal((await t.request('GET', `${base}/local_evaluation/`, { key: reader })).status, 200);
});

test('over the flag quota → 402 quota_limited', async () => {
  await setMonthlyFlagRequestLimit(t.db.sql, t.organizationId, 1);
  await recordFlagRequestUsage(t.db.sql, new Map([[t.organizationId, 5]]), usagePeriod(new Date()));
  const r = await t.request('GET', `${base}/local_evaluation/`);
  assert.equal(r.status, 402);
  assert.deepEqual(r.body, { type: 'quota_limited', code: 'payment_required', detail: 'You have exceeded your feature flag request quota', attr: null });
  await setMonthlyFlagRequestLimit(t.db.sql, t.organizationId, null);
  assert.equal((await t.request('GET', `${base}/local_evaluation/`)).status, 200);
});
