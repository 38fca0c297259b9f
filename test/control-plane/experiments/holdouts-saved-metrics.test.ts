/**
 * Holdouts and saved metrics against a real control
 * plane: validation, `holdout-<id>` variants, holdout groups written into the experiment's flag
 * (and rewritten or cleared when the holdout changes), saved-metric uuids and names, links from
 * experiments with fingerprints and ordering.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';

let t: TestControlPlane;
let H: string;
let S: string;
let E: string;

const metric = { kind: 'ExperimentMetric', metric_type: 'funnel', series: [{ kind: 'EventsNode', event: 'purchase' }] };

before(async () => {
  t = await startTestControlPlane();
  H = `/api/projects/${t.projectId}/experiment_holdouts/`;
  S = `/api/projects/${t.projectId}/experiment_saved_metrics/`;
  E = `/api/projects/${t.projectId}/experiments/`;
});
after(async () => { await t?.close(); });

test('holdout validation', async () => {
  const cases: [unknown, string | null, string][] = [
    [{ name: 'h' }, 'filters', 'Filters are required to create an holdout group'],
    [{ name: 'h', filters: [] }, 'filters', 'Filters are required to create an holdout group'],
    [{ name: 'h', filters: [{ properties: [] }] }, 'filters', 'Rollout percentage must be present.'],
    [{ name: 'h', filters: [{ properties: [], rollout_percentage: 101 }] }, 'filters', 'Rollout percentage must be between 0 and 100.'],
    [{ filters: [{ rollout_percentage: 5 }] }, 'name', 'This field is required.'],
    [{ name: 'x'.repeat(401), filters: [{ rollout_percentage: 5 }] }, 'name', 'Ensure this field has no more than 400 characters.'],
  ];
  for (const [body, attr, detail] of cases) {
    const r = await t.request('POST', H, { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.deepEqual([r.body.attr, r.body.detail], [attr, detail]);
  }
});

test('a holdout gets holdout-<id> variants and reaches the flag of an experiment as holdout_groups; updates follow, delete clears them', async () => {
  const h = await t.request('POST', H, { body: { name: 'Ten percent', description: 'kept out', filters: [{ properties: [], rollout_percentage: 10 }] } });
  assert.equal(h.status, 201);
  assert.deepEqual(h.body.filters, [{ properties: [], rollout_percentage: 10, variant: `holdout-${h.body.id}` }]);
  const x = await t.request('POST', E, { body: { name: 'Held', feature_flag_key: 'held', holdout_id: h.body.id } });
  assert.equal(x.status, 201, x.text);
  assert.equal(x.body.holdout.id, h.body.id);
  assert.equal(x.body.holdout_id, h.body.id);
  const flagUrl = `/api/projects/${t.projectId}/feature_flags/${x.body.feature_flag.id}/`;
  assert.deepEqual((await t.request('GET', flagUrl)).body.filters.holdout_groups, [{ properties: [], rollout_percentage: 10, variant: `holdout-${h.body.id}` }]);
  assert.deepEqual((await t.request('GET', flagUrl)).body.filters.holdout, { id: h.body.id, exclusion_percentage: 10 });

  const u = await t.request('PATCH', `${H}${h.body.id}/`, { body: { filters: [{ properties: [], rollout_percentage: 25 }] } });
  assert.equal(u.status, 200);
  assert.equal((await t.request('GET', flagUrl)).body.filters.holdout_groups[0].rollout_percentage, 25);
  assert.equal((await t.request('GET', flagUrl)).body.filters.holdout.exclusion_percentage, 25);

  // A draft may drop its holdout; the flag follows.
  const other = await t.request('POST', E, { body: { name: 'Held 2', feature_flag_key: 'held-2', holdout_id: h.body.id } });
  await t.request('PATCH', `${E}${other.body.id}/`, { body: { holdout_id: null } });
  assert.equal((await t.request('GET', `/api/projects/${t.projectId}/feature_flags/${other.body.feature_flag.id}/`)).body.filters.holdout_groups, null);

  const list = await t.request('GET', H);
  assert.ok(list.body.results.some((r: { id: number }) => r.id === h.body.id));
  assert.equal((await t.request('DELETE', `${H}${h.body.id}/`)).status, 204);
  assert.equal((await t.request('GET', `${H}${h.body.id}/`)).status, 404);
  assert.equal((await t.request('GET', flagUrl)).body.filters.holdout_groups, null);
  assert.equal((await t.request('GET', flagUrl)).body.filters.holdout, null);
  assert.equal((await t.request('GET', `${E}${x.body.id}/`)).body.holdout, null);
});

test('saved metrics: query required and validated, server uuid that cannot change, unique names, lower(name) order, hard delete', async () => {
  const missing = await t.request('POST', S, { body: { name: 'no query' } });
  assert.deepEqual([missing.status, missing.body.attr, missing.body.detail], [400, 'query', 'Query is required to create a saved metric']);
  const invalid = await t.request('POST', S, { body: { name: 'bad', query: { kind: 'ExperimentTrendsQuery' } } });
  assert.equal(invalid.status, 400);
  assert.equal(invalid.body.attr, 'query__kind');
  const b = await t.request('POST', S, { body: { name: 'beta conversion', query: { ...metric, uuid: 'client-chosen' } } });
  assert.equal(b.status, 201);
  assert.notEqual(b.body.query.uuid, 'client-chosen', 'the server assigns the uuid');
  const a = await t.request('POST', S, { body: { name: 'Alpha revenue', query: { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'sum', math_property: 'amount' } } } });
  assert.equal(a.status, 201);
  const dup = await t.request('POST', S, { body: { name: 'BETA Conversion', query: metric } });
  assert.deepEqual([dup.status, dup.body.attr, dup.body.detail], [400, 'name', 'A shared metric with this name already exists.']);
  const moved = await t.request('PATCH', `${S}${b.body.id}/`, { body: { query: { ...metric, uuid: 'another' } } });
  assert.deepEqual([moved.status, moved.body.detail], [400, 'Saved metric UUID cannot be changed']);
  const renamed = await t.request('PATCH', `${S}${b.body.id}/`, { body: { description: 'weekly' } });
  assert.equal(renamed.body.description, 'weekly');
  const names = (await t.request('GET', S)).body.results.map((m: { name: string }) => m.name);
  assert.deepEqual(names, ['Alpha revenue', 'beta conversion']);

  // Linked from an experiment: links carry name, query with a fingerprint, and the ordering arrays cover their uuids.
  const x = await t.request('POST', E, { body: { name: 'With saved', feature_flag_key: 'with-saved',
    saved_metrics_ids: [{ id: a.body.id, metadata: { type: 'primary' } }, { id: b.body.id, metadata: { type: 'secondary' } }] } });
  assert.equal(x.status, 201, x.text);
  assert.deepEqual(x.body.saved_metrics.map((l: { name: string }) => l.name), ['Alpha revenue', 'beta conversion']);
  assert.match(x.body.saved_metrics[0].query.fingerprint, /^[0-9a-f]{64}$/);
  assert.deepEqual(x.body.primary_metrics_ordered_uuids, [a.body.query.uuid]);
  assert.deepEqual(x.body.secondary_metrics_ordered_uuids, [b.body.query.uuid]);
  // A launch changes the fingerprint (start date is part of it).
  const launched = await t.request('PATCH', `${E}${x.body.id}/`, { body: { start_date: new Date().toISOString() } });
  assert.notEqual(launched.body.saved_metrics[0].query.fingerprint, x.body.saved_metrics[0].query.fingerprint);

  assert.equal((await t.request('DELETE', `${S}${a.body.id}/`)).status, 204);
  assert.equal((await t.request('GET', `${S}${a.body.id}/`)).status, 404);
  assert.deepEqual((await t.request('GET', `${E}${x.body.id}/`)).body.saved_metrics.map((l: { name: string }) => l.name), ['beta conversion']);
});

test('scopes: experiment_holdout and experiment_saved_metric', async () => {
  const hr = await t.createKey(['experiment_holdout:read']);
  assert.equal((await t.request('GET', H, { key: hr })).status, 200);
  assert.equal((await t.request('POST', H, { key: hr, body: { name: 'x', filters: [{ rollout_percentage: 1 }] } })).body.detail, "API key missing required scope 'experiment_holdout:write'");
  const sr = await t.createKey(['experiment_saved_metric:read']);
  assert.equal((await t.request('GET', S, { key: sr })).status, 200);
  assert.equal((await t.request('DELETE', `${S}1/`, { key: sr })).status, 403);
});
