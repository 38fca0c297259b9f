/** Scope matrix of every flag endpoint, scoped projects, and hostile bodies answered with 4xx while the server stays up. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';

let t: TestControlPlane;
let base: string;
let flagId: number;
before(async () => {
  t = await startTestControlPlane({ maxApiBodyBytes: 16 * 1024 });
  base = `/api/projects/${t.projectId}/feature_flags/`;
  flagId = (await t.request('POST', base, { body: { key: 'matrix' } })).body.id;
});
after(async () => { await t.close(); });

interface Endpoint { method: string; path: () => string; scope: string; body?: () => unknown; ok: number }
const ENDPOINTS: Endpoint[] = [
  { method: 'GET', path: () => base, scope: 'feature_flag:read', ok: 200 },
  { method: 'POST', path: () => base, scope: 'feature_flag:write', body: () => ({ key: `k${Math.random().toString(36).slice(2)}` }), ok: 201 },
  { method: 'GET', path: () => `${base}${flagId}/`, scope: 'feature_flag:read', ok: 200 },
  { method: 'PATCH', path: () => `${base}${flagId}/`, scope: 'feature_flag:write', body: () => ({ name: 'x' }), ok: 200 },
  { method: 'PUT', path: () => `${base}${flagId}/`, scope: 'feature_flag:write', body: () => ({ name: 'y' }), ok: 200 },
  { method: 'DELETE', path: () => `${base}${flagId}/`, scope: 'feature_flag:write', ok: 405 },
  { method: 'GET', path: () => `${base}activity/`, scope: 'activity_log:read', ok: 200 },
  { method: 'GET', path: () => `${base}${flagId}/activity/`, scope: 'activity_log:read', ok: 200 },
];

for (const e of ENDPOINTS) {
  test(`scope matrix: ${e.method} ${e.path.toString().includes('activity') ? 'activity' : ''} needs ${e.scope}`, async () => {
    const call = (key: string) => t.request(e.method, e.path(), { key, body: e.body?.() });
    const [object, action] = e.scope.split(':');
    const unrelated = await t.createKey(['project:read']);
    const denied = await call(unrelated);
    assert.equal(denied.status, 403);
    assert.deepEqual(denied.body, { type: 'authentication_error', code: 'permission_denied', detail: `API key missing required scope '${e.scope}'`, attr: null });
    assert.equal((await call(await t.createKey([e.scope]))).status, e.ok);
    // write implies read; read never implies write
    if (action === 'read') assert.equal((await call(await t.createKey([`${object}:write`]))).status, e.ok);
    else assert.equal((await call(await t.createKey([`${object}:read`]))).status, 403);
    assert.equal((await call(await t.createKey(['*']))).status, e.ok);
    // a key scoped to another project is refused; one scoped to this project works
    const elsewhere = await t.createKey([e.scope], [t.projectId + 1000]);
    const r = await call(elsewhere);
    assert.equal(r.status, 403);
    assert.equal(r.body.detail, `API key does not have access to the requested project: ID ${t.projectId}.`);
    assert.equal((await call(await t.createKey([e.scope], [t.projectId]))).status, e.ok);
    assert.equal((await t.request(e.method, e.path(), { key: null, body: e.body?.() })).status, 401);
  });
}

test('a flag of another project is 404 through this project', async () => {
  const [p2] = await t.db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token)
    VALUES (${t.organizationId}, 'Other', ${'phc_other_' + Date.now()}) RETURNING id`;
  const other = await t.request('POST', `/api/projects/${p2!.id}/feature_flags/`, { body: { key: 'matrix' } });
  assert.equal(other.status, 201, 'keys are unique per project only');
  assert.equal((await t.request('GET', `${base}${other.body.id}/`)).status, 404);
  assert.equal((await t.request('PATCH', `${base}${other.body.id}/`, { body: { name: 'x' } })).status, 404);
  const act = await t.request('GET', `${base}${other.body.id}/activity/`);
  assert.equal(act.status, 404);
  assert.equal(act.text, '');
});

test('malformed JSON → 400 parse_error; wrong content type → 415; huge body → 413; server stays up', async () => {
  const bad = await t.request('POST', base, { rawBody: '{"key": "x",', headers: { 'content-type': 'application/json' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.code, 'parse_error');
  const form = await t.request('POST', base, { rawBody: 'key=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.equal(form.status, 415);
  const huge = await t.request('PATCH', `${base}${flagId}/`, { rawBody: JSON.stringify({ name: 'x'.repeat(64 * 1024) }), headers: { 'content-type': 'application/json' } });
  assert.equal(huge.status, 413);
  const nonObject = await t.request('POST', base, { rawBody: '"just a string"', headers: { 'content-type': 'application/json' } });
  assert.equal(nonObject.status, 400);
  assert.equal(nonObject.body.type, 'validation_error');
  const nul = await t.request('PATCH', `${base}${flagId}/`, { rawBody: 'null', headers: { 'content-type': 'application/json' } });
  assert.equal(nul.status, 400);
  assert.equal(nul.body.detail, 'Invalid data. Expected a dictionary, but got NoneType.');
  assert.equal((await t.request('GET', `${base}${flagId}/`)).status, 200, 'still serving');
});
