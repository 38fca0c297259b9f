/**
 * Experiments E1–E7, E10, E11 against a real control plane and Postgres:
 * create with a new or a reused flag, every create/update validation rule of research §3.2–3.3,
 * the lifecycle with the flag's `active` following it, soft delete and restore, list filters,
 * duplicate naming, the exposure cohort, eligible flags, requires_flag_implementation, and one
 * transaction per write (activity and change log).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { waitFor } from '../../support/wait.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';

let t: TestControlPlane;
let E: string;
let F: string;

const mean = (event: string, extra: Record<string, unknown> = {}) => ({ kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event, math: 'total' }, ...extra });

async function create(body: Record<string, unknown>) {
  const r = await t.request('POST', E, { body });
  assert.equal(r.status, 201, r.text);
  return r.body as Record<string, any>;
}
async function flag(id: number) {
  return (await t.request('GET', `${F}${id}/`)).body as Record<string, any>;
}

before(async () => {
  t = await startTestControlPlane();
  E = `/api/projects/${t.projectId}/experiments/`;
  F = `/api/projects/${t.projectId}/feature_flags/`;
});
after(async () => { await t?.close(); });

test('E2 with a new key creates the draft experiment and "Feature Flag for Experiment <name>" (control/test, inactive)', async () => {
  const x = await create({ name: 'Checkout v2', feature_flag_key: 'checkout-v2', description: 'd', metrics: [mean('purchase')] });
  assert.equal(x.name, 'Checkout v2');
  assert.equal(x.start_date, null);
  assert.equal(x.status, 'draft');
  assert.equal(x.feature_flag_key, 'checkout-v2');
  assert.equal(x.feature_flag.name, 'Feature Flag for Experiment Checkout v2');
  assert.equal(x.feature_flag.active, false);
  assert.deepEqual(x.feature_flag.filters.multivariate.variants.map((v: { key: string; rollout_percentage: number }) => [v.key, v.rollout_percentage]), [['control', 50], ['test', 50]]);
  assert.deepEqual(Object.keys(x.feature_flag).sort(), ['active', 'deleted', 'ensure_experience_continuity', 'evaluation_runtime', 'evaluation_tags', 'filters', 'has_encrypted_payloads', 'id', 'key', 'name', 'team_id', 'version']);
  assert.equal(x.stats_config.method, 'bayesian');
  assert.equal(x.exposure_criteria.filterTestAccounts, true);
  assert.equal(typeof x.metrics[0].uuid, 'string');
  assert.match(x.metrics[0].fingerprint, /^[0-9a-f]{64}$/);
  assert.deepEqual(x.primary_metrics_ordered_uuids, [x.metrics[0].uuid]);
  assert.equal(x.created_by.id, t.userId);
  const f = await flag(x.feature_flag.id);
  assert.equal(f.creation_context, 'experiments');
  assert.deepEqual(f.experiment_set, [x.id]);
  const [activity] = await t.db.sql`SELECT activity FROM activity_log WHERE scope = 'Experiment' AND item_id = ${String(x.id)}`;
  assert.equal(activity?.activity, 'created');
  const [change] = await t.db.sql`SELECT payload FROM change_log WHERE kind = 'feature_flag' AND entity_id = ${String(x.feature_flag.id)}`;
  assert.ok(change, 'the new flag is on the change log');
});

test('E2 reuses an eligible flag unchanged and refuses ineligible ones', async () => {
  const mv = await t.request('POST', F, { body: { key: 'three-way', filters: { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: { variants: [
    { key: 'control', rollout_percentage: 34 }, { key: 'a', rollout_percentage: 33 }, { key: 'b', rollout_percentage: 33 }] } } } });
  const before = await flag(mv.body.id);
  const x = await create({ name: 'Three', feature_flag_key: 'three-way' });
  assert.equal(x.feature_flag.id, mv.body.id);
  assert.equal((await flag(mv.body.id)).version, before.version);
  await t.request('POST', F, { body: { key: 'plain-bool', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } } });
  await t.request('POST', F, { body: { key: 'test-first', filters: { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: { variants: [
    { key: 'test', rollout_percentage: 50 }, { key: 'control', rollout_percentage: 50 }] } } } });
  for (const [key, detail] of [['plain-bool', 'Feature flag is not eligible for experiments.'], ['test-first', 'Feature flag must have control as the first variant.']]) {
    const r = await t.request('POST', E, { body: { name: `x-${key}`, feature_flag_key: key } });
    assert.equal(r.status, 400);
    assert.equal(r.body.detail, detail);
  }
});

test('E2 validation: required fields, variants, dates, metrics, saved metrics, flag key errors', async () => {
  const variants = (n: number, withControl = true) => Array.from({ length: n }, (_, i) => ({ key: i === 0 && withControl ? 'control' : `v${i}`, rollout_percentage: 0 }));
  const cases: [Record<string, unknown> | unknown[], string | null, string | RegExp][] = [
    [[], null, 'Invalid data. Expected a dictionary, but got list.'],
    [{ feature_flag_key: 'k1' }, 'name', 'This field is required.'],
    [{ name: 'n' }, 'feature_flag_key', 'This field is required.'],
    [{ name: 'n', feature_flag_key: 'k2', parameters: { feature_flag_variants: variants(21) } }, 'parameters', 'Feature flag variants must be less than 21'],
    [{ name: 'n', feature_flag_key: 'k3', parameters: { feature_flag_variants: variants(2, false) } }, 'parameters', 'Feature flag variants must contain a control variant'],
    [{ name: 'n', feature_flag_key: 'k4', start_date: '2026-02-01T00:00:00Z', end_date: '2026-01-01T00:00:00Z' }, null, 'End date must be after start date'],
    [{ name: 'n', feature_flag_key: 'k5', start_date: 'yesterday' }, 'start_date', /Datetime has wrong format/],
    [{ name: 'n', feature_flag_key: 'k6', metrics: [{ kind: 'ExperimentTrendsQuery' }] }, 'metrics__0__kind', /ExperimentMetric/],
    [{ name: 'n', feature_flag_key: 'k7', metrics: [{ kind: 'ExperimentMetric', metric_type: 'funnel', series: [] }] }, 'metrics__0__series', /at least one step/],
    [{ name: 'n', feature_flag_key: 'k8', metrics: [mean('a', { surprise: 1 })] }, 'metrics__0__surprise', /Extra inputs are not permitted/],
    [{ name: 'n', feature_flag_key: 'k9', metrics: [{ kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', id: 3 } }] }, 'metrics__0__source__id', /does not take an id/],
    [{ name: 'n', feature_flag_key: 'k10', stats_config: { method: 'magic' } }, 'stats_config', /bayesian/],
    [{ name: 'n', feature_flag_key: 'k11', exposure_criteria: { filterTestAccounts: 'yes' } }, 'exposure_criteria', 'filterTestAccounts must be a boolean'],
    [{ name: 'n', feature_flag_key: 'k12', exposure_criteria: { exposure_config: { kind: 'Nope' } } }, 'exposure_criteria', 'Invalid exposure criteria'],
    [{ name: 'n', feature_flag_key: 'k13', filters: { properties: [{ key: 'a', value: 1 }] } }, 'filters', 'Experiments do not support global filter properties'],
    [{ name: 'n', feature_flag_key: 'k14', saved_metrics_ids: {} }, 'saved_metrics_ids', 'Saved metrics must be a list'],
    [{ name: 'n', feature_flag_key: 'k15', saved_metrics_ids: [1] }, 'saved_metrics_ids', 'Saved metric must be an object'],
    [{ name: 'n', feature_flag_key: 'k16', saved_metrics_ids: [{}] }, 'saved_metrics_ids', 'Saved metric must have an id'],
    [{ name: 'n', feature_flag_key: 'k17', saved_metrics_ids: [{ id: 1, metadata: [] }] }, 'saved_metrics_ids', 'Metadata must be an object'],
    [{ name: 'n', feature_flag_key: 'k18', saved_metrics_ids: [{ id: 1, metadata: {} }] }, 'saved_metrics_ids', 'Metadata must have a type key'],
    [{ name: 'n', feature_flag_key: 'k19', saved_metrics_ids: [{ id: 999999 }] }, 'saved_metrics_ids', 'Saved metric does not exist or does not belong to this project'],
    [{ name: 'n', feature_flag_key: 'bad key!' }, 'key', /Only letters, numbers/],
    [{ name: 'n', feature_flag_key: 'k20', metrics: [mean('a')], primary_metrics_ordered_uuids: [] }, null, /primary_metrics_ordered_uuids is missing UUIDs: \['/],
    [{ name: 'n', feature_flag_key: 'k21', conclusion: 'meh' }, 'conclusion', '"meh" is not a valid choice.'],
    [{ name: 'n', feature_flag_key: 'k22', holdout_id: 999999 }, 'holdout_id', 'Invalid pk "999999" - object does not exist.'],
  ];
  for (const [body, attr, detail] of cases) {
    const r = await t.request('POST', E, { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.body.attr, attr, JSON.stringify(body));
    if (typeof detail === 'string') assert.equal(r.body.detail, detail);
    else assert.match(r.body.detail, detail);
  }
  // Nothing was half-written: no flag for any refused key.
  const [{ n }] = await t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM feature_flags WHERE key ~ '^k[0-9]+$'`;
  assert.equal(n, 0);
});

test('lifecycle: launch activates the flag, stop leaves it, variants and holdout are frozen after launch, conclusion and archive', async () => {
  const x = await create({ name: 'Life', feature_flag_key: 'life', parameters: { feature_flag_variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'blue', rollout_percentage: 50 }] } });
  assert.equal((await flag(x.feature_flag.id)).active, false);
  // While draft, parameters rewrite the flag's variants.
  const redrafted = await t.request('PATCH', `${E}${x.id}/`, { body: { parameters: { feature_flag_variants: [{ key: 'control' }, { key: 'red' }, { key: 'green' }] } } });
  assert.equal(redrafted.status, 200, redrafted.text);
  assert.deepEqual((await flag(x.feature_flag.id)).filters.multivariate.variants.map((v: { key: string }) => v.key), ['control', 'red', 'green']);
  const launched = await t.request('PATCH', `${E}${x.id}/`, { body: { start_date: new Date().toISOString() } });
  assert.equal(launched.status, 200);
  assert.equal(launched.body.status, 'running');
  assert.equal((await flag(x.feature_flag.id)).active, true);
  const frozen = await t.request('PATCH', `${E}${x.id}/`, { body: { parameters: { feature_flag_variants: [{ key: 'control' }, { key: 'red' }] } } });
  assert.equal(frozen.status, 400);
  assert.equal(frozen.body.detail, "Can't update feature_flag_variants on Experiment");
  const h = await t.request('POST', `/api/projects/${t.projectId}/experiment_holdouts/`, { body: { name: 'H-life', filters: [{ properties: [], rollout_percentage: 10 }] } });
  const holdout = await t.request('PATCH', `${E}${x.id}/`, { body: { holdout_id: h.body.id } });
  assert.equal(holdout.status, 400);
  assert.equal(holdout.body.detail, "Can't update holdout on running Experiment");
  const keys = await t.request('PATCH', `${E}${x.id}/`, { body: { type: 'web', feature_flag_key: 'other' } });
  assert.equal(keys.status, 400);
  assert.equal(keys.body.detail, "Can't update keys: type, feature_flag_key on Experiment");
  const stopped = await t.request('PATCH', `${E}${x.id}/`, { body: { end_date: new Date(Date.now() + 1000).toISOString(), conclusion: 'won', conclusion_comment: 'blue wins' } });
  assert.equal(stopped.status, 200);
  assert.equal(stopped.body.status, 'stopped');
  assert.equal(stopped.body.conclusion, 'won');
  assert.equal((await flag(x.feature_flag.id)).active, true, 'stopping leaves the flag as it is');
  const archived = await t.request('PATCH', `${E}${x.id}/`, { body: { archived: true } });
  assert.equal(archived.body.archived, true);
  const list = await t.request('GET', E);
  assert.equal(list.body.results.some((r: { id: number }) => r.id === x.id), false, 'archived experiments are hidden by default');
  const onlyArchived = await t.request('GET', `${E}?archived=true`);
  assert.deepEqual(onlyArchived.body.results.map((r: { id: number }) => r.id), [x.id]);
});

test('soft delete: DELETE is 405 with no body, PATCH deleted hides it, restore with deleted false; activity says so', async () => {
  const x = await create({ name: 'Doomed', feature_flag_key: 'doomed' });
  const del = await t.request('DELETE', `${E}${x.id}/`);
  assert.equal(del.status, 405);
  assert.equal(del.text, '');
  assert.match(del.headers.get('allow') ?? '', /PATCH/);
  assert.equal((await t.request('PATCH', `${E}${x.id}/`, { body: { deleted: true } })).status, 200);
  assert.equal((await t.request('GET', `${E}${x.id}/`)).status, 404);
  assert.equal((await t.request('PATCH', `${E}${x.id}/`, { body: { name: 'x' } })).status, 404);
  const back = await t.request('PATCH', `${E}${x.id}/`, { body: { deleted: false } });
  assert.equal(back.status, 200);
  const rows = await t.db.sql`SELECT activity FROM activity_log WHERE scope = 'Experiment' AND item_id = ${String(x.id)} ORDER BY created_at`;
  assert.deepEqual(rows.map((r) => r.activity), ['created', 'deleted', 'restored']);
});

test('E1 filters: status, search, created_by_id, order; bad order is 400', async () => {
  const draft = await create({ name: 'Filter draft zeta', feature_flag_key: 'f-draft' });
  const running = await create({ name: 'Filter running zeta', feature_flag_key: 'f-run', start_date: new Date(Date.now() - 3600_000).toISOString() });
  const ids = async (qs: string) => (await t.request('GET', `${E}?${qs}`)).body.results.map((r: { id: number }) => r.id);
  assert.ok((await ids('status=draft&search=zeta')).includes(draft.id));
  assert.ok(!(await ids('status=draft&search=zeta')).includes(running.id));
  assert.deepEqual(await ids('status=running&search=zeta'), [running.id]);
  assert.deepEqual(await ids('search=zeta&order=name'), [draft.id, running.id]);
  assert.deepEqual(await ids('search=zeta&order=-name'), [running.id, draft.id]);
  assert.ok((await ids(`created_by_id=${t.userId}`)).length >= 2);
  assert.deepEqual(await ids('created_by_id=999999'), []);
  const bad = await t.request('GET', `${E}?order=secret`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.detail, "Invalid order field: 'secret'");
});

test('E7 duplicate: "(Copy)", then "(Copy) 1"; same flag by default; a draft with new metric uuids', async () => {
  const x = await create({ name: 'Dup', feature_flag_key: 'dup-flag', start_date: new Date().toISOString(), metrics: [mean('buy')] });
  const a = await t.request('POST', `${E}${x.id}/duplicate/`, { body: {} });
  assert.equal(a.status, 201, a.text);
  assert.equal(a.body.name, 'Dup (Copy)');
  assert.equal(a.body.start_date, null);
  assert.equal(a.body.feature_flag.id, x.feature_flag.id);
  assert.notEqual(a.body.metrics[0].uuid, x.metrics[0].uuid);
  assert.deepEqual(a.body.primary_metrics_ordered_uuids, [a.body.metrics[0].uuid]);
  const b = await t.request('POST', `${E}${x.id}/duplicate/`, { body: {} });
  assert.equal(b.body.name, 'Dup (Copy) 1');
  const c = await t.request('POST', `${E}${x.id}/duplicate/`, { body: { feature_flag_key: 'dup-new-flag' } });
  assert.equal(c.body.feature_flag_key, 'dup-new-flag');
  assert.notEqual(c.body.feature_flag.id, x.feature_flag.id);
});

test('E6 exposure cohort: refused for a draft, created once as a behavioural cohort on $feature_flag_called, counted from events', async () => {
  const x = await create({ name: 'Exposed', feature_flag_key: 'exposed' });
  const draft = await t.request('POST', `${E}${x.id}/create_exposure_cohort_for_experiment/`, { body: {} });
  assert.equal(draft.status, 400);
  assert.equal(draft.body.detail, 'Experiment does not have a start date');
  const start = new Date(Date.now() - 3600_000);
  await t.request('PATCH', `${E}${x.id}/`, { body: { start_date: start.toISOString() } });
  const events = ['u1', 'u2', 'u3'].map((d, i) => ({
    uuid: crypto.randomUUID(), project_id: t.projectId, event: '$feature_flag_called', distinct_id: d,
    properties: { $feature_flag: i < 2 ? 'exposed' : 'something-else', $feature_flag_response: 'test' }, timestamp: new Date().toISOString(),
  }));
  await ingestEvents(t.db.sql, events);
  const r = await t.request('POST', `${E}${x.id}/create_exposure_cohort_for_experiment/`, { body: {} });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.cohort.name, 'Users exposed to experiment "Exposed"');
  const leaf = r.body.cohort.filters.properties.values[0].values[0];
  assert.deepEqual([leaf.type, leaf.value, leaf.key, leaf.event_filters[0].value], ['behavioral', 'performed_event', '$feature_flag_called', ['exposed']]);
  assert.equal(leaf.explicit_datetime, start.toISOString());
  const counted = await waitFor('exposure cohort counted', async () => {
    const c = await t.request('GET', `/api/projects/${t.projectId}/cohorts/${r.body.cohort.id}/`);
    return c.body.is_calculating === false ? c.body : null;
  });
  assert.equal(counted.count, 2);
  assert.equal((await t.request('GET', `${E}${x.id}/`)).body.exposure_cohort, r.body.cohort.id);
  const again = await t.request('POST', `${E}${x.id}/create_exposure_cohort_for_experiment/`, { body: {} });
  assert.equal(again.status, 400);
  assert.equal(again.body.detail, 'Experiment already has an exposure cohort');
});

test('E10 eligible flags: multivariate, ≥ 2 variants, control first; default limit 20; bad limit is 400 {"error"}', async () => {
  const r = await t.request('GET', `${E}eligible_feature_flags/`);
  assert.equal(r.status, 200);
  const keys = r.body.results.map((f: { key: string }) => f.key);
  assert.ok(keys.includes('three-way'));
  assert.ok(!keys.includes('plain-bool'));
  assert.ok(!keys.includes('test-first'));
  assert.equal(typeof r.body.count, 'number');
  assert.ok(r.body.results.length <= 20);
  for (const f of r.body.results) assert.equal(f.filters.multivariate.variants[0].key, 'control');
  const searched = await t.request('GET', `${E}eligible_feature_flags/?search=three`);
  assert.deepEqual(searched.body.results.map((f: { key: string }) => f.key), ['three-way']);
  const bad = await t.request('GET', `${E}eligible_feature_flags/?limit=abc`);
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.body, { error: 'Invalid limit or offset' });
  const flagReader = await t.createKey(['feature_flag:read']);
  assert.equal((await t.request('GET', `${E}eligible_feature_flags/`, { key: flagReader })).status, 200);
});

test('E11 requires_flag_implementation: true without $feature/ properties on recent events, false once one carries them', async () => {
  const q = `${E}requires_flag_implementation/?events=${encodeURIComponent(JSON.stringify([{ id: 'signup' }]))}`;
  assert.deepEqual((await t.request('GET', q)).body, { result: true });
  await ingestEvents(t.db.sql, [{ uuid: crypto.randomUUID(), project_id: t.projectId, event: 'signup', distinct_id: 's1', properties: { plan: 'x' }, timestamp: new Date().toISOString() }]);
  assert.deepEqual((await t.request('GET', q)).body, { result: true });
  await ingestEvents(t.db.sql, [{ uuid: crypto.randomUUID(), project_id: t.projectId, event: 'signup', distinct_id: 's2', properties: { '$feature/checkout-v2': 'test' }, timestamp: new Date().toISOString() }]);
  assert.deepEqual((await t.request('GET', q)).body, { result: false });
});

test('scope matrix: experiment:read reads, cannot write; experiment:write writes; neither reaches holdouts or saved metrics', async () => {
  const reader = await t.createKey(['experiment:read']);
  const writer = await t.createKey(['experiment:write']);
  assert.equal((await t.request('GET', E, { key: reader })).status, 200);
  const w = await t.request('POST', E, { key: reader, body: { name: 'n', feature_flag_key: 'scoped' } });
  assert.equal(w.status, 403);
  assert.equal(w.body.detail, "API key missing required scope 'experiment:write'");
  assert.equal((await t.request('POST', E, { key: writer, body: { name: 'n', feature_flag_key: 'scoped' } })).status, 201);
  assert.equal((await t.request('GET', E, { key: writer })).status, 200, 'write implies read');
  assert.equal((await t.request('GET', `/api/projects/${t.projectId}/experiment_holdouts/`, { key: writer })).status, 403);
  assert.equal((await t.request('GET', `/api/projects/${t.projectId}/experiment_saved_metrics/`, { key: writer })).status, 403);
  assert.equal((await t.request('GET', `${E}eligible_feature_flags/`, { key: reader })).status, 403);
});
