/**
 * NUL bytes and out-of-range
 * ids answer 400 (not 500); every answer carries `nosniff` and `no-store`; `next`/`previous`
 * links use SWITCHYARD_API_URL whatever the Host header says; a flag cannot be re-enabled while
 * a flag it depends on is deleted.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';

let t: TestControlPlane;
let base: string;

before(async () => {
  t = await startTestControlPlane({ apiUrl: 'https://flags.example.com' });
  base = `/api/projects/${t.projectId}/feature_flags/`;
});
after(async () => { await t.close(); });

test('NUL bytes and ids beyond bigint answer 400 (404 for a path id no row can have) in PostHog shape', async () => {
  for (const path of ['/api/projects/99999999999999999999/feature_flags/', `${base}99999999999999999999/`, `${base}-1/`]) {
    const r = await t.request('GET', path);
    assert.ok(r.status === 400 || r.status === 404, `${path}: ${r.status} ${r.text}`);
    assert.equal(typeof r.body.detail, 'string');
  }
  const cases: [string, string, unknown?][] = [
    ['GET', `${base}?search=a%00b`],
    ['GET', `${base}?created_by_id=99999999999999999999`],
    ['POST', base, { key: 'nul-name', name: 'a\u0000b' }],
    ['POST', base, { key: 'nul-filters', filters: { groups: [{ properties: [{ key: 'k\u0000', type: 'person', value: 'v', operator: 'exact' }], rollout_percentage: 100 }] } }],
  ];
  for (const [method, path, body] of cases) {
    const r = await t.request(method, path, body === undefined ? {} : { body });
    assert.equal(r.status, 400, `${method} ${path}: ${r.text}`);
    assert.ok(['invalid_request', 'validation_error'].includes(r.body.type), r.text);
    assert.equal(typeof r.body.detail, 'string');
  }
  const [{ n }] = await t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM feature_flags WHERE key LIKE 'nul-%'`;
  assert.equal(n, 0);
});

test('answers carry X-Content-Type-Options: nosniff and Cache-Control: no-store', async () => {
  for (const path of [base, '/api/projects/', '/nope/', '/_health']) {
    const r = await t.request('GET', path);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff', path);
    assert.equal(r.headers.get('cache-control'), 'no-store', path);
  }
});

test('the management API grants no CORS: a browser preflight from another origin gets no Access-Control-Allow-Origin', async () => {
  const pre = await t.request('OPTIONS', base, { key: null, headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
  assert.equal(pre.headers.get('access-control-allow-origin'), null);
  const get = await t.request('GET', base, { headers: { origin: 'https://evil.example' } });
  assert.equal(get.status, 200);
  assert.equal(get.headers.get('access-control-allow-origin'), null);
});

test('next and previous links use SWITCHYARD_API_URL, not the Host header', async () => {
  for (const key of ['page-a', 'page-b', 'page-c']) assert.equal((await t.request('POST', base, { body: { key } })).status, 201);
  const port = new URL(t.baseUrl).port;
  const body = await new Promise<string>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: `${base}?limit=1&offset=1`, headers: { host: 'evil.example', authorization: `Bearer ${t.personalKey}` } }, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve(data));
    });
    req.on('error', reject);
    req.end();
  });
  const page = JSON.parse(body) as { next: string; previous: string };
  assert.equal(page.next, `https://flags.example.com${base}?limit=1&offset=2`);
  assert.equal(page.previous, `https://flags.example.com${base}?limit=1`);
});

test('a flag cannot be re-enabled while a flag it depends on is deleted', async () => {
  const dep = (await t.request('POST', base, { body: { key: 'dep-of-reenable' } })).body.id as number;
  const child = await t.request('POST', base, { body: { key: 'reenable-child', filters: { groups: [{ properties: [{ key: String(dep), type: 'flag', value: true, operator: 'flag_evaluates_to' }], rollout_percentage: 100 }] } } });
  assert.equal(child.status, 201, child.text);
  assert.equal((await t.request('PATCH', `${base}${child.body.id}/`, { body: { active: false } })).status, 200);
  assert.equal((await t.request('PATCH', `${base}${dep}/`, { body: { deleted: true } })).status, 200);
  const again = await t.request('PATCH', `${base}${child.body.id}/`, { body: { active: true } });
  assert.equal(again.status, 400, again.text);
  assert.equal(again.body.attr, 'filters');
  assert.equal(again.body.detail, `Cannot enable this feature flag because it depends on deleted flags (IDs: ${dep}). Please update its filters first.`);
});
