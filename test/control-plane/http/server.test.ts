/** The management API's common behaviour over real HTTP and Postgres: auth, scopes, projects, errors, bodies. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';

let t: TestControlPlane;
before(async () => { t = await startTestControlPlane({ maxApiBodyBytes: 64 * 1024 }); });
after(async () => { await t.close(); });

test('no key → 401 not_authenticated with WWW-Authenticate', async () => {
  const r = await t.request('GET', '/api/projects/', { key: null });
  assert.equal(r.status, 401);
  assert.deepEqual(r.body, { type: 'authentication_error', code: 'not_authenticated', detail: 'Authentication credentials were not provided.', attr: null });
  assert.match(r.headers.get('www-authenticate') ?? '', /Bearer/);
});

test('unknown key → 401 authentication_failed', async () => {
  const r = await t.request('GET', '/api/projects/', { key: 'phx_doesnotexist000000000000000' });
  assert.equal(r.status, 401);
  assert.equal(r.body.code, 'authentication_failed');
});

test('key in the query string is accepted', async () => {
  const r = await t.request('GET', `/api/projects/?personal_api_key=${t.personalKey}`, { key: null });
  assert.equal(r.status, 200);
});

test('projects list and detail show the bootstrap project with its API key', async () => {
  const list = await t.request('GET', '/api/projects/');
  assert.equal(list.status, 200);
  assert.equal(list.body.count, 1);
  assert.equal(list.body.results[0].id, t.projectId);
  assert.equal(list.body.results[0].api_token, t.projectKey);
  const one = await t.request('GET', `/api/projects/${t.projectId}/`);
  assert.equal(one.status, 200);
  assert.equal(one.body.name, 'Default project');
});

test('missing scope → 403 with PostHog wording; write implies read', async () => {
  const flagsOnly = await t.createKey(['feature_flag:write']);
  const r = await t.request('GET', '/api/projects/', { key: flagsOnly });
  assert.equal(r.status, 403);
  assert.deepEqual(r.body, { type: 'authentication_error', code: 'permission_denied', detail: "API key missing required scope 'project:read'", attr: null });
  const writer = await t.createKey(['project:write']);
  assert.equal((await t.request('GET', '/api/projects/', { key: writer })).status, 200);
});

test('scoped projects: listing is narrowed and other projects are 403', async () => {
  const [p2] = await t.db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token)
    VALUES (${t.organizationId}, 'Second', ${'phc_second' + Date.now()}) RETURNING id`;
  const scoped = await t.createKey(['project:read'], [p2!.id]);
  const list = await t.request('GET', '/api/projects/', { key: scoped });
  assert.deepEqual(list.body.results.map((p: { id: number }) => p.id), [p2!.id]);
  const other = await t.request('GET', `/api/projects/${t.projectId}/`, { key: scoped });
  assert.equal(other.status, 403);
  assert.equal(other.body.detail, `API key does not have access to the requested project: ID ${t.projectId}.`);
  assert.equal((await t.request('GET', '/api/projects/', { key: t.personalKey })).body.count, 2);
});

test('unknown project and malformed ids → 404 Project not found.', async () => {
  for (const id of ['999999', 'abc', '-1']) {
    const r = await t.request('GET', `/api/projects/${id}/`);
    assert.equal(r.status, 404, id);
    assert.equal(r.body.detail, 'Project not found.');
  }
});

test('unknown route → 404; wrong method → 405 with Allow', async () => {
  assert.equal((await t.request('GET', '/api/nothing/')).status, 404);
  const r = await t.request('DELETE', '/api/projects/');
  assert.equal(r.status, 405);
  assert.equal(r.body.code, 'method_not_allowed');
  assert.equal(r.headers.get('allow'), 'GET, POST');
});

test('probes answer without auth', async () => {
  assert.equal((await t.request('GET', '/_health', { key: null })).status, 200);
  const ready = await t.request('GET', '/_ready', { key: null });
  assert.equal(ready.status, 200);
  assert.equal(ready.body.ready, true);
});

test('metrics: requests by route pattern and status, latency histogram, change-log head', async () => {
  await t.request('GET', `/api/projects/${t.projectId}/`);
  await t.request('GET', '/api/nothing/');
  const r = await fetch(`${t.baseUrl}/metrics`);
  const text = await r.text();
  assert.equal(r.status, 200);
  assert.match(text, /switchyard_api_requests_total\{route="\/api\/projects\/:project_id",method="GET",status="200"\} \d+/);
  assert.match(text, /switchyard_api_requests_total\{route="unmatched",method="GET",status="404"\} \d+/);
  // Label order is not meaningful in Prometheus text (prom-client writes `le` first).
  assert.match(text, /switchyard_api_request_duration_seconds_bucket\{(?:route="\/api\/projects\/:project_id",le="\+Inf"|le="\+Inf",route="\/api\/projects\/:project_id")\} \d+/);
  assert.match(text, /switchyard_api_process_cpu_seconds_total \d/, 'default process metrics');
  const [head] = await t.db.sql<{ r: number }[]>`SELECT max(revision) AS r FROM change_log`;
  assert.match(text, new RegExp(`switchyard_change_log_revision ${head!.r}\\n`));
  assert.equal(text.includes(t.personalKey), false, 'never key material');
});
