/**
 * PostHog's scheduled changes of feature flags on a real control plane, its pg-boss job queue
 * and a real evaluation node: the resource's validation and CRUD; a change applied once at its
 * time, as the scheduling user, reaching the node; two control planes on one database applying
 * each change exactly once (add_release_condition appends, so a double application would show);
 * failing payloads recording their failure; a restart before the time still applying it. Times
 * are a couple of seconds ahead; the tests wait for outcomes and never assert durations.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../support/wait.js';
import { createFlag, flags, log, startCluster, waitReady, type SystemCluster } from '../../system/support.js';
import { startControlPlane } from '../../../src/control-plane/index.js';
import type { NodeService } from '../../../src/eval-node/service.js';

let c: SystemCluster;
let node: NodeService;
before(async () => {
  c = await startCluster();
  node = await c.startNode(c.tempDir());
  await waitReady(node.http.url);
});
after(async () => { await c.close(); });

const BASE = (): string => `/api/projects/${c.t.projectId}/scheduled_changes/`;
/** An ISO time `ms` from now. */
const inMs = (ms: number): string => new Date(Date.now() + ms).toISOString();

async function schedule(recordId: number | string, payload: unknown, at: string): Promise<{ id: number }> {
  const r = await c.t.request('POST', BASE(), { body: { record_id: recordId, model_name: 'FeatureFlag', payload, scheduled_at: at } });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

/** The change once it has executed (executed_at set), as the API shows it. */
async function executed(id: number): Promise<Record<string, any>> {
  return waitFor(`change ${id} executed`, async () => {
    const r = await c.t.request('GET', `${BASE()}${id}/`);
    return r.body?.executed_at ? r.body : null;
  }, { timeoutMs: 30_000, intervalMs: 50 });
}

test('create, list, retrieve, delete; validation as PostHog\'s serializer', async () => {
  const flag = await createFlag(c, { key: 'sc-crud' });
  const bad = async (body: unknown) => (await c.t.request('POST', BASE(), { body })).body;
  const ok = { record_id: String(flag.id), model_name: 'FeatureFlag', payload: { operation: 'update_status', value: false }, scheduled_at: '2099-01-01T00:00:00Z' };
  assert.deepEqual(await bad({ ...ok, record_id: undefined }), { type: 'validation_error', code: 'required', detail: 'This field is required.', attr: 'record_id' });
  assert.deepEqual(await bad({ ...ok, model_name: 'Survey' }), { type: 'validation_error', code: 'invalid_choice', detail: '"Survey" is not a valid choice.', attr: 'model_name' });
  assert.equal((await bad({ ...ok, payload: null })).code, 'null');
  assert.deepEqual(await bad({ ...ok, scheduled_at: 'tomorrow' }), {
    type: 'validation_error', code: 'invalid', attr: 'scheduled_at',
    detail: 'Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].',
  });
  assert.equal((await bad({ ...ok, is_recurring: false, recurrence_interval: 'daily' })).detail, 'Cannot set recurrence_interval when is_recurring is false for new schedules.');
  assert.equal((await bad({ ...ok, is_recurring: true, recurrence_interval: 'daily' })).attr, 'is_recurring');
  assert.deepEqual(await bad({ ...ok, record_id: '999999' }), { type: 'validation_error', code: 'invalid', detail: 'Feature flag not found', attr: null });
  const readOnly = await c.t.createKey(['feature_flag:read']);
  assert.equal((await c.t.request('POST', BASE(), { key: readOnly, body: ok })).status, 403);

  const made = await c.t.request('POST', BASE(), { body: { ...ok, scheduled_at: '2099-01-01T02:00:00+02:00' } });
  assert.equal(made.status, 201, made.text);
  const [user] = await c.t.db.sql<{ email: string }[]>`SELECT email FROM users WHERE id = ${c.t.userId}`;
  assert.equal(made.body.team_id, c.t.projectId);
  assert.equal(made.body.record_id, String(flag.id));
  assert.deepEqual(made.body.payload, ok.payload);
  assert.equal(made.body.scheduled_at, '2099-01-01T00:00:00.000Z', 'stored in UTC');
  assert.deepEqual([made.body.executed_at, made.body.failure_reason, made.body.is_recurring], [null, null, false]);
  assert.equal(made.body.created_by.email, user!.email);
  const other = await schedule(flag.id, { operation: 'update_status', value: true }, '2099-02-01T00:00:00Z');

  assert.deepEqual((await c.t.request('GET', `${BASE()}${made.body.id}/`, { key: readOnly })).body, made.body);
  const all = await c.t.request('GET', `${BASE()}?record_id=${flag.id}`);
  assert.deepEqual(all.body.results.map((r: { id: number }) => r.id), [made.body.id, other.id]);
  assert.equal((await c.t.request('GET', `${BASE()}?model_name=Survey`)).body.count, 0);
  assert.equal((await c.t.request('GET', `/api/environments/${c.t.projectId}/scheduled_changes/${other.id}/`)).body.id, other.id);
  assert.equal((await c.t.request('DELETE', `${BASE()}${made.body.id}/`)).status, 204);
  assert.equal((await c.t.request('GET', `${BASE()}${made.body.id}/`)).status, 404);
  assert.equal((await c.t.request('DELETE', `${BASE()}${made.body.id}/`)).status, 404);
});

test('a change scheduled ahead is applied once at its time, as the scheduling user, and reaches the node', async () => {
  const flag = await createFlag(c, { key: 'sc-launch', active: false, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
  // Scheduled by another user of the organization: the flag's activity must name that user.
  const [other] = await c.t.db.sql<{ id: number; email: string }[]>`INSERT INTO users (organization_id, distinct_id, first_name, email)
    VALUES (${c.t.organizationId}, 'scheduler', 'Sam', 'sam@example.com') RETURNING id, email`;
  const { createPersonalApiKey } = await import('../../../src/control-plane/keys/store.js');
  const samKey = (await createPersonalApiKey(c.t.db.sql, { userId: other!.id, label: 't', scopes: ['feature_flag:write'], scopedTeams: [] })).value;
  const deletedFirst = await schedule(flag.id, { operation: 'add_release_condition', value: { groups: [{ properties: [], rollout_percentage: 0 }] } }, inMs(1_500));
  assert.equal((await c.t.request('DELETE', `${BASE()}${deletedFirst.id}/`)).status, 204);
  const r = await c.t.request('POST', BASE(), { key: samKey, body: { record_id: flag.id, model_name: 'FeatureFlag', payload: { operation: 'update_status', value: true }, scheduled_at: inMs(2_000) } });
  assert.equal(r.status, 201, r.text);

  await waitFor('the node serving the flag on', async () => (await flags(node.http.url, c.t.projectKey, 'u')).body?.flags?.['sc-launch']?.enabled === true, { timeoutMs: 30_000 });
  const done = await executed(r.body.id);
  assert.equal(done.failure_reason, null);
  assert.ok(Date.parse(done.executed_at) >= Date.parse(done.scheduled_at), 'not applied before its time');
  const now = (await c.t.request('GET', `/api/projects/${c.t.projectId}/feature_flags/${flag.id}/`)).body;
  assert.equal(now.active, true);
  assert.equal(now.version, flag.version + 1, 'applied exactly once; the deleted change never');
  assert.equal(now.filters.groups.length, 1);
  assert.equal(now.last_modified_by.email, other!.email);
  const activity = (await c.t.request('GET', `/api/projects/${c.t.projectId}/feature_flags/${flag.id}/activity/`)).body.results;
  assert.equal(activity[0].user.email, other!.email, 'activity as the scheduling user');
  assert.ok(activity[0].detail.changes.some((ch: { field: string; after: unknown }) => ch.field === 'active' && ch.after === true), JSON.stringify(activity[0]));
});

test('two control planes on one database apply each change exactly once', async () => {
  const second = await startControlPlane({ ...c.t.config, apiPort: 0, grpcPort: 0 }, log, c.t.db.url);
  try {
    const flag = await createFlag(c, { key: 'sc-twice', filters: { groups: [{ properties: [], rollout_percentage: 0 }] } });
    const condition = (i: number) => ({ operation: 'add_release_condition', value: { groups: [{ properties: [{ key: 'n', value: [String(i)], operator: 'exact', type: 'person' }], rollout_percentage: 100 }] } });
    const at = inMs(2_000);
    const ids: number[] = [];
    // Created through both control planes: each enqueues on the shared queue; both work it.
    for (let i = 0; i < 6; i++) {
      const base = i % 2 === 0 ? c.t.baseUrl : second.http.url;
      const res = await fetch(`${base}${BASE()}`, {
        method: 'POST', headers: { authorization: `Bearer ${c.t.personalKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ record_id: flag.id, model_name: 'FeatureFlag', payload: condition(i), scheduled_at: at }),
      });
      assert.equal(res.status, 201);
      ids.push(((await res.json()) as { id: number }).id);
    }
    for (const id of ids) assert.equal((await executed(id)).failure_reason, null);
    const now = (await c.t.request('GET', `/api/projects/${c.t.projectId}/feature_flags/${flag.id}/`)).body;
    assert.equal(now.filters.groups.length, 1 + ids.length, 'each condition appended once');
    assert.deepEqual(now.filters.groups.slice(1).map((g: { properties: { value: string[] }[] }) => g.properties[0]!.value[0]).sort(), ['0', '1', '2', '3', '4', '5']);
    assert.equal(now.version, flag.version + ids.length);
    await waitFor('the last condition on the node', async () => (await flags(node.http.url, c.t.projectKey, 'u', { person_properties: { n: '5' } })).body?.flags?.['sc-twice']?.enabled === true);
  } finally {
    await second.close();
  }
});

test('a failing payload records its failure on the change and leaves the flag alone', async () => {
  const flag = await createFlag(c, { key: 'sc-fail', filters: { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: { variants: [{ key: 'a', rollout_percentage: 100 }] } } });
  const at = inMs(1_000);
  const unknownOp = await schedule(flag.id, { operation: 'explode', value: 1 }, at);
  const noValue = await schedule(flag.id, { operation: 'update_status' }, at);
  const badSum = await schedule(flag.id, { operation: 'update_variants', value: { variants: [{ key: 'a', rollout_percentage: 60 }], payloads: {} } }, at);
  const refused = await schedule(flag.id, { operation: 'update_status', value: 'sometimes' }, at);
  const gone = await createFlag(c, { key: 'sc-gone' });
  const orphan = await schedule(gone.id, { operation: 'update_status', value: false }, at);
  assert.equal((await c.t.request('PATCH', `/api/projects/${c.t.projectId}/feature_flags/${gone.id}/`, { body: { deleted: true } })).status, 200);

  assert.equal((await executed(unknownOp.id)).failure_reason, 'Unrecognized operation: explode (permanent error)');
  assert.equal((await executed(noValue.id)).failure_reason, 'Invalid payload (permanent error)');
  assert.equal((await executed(badSum.id)).failure_reason, 'Invalid variant rollout percentages: sum is 60, must be 100 (permanent error)');
  assert.equal((await executed(refused.id)).failure_reason, 'Must be a valid boolean. (permanent error)');
  assert.equal((await executed(orphan.id)).failure_reason, 'FeatureFlag matching query does not exist. (permanent error)');
  const [row] = await c.t.db.sql<{ failure_reason: string; failure_count: number }[]>`SELECT failure_reason, failure_count FROM scheduled_changes WHERE id = ${unknownOp.id}`;
  assert.equal(row!.failure_count, 1);
  assert.deepEqual(JSON.parse(row!.failure_reason), {
    error: 'Unrecognized operation: explode', error_type: 'Exception', will_retry: false, retry_count: 1, max_retries: 5, error_classification: 'unrecoverable',
  });
  const now = (await c.t.request('GET', `/api/projects/${c.t.projectId}/feature_flags/${flag.id}/`)).body;
  assert.equal(now.version, flag.version, 'no failed change touched the flag');
});

test('a restart before the time still applies the change', async () => {
  const flag = await createFlag(c, { key: 'sc-restart', active: false });
  const change = await schedule(flag.id, { operation: 'update_status', value: true }, inMs(2_500));
  await c.restartControlPlane();
  const done = await executed(change.id);
  assert.equal(done.failure_reason, null);
  await waitFor('the node serving the flag on', async () => (await flags(node.http.url, c.t.projectKey, 'u')).body?.flags?.['sc-restart']?.enabled === true, { timeoutMs: 30_000 });
});
