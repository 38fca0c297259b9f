/** F1–F5 over real HTTP and Postgres: create with every default, retrieve, update, versioning, soft delete, restore, key reuse. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';

let t: TestControlPlane;
let base: string;
before(async () => { t = await startTestControlPlane(); base = `/api/projects/${t.projectId}/feature_flags/`; });
after(async () => { await t.close(); });

const READ_FIELDS = [
  'id', 'name', 'key', 'filters', 'deleted', 'active', 'created_by', 'created_at', 'updated_at', 'version', 'last_modified_by',
  'is_simple_flag', 'rollout_percentage', 'ensure_experience_continuity', 'experiment_set', 'surveys', 'features',
  'rollback_conditions', 'performed_rollback', 'can_edit', 'tags', 'evaluation_tags', 'usage_dashboard', 'analytics_dashboards',
  'has_enriched_analytics', 'user_access_level', 'creation_context', 'is_remote_configuration', 'has_encrypted_payloads', 'status',
  'evaluation_runtime', 'last_called_at', '_create_in_folder', '_should_create_usage_dashboard',
];

test('create with only a key: 201 and every default', async () => {
  const r = await t.request('POST', base, { body: { key: 'only-key' } });
  assert.equal(r.status, 201, r.text);
  const f = r.body;
  for (const field of READ_FIELDS) assert.ok(field in f, `missing ${field}`);
  assert.equal(typeof f.id, 'number');
  assert.equal(f.key, 'only-key');
  assert.equal(f.name, '');
  assert.deepEqual(f.filters, { groups: [{ properties: [], rollout_percentage: null }] });
  assert.equal(f.deleted, false);
  assert.equal(f.active, true);
  assert.equal(f.version, 1);
  assert.equal(f.created_by.id, t.userId);
  assert.deepEqual(Object.keys(f.created_by).sort(), ['distinct_id', 'email', 'first_name', 'hedgehog_config', 'id', 'is_email_verified', 'last_name', 'role_at_organization', 'uuid']);
  assert.deepEqual(f.last_modified_by, f.created_by);
  assert.equal(f.is_simple_flag, true);
  assert.equal(f.rollout_percentage, null);
  assert.equal(f.ensure_experience_continuity, false);
  assert.deepEqual([f.experiment_set, f.surveys, f.features, f.tags, f.evaluation_tags, f.analytics_dashboards], [[], [], [], [], [], []]);
  assert.equal(f.rollback_conditions, null);
  assert.equal(f.performed_rollback, null);
  assert.equal(f.can_edit, true);
  assert.equal(f.user_access_level, 'editor');
  // PostHog creates the usage dashboard with the flag (research §1.1).
  const usage = await t.request('GET', `/api/projects/${t.projectId}/dashboards/${f.usage_dashboard}/`);
  assert.equal(usage.status, 200, usage.text);
  assert.equal(usage.body.name, `Generated Dashboard: ${f.key} Usage`);
  assert.equal(f.has_enriched_analytics, false);
  assert.equal(f.creation_context, 'feature_flags');
  assert.equal(f.is_remote_configuration, false);
  assert.equal(f.has_encrypted_payloads, false);
  assert.equal(f.status, 'ACTIVE');
  assert.equal(f.evaluation_runtime, 'all');
  assert.equal(f.last_called_at, null);
  assert.ok(!Number.isNaN(Date.parse(f.created_at)) && !Number.isNaN(Date.parse(f.updated_at)));
  assert.ok(Date.parse(f.updated_at) >= Date.parse(f.created_at), `updated_at ${f.updated_at} before created_at ${f.created_at}`);
  const got = await t.request('GET', `${base}${f.id}/`);
  assert.equal(got.status, 200);
  assert.deepEqual({ ...got.body, status: f.status }, f);
});

test('create with a full body stores and returns every writable field', async () => {
  const body = {
    key: 'full_flag-1', name: 'A description', active: false, ensure_experience_continuity: true,
    rollback_conditions: [{ threshold: 5 }], tags: ['  Beta ', 'beta', 'Growth'], evaluation_tags: ['BETA'],
    has_enriched_analytics: true, creation_context: 'experiments', is_remote_configuration: true, evaluation_runtime: 'client',
    _create_in_folder: 'Unfiled/Flags',
    filters: {
      groups: [{ properties: [{ key: 'email', type: 'person', value: '@x.com', operator: 'icontains' }], rollout_percentage: 50 }],
      multivariate: { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] },
      payloads: { control: { a: 1, b: 'é' }, test: '"x"' },
    },
  };
  const r = await t.request('POST', base, { body });
  assert.equal(r.status, 201, r.text);
  const f = r.body;
  assert.equal(f.name, 'A description');
  assert.equal(f.active, false);
  assert.equal(f.ensure_experience_continuity, true);
  assert.deepEqual(f.rollback_conditions, [{ threshold: 5 }]);
  assert.deepEqual(f.tags, ['beta', 'growth']);
  assert.deepEqual(f.evaluation_tags, ['beta']);
  assert.equal(f.has_enriched_analytics, true);
  assert.equal(f.creation_context, 'experiments');
  assert.equal(f.is_remote_configuration, true);
  assert.equal(f.evaluation_runtime, 'client');
  assert.equal(f._create_in_folder, 'Unfiled/Flags');
  assert.equal(f.is_simple_flag, false);
  assert.equal(f.rollout_percentage, null);
  assert.deepEqual(f.filters.payloads, { control: '{"a": 1, "b": "\\u00e9"}', test: '"x"' });
});

test('simple flag reports its rollout percentage', async () => {
  const r = await t.request('POST', base, { body: { key: 'simple-50', filters: { groups: [{ properties: [], rollout_percentage: 50 }] } } });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.is_simple_flag, true);
  assert.equal(r.body.rollout_percentage, 50);
});

test('update bumps version by one, keeps unsent fields, records last_modified_by; no-op update still bumps', async () => {
  const c = (await t.request('POST', base, { body: { key: 'upd', name: 'n1', tags: ['a'] } })).body;
  const u = await t.request('PATCH', `${base}${c.id}/`, { body: { name: 'n2' } });
  assert.equal(u.status, 200, u.text);
  assert.equal(u.body.version, 2);
  assert.equal(u.body.name, 'n2');
  assert.deepEqual(u.body.tags, ['a']);
  assert.ok(Date.parse(u.body.updated_at) >= Date.parse(c.updated_at));
  const same = await t.request('PATCH', `${base}${c.id}/`, { body: {} });
  assert.equal(same.body.version, 3);
  const put = await t.request('PUT', `${base}${c.id}/`, { body: { name: 'n3' } });
  assert.equal(put.status, 200);
  assert.equal(put.body.version, 4);
});

test('PATCH filters without groups keeps the stored filters', async () => {
  const c = (await t.request('POST', base, { body: { key: 'keep-filters', filters: { groups: [{ properties: [], rollout_percentage: 30 }] } } })).body;
  const u = await t.request('PATCH', `${base}${c.id}/`, { body: { filters: { payloads: { true: '1' } } } });
  assert.equal(u.status, 200, u.text);
  assert.deepEqual(u.body.filters, c.filters);
});

test('active true forces performed_rollback false', async () => {
  const c = (await t.request('POST', base, { body: { key: 'rollback', performed_rollback: true } })).body;
  assert.equal(c.performed_rollback, true);
  const u = await t.request('PATCH', `${base}${c.id}/`, { body: { active: true, performed_rollback: true } });
  assert.equal(u.body.performed_rollback, false);
});

test('unknown and malformed ids → 404; DELETE → 405 with no body', async () => {
  assert.equal((await t.request('GET', `${base}999999/`)).status, 404);
  assert.equal((await t.request('GET', `${base}abc/`)).status, 404);
  assert.equal((await t.request('PATCH', `${base}999999/`, { body: { name: 'x' } })).status, 404);
  const c = (await t.request('POST', base, { body: { key: 'nodelete' } })).body;
  const d = await t.request('DELETE', `${base}${c.id}/`);
  assert.equal(d.status, 405);
  assert.equal(d.text, '');
  assert.equal(d.headers.get('allow'), 'GET, PATCH, PUT', 'every 405 says what is allowed');
  assert.equal((await t.request('GET', `${base}${c.id}/`)).body.deleted, false);
});

test('soft delete, excluded from list, retrievable, key reusable, restore gets a free key', async () => {
  const c = (await t.request('POST', base, { body: { key: 'reuse-me' } })).body;
  const d = await t.request('PATCH', `${base}${c.id}/`, { body: { deleted: true } });
  assert.equal(d.status, 200, d.text);
  assert.equal(d.body.deleted, true);
  assert.equal(d.body.status, 'DELETED');
  assert.equal(d.body.version, 2);
  const list = await t.request('GET', `${base}?search=reuse-me`);
  assert.equal(list.body.count, 0);
  assert.equal((await t.request('GET', `${base}${c.id}/`)).body.deleted, true);

  const again = await t.request('POST', base, { body: { key: 'reuse-me' } });
  assert.equal(again.status, 201, again.text);
  assert.notEqual(again.body.id, c.id);
  const tomb = (await t.request('GET', `${base}${c.id}/`)).body;
  assert.equal(tomb.key, `reuse-me:deleted:${c.id}`);

  const restored = await t.request('PATCH', `${base}${c.id}/`, { body: { deleted: false } });
  assert.equal(restored.status, 200, restored.text);
  assert.equal(restored.body.deleted, false);
  assert.equal(restored.body.key, 'reuse-me-2');

  // Deleting and restoring with no one taking the key gives the key back unchanged.
  const x = (await t.request('POST', base, { body: { key: 'come-back' } })).body;
  await t.request('PATCH', `${base}${x.id}/`, { body: { deleted: true } });
  const back = await t.request('PATCH', `${base}${x.id}/`, { body: { deleted: false } });
  assert.equal(back.body.key, 'come-back');
});

test('restoring a flag whose key was taken while deleted (not renamed) also gets a suffix', async () => {
  const a = (await t.request('POST', base, { body: { key: 'taken-later' } })).body;
  await t.request('PATCH', `${base}${a.id}/`, { body: { deleted: true } });
  const b = (await t.request('POST', base, { body: { key: 'other-name' } })).body;
  const clash = await t.request('PATCH', `${base}${b.id}/`, { body: { key: 'taken-later' } });
  assert.equal(clash.status, 200, clash.text);
  assert.equal((await t.request('GET', `${base}${a.id}/`)).body.key, `taken-later:deleted:${a.id}`);
  const r = await t.request('PATCH', `${base}${a.id}/`, { body: { deleted: false } });
  assert.equal(r.body.key, 'taken-later-2');
});

test('read-time normalisation of legacy filters without groups', async () => {
  const props = [{ key: 'email', type: 'person', value: 'x', operator: 'exact' }];
  const [a] = await t.db.sql<{ id: number }[]>`INSERT INTO feature_flags (project_id, key, filters)
    VALUES (${t.projectId}, 'legacy-props', ${t.db.sql.json({ properties: props } as never)}) RETURNING id`;
  const [b] = await t.db.sql<{ id: number }[]>`INSERT INTO feature_flags (project_id, key, filters)
    VALUES (${t.projectId}, 'legacy-empty', '{}'::jsonb) RETURNING id`;
  const ra = await t.request('GET', `${base}${a!.id}/`);
  assert.deepEqual(ra.body.filters, { groups: [{ properties: props, rollout_percentage: null }] });
  assert.equal(ra.body.is_simple_flag, false);
  const rb = await t.request('GET', `${base}${b!.id}/`);
  assert.deepEqual(rb.body.filters, { groups: [{ properties: [], rollout_percentage: null }] });
  assert.equal(rb.body.created_by, null);
});

test('created_at and last_called_at are writable', async () => {
  const r = await t.request('POST', base, { body: { key: 'dated', created_at: '2021-02-03T04:05:06Z', last_called_at: '2021-03-01T00:00:00+01:00' } });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.created_at, '2021-02-03T04:05:06.000Z');
  assert.equal(r.body.last_called_at, '2021-02-28T23:00:00.000Z');
  assert.equal(r.body.status, 'INACTIVE');
  const u = await t.request('PATCH', `${base}${r.body.id}/`, { body: { last_called_at: null } });
  assert.equal(u.body.last_called_at, null);
});
