/**
 * GET /flags/definitions (research/posthog-flag-evaluation.md §6.1, management-api §2.9, §5.2)
 * and the probes, over real HTTP against a real node store.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startTestNode, request, flag, worldChanges, standardFlags, COHORT_7, PROJECT_TOKEN, LIMITED_TOKEN, OTHER_ORG_TOKEN,
  PERSONAL_KEY, WRITE_KEY, NO_SCOPE_KEY, SCOPED_OTHER_KEY, postFlags, type TestNode,
} from './fixture.js';
import { buildDefinitionsFeed, dependencyChain } from '../../../src/feed/definitions-feed.js';

let node: TestNode;
before(async () => { node = await startTestNode(); });
after(async () => { await node.close(); });

const get = (path: string, key?: string, headers: Record<string, string> = {}) =>
  request(node.url + path, { headers: key ? { authorization: `Bearer ${key}`, ...headers } : headers });

test('auth failures in PostHog shape', async () => {
  const cases: [string, string | undefined, number, string][] = [
    [`/flags/definitions?token=${PROJECT_TOKEN}`, undefined, 401, 'not_authenticated'],
    [`/flags/definitions?token=${PROJECT_TOKEN}`, 'phx_unknown', 401, 'authentication_failed'],
    ['/flags/definitions', PERSONAL_KEY, 401, 'missing_token'],
    ['/flags/definitions?token=phc_nope', PERSONAL_KEY, 401, 'invalid_token'],
    [`/flags/definitions?token=${OTHER_ORG_TOKEN}`, PERSONAL_KEY, 403, 'permission_denied'],
    [`/flags/definitions?token=${PROJECT_TOKEN}`, NO_SCOPE_KEY, 403, 'permission_denied'],
    [`/flags/definitions?token=${PROJECT_TOKEN}`, SCOPED_OTHER_KEY, 403, 'permission_denied'],
  ];
  for (const [path, key, status, code] of cases) {
    const r = await get(path, key);
    assert.equal(r.status, status, `${path} ${key}: ${r.text}`);
    const b = r.json();
    assert.equal(b.code, code);
    assert.equal(typeof b.detail, 'string');
  }
  const scoped = (await get(`/flags/definitions?token=${PROJECT_TOKEN}`, NO_SCOPE_KEY)).json();
  assert.equal(scoped.detail, "API key missing required scope 'feature_flag:read'");
});

test('quota-limited organization → 402', async () => {
  // The read key of org 1 cannot see org 2's project; give org 2 a key through the store.
  const { sha256Key } = await import('./fixture.js');
  await node.store.applyBatch([{ kind: 'personal_api_key', entityId: 'k9', projectId: null, op: 'upsert',
    payload: { id: 'k9', organization_id: 2, secure_value: sha256Key('phx_limitedOrgKey0000000000000009'), scopes: ['*'], scoped_teams: [] } }], 20);
  const r = await get(`/flags/definitions?token=${LIMITED_TOKEN}`, 'phx_limitedOrgKey0000000000000009');
  assert.equal(r.status, 402);
  assert.deepEqual(r.json(), { type: 'quota_limited', code: 'payment_required', detail: 'You have exceeded your feature flag request quota', attr: null });
});

test('200 feed: MinimalFlags without deleted and remote-config flags; cohorts with send_cohorts; ETag/304', async () => {
  const r = await get(`/flags/definitions?token=${PROJECT_TOKEN}&send_cohorts`, PERSONAL_KEY);
  assert.equal(r.status, 200);
  assert.equal(r.headers['cache-control'], 'private, must-revalidate');
  const etag = String(r.headers.etag);
  assert.match(etag, /^W\/"\d+c"$/);
  const b = r.json();
  const keys = b.flags.map((f: { key: string }) => f.key);
  assert.ok(keys.includes('always-on') && keys.includes('inactive'));
  assert.ok(!keys.includes('remote-config'));
  assert.deepEqual(Object.keys(b.flags[0]).sort(), ['active', 'bucketing_identifier', 'deleted', 'ensure_experience_continuity', 'evaluation_runtime',
    'evaluation_tags', 'filters', 'has_encrypted_payloads', 'id', 'key', 'name', 'team_id', 'version']);
  assert.deepEqual(b.group_type_mapping, { 0: 'organization' });
  assert.deepEqual(b.cohorts, { 7: COHORT_7.filters.properties });
  const again = await get(`/flags/definitions?token=${PROJECT_TOKEN}&send_cohorts`, PERSONAL_KEY, { 'if-none-match': etag });
  assert.equal(again.status, 304);
  assert.equal(again.text, '');
  const legacy = await get(`/api/feature_flag/local_evaluation/?token=${PROJECT_TOKEN}`, WRITE_KEY);
  assert.equal(legacy.status, 200);
  assert.deepEqual(legacy.json().cohorts, {});
  assert.notEqual(legacy.headers.etag, etag);
});

test('ETag changes with the project definitions revision', async () => {
  const local = await startTestNode();
  try {
    const first = await request(local.url + `/flags/definitions?token=${PROJECT_TOKEN}&send_cohorts`, { headers: { authorization: `Bearer ${PERSONAL_KEY}` } });
    const f = flag('new-flag', { groups: [] });
    await local.store.applyBatch([{ kind: 'feature_flag', entityId: String(f.id), projectId: 1, op: 'upsert', payload: f }], 30);
    const second = await request(local.url + `/flags/definitions?token=${PROJECT_TOKEN}&send_cohorts`,
      { headers: { authorization: `Bearer ${PERSONAL_KEY}`, 'if-none-match': String(first.headers.etag) } });
    assert.equal(second.status, 200);
    assert.notEqual(second.headers.etag, first.headers.etag);
    assert.ok(second.json().flags.some((x: { key: string }) => x.key === 'new-flag'));
  } finally {
    await local.close();
  }
});

test('flag dependencies are rewritten to keys with dependency_chain', () => {
  const a = flag('a', { groups: [{ properties: [], rollout_percentage: 100 }] });
  const b = flag('b', { groups: [{ properties: [{ key: String(a.id), type: 'flag', operator: 'flag_evaluates_to', value: true }] }] });
  const c = flag('c', { groups: [{ properties: [{ key: String(b.id), type: 'flag', operator: 'flag_evaluates_to', value: true }] }] });
  const self = flag('self', { groups: [] });
  self.filters = { groups: [{ properties: [{ key: String(self.id), type: 'flag', operator: 'flag_evaluates_to', value: true }] }] };
  const missing = flag('missing', { groups: [{ properties: [{ key: '999999', type: 'flag', operator: 'flag_evaluates_to', value: true }] }] });
  const x = flag('x', { groups: [] });
  const y = flag('y', { groups: [{ properties: [{ key: String(x.id), type: 'flag', operator: 'flag_evaluates_to', value: true }] }] });
  x.filters = { groups: [{ properties: [{ key: String(y.id), type: 'flag', operator: 'flag_evaluates_to', value: true }] }] };
  const feed = buildDefinitionsFeed({ revision: 1, flags: [a, b, c, self, missing, x, y], cohorts: [], groupTypeMapping: {} }, true);
  const prop = (key: string) => (feed.flags.find((f) => f.key === key)!.filters as any).groups[0].properties[0];
  assert.deepEqual([prop('b').key, prop('b').dependency_chain], ['a', ['a']]);
  assert.deepEqual([prop('c').key, prop('c').dependency_chain], ['b', ['a', 'b']]);
  assert.deepEqual(prop('self').dependency_chain, []);
  assert.deepEqual([prop('missing').key, prop('missing').dependency_chain], ['999999', []]);
  assert.deepEqual(prop('x').dependency_chain, []);
  assert.equal((b.filters as any).groups[0].properties[0].key, String(a.id), 'store objects are not mutated');
  const byId = new Map([a, b, c].map((f) => [f.id, f]));
  assert.deepEqual(dependencyChain(byId, c.id, b.id), ['a', 'b']);
});

test('static and deleted cohorts are left out; nested cohorts are included', () => {
  const f = flag('co', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 1 }, { key: 'id', type: 'cohort', value: 3 }] }] });
  const cohorts = [
    { id: 1, project_id: 1, name: '', is_static: false, deleted: false, filters: { properties: { type: 'AND', values: [{ key: 'id', type: 'cohort', value: 2 }] } } },
    { id: 2, project_id: 1, name: '', is_static: false, deleted: false, filters: { properties: { type: 'OR', values: [] } } },
    { id: 3, project_id: 1, name: '', is_static: true, deleted: false, filters: {} },
  ];
  const feed = buildDefinitionsFeed({ revision: 1, flags: [f], cohorts, groupTypeMapping: {} }, true);
  assert.deepEqual(Object.keys(feed.cohorts).sort(), ['1', '2']);
});

test('probes: /_health, /_ready, /metrics', async () => {
  assert.equal((await request(node.url + '/_health')).status, 200);
  const ready = await request(node.url + '/_ready');
  assert.equal(ready.status, 200);
  await postFlags(node, { api_key: PROJECT_TOKEN, distinct_id: 'm' });
  const m = await request(node.url + '/metrics');
  assert.equal(m.status, 200);
  assert.match(String(m.headers['content-type']), /text\/plain/);
  assert.match(m.text, /switchyard_node_http_requests_total\{route="flags",status="200"\} \d+/);
  // Label order is the exporter's choice (Prometheus text format): either order.
  assert.match(m.text, /switchyard_node_http_request_duration_seconds_bucket\{(?:route="flags",le="0.005"|le="0.005",route="flags")\} \d+/);
  assert.match(m.text, /switchyard_node_revision \d+/);
  // prom-client's default process metrics.
  assert.match(m.text, /switchyard_node_process_cpu_user_seconds_total \d/);
  assert.match(m.text, /switchyard_node_nodejs_eventloop_lag_seconds \d/);
  await postFlags(node, { distinct_id: 'no-token' });
  assert.match((await request(node.url + '/metrics')).text, /switchyard_node_request_failures_total\{route="flags",stage="project"\} \d+/);
  assert.match(m.text, /switchyard_node_eval_queue\{mode="inline"\} 0/);
  const empty = await startTestNode({ snapshot: false });
  try {
    assert.equal((await request(empty.url + '/_ready')).status, 503);
    assert.equal((await request(empty.url + '/_health')).status, 200);
    const early = await postFlags(empty, { api_key: PROJECT_TOKEN, distinct_id: 'u' });
    assert.equal(early.status, 503, 'unknown token before the first snapshot: retry, not 401');
    assert.equal(early.json().code, 'not_ready');
    assert.equal((await request(`${empty.url}/flags/definitions?token=${PROJECT_TOKEN}`, { headers: { authorization: `Bearer ${PERSONAL_KEY}` } })).status, 503);
  } finally {
    await empty.close();
  }
});

void worldChanges; void standardFlags;
