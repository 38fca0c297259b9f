/**
 * The wrong port says where things are. `GET /` on the management API describes
 * it; SDK paths (`/flags`, `/decide`, capture, remote config) sent to it are 404 naming the
 * evaluation node's port; `GET /` on a node lists its routes. Real control plane and node.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { request, startTestNode } from '../../eval-node/http/fixture.js';

let t: TestControlPlane;
before(async () => { t = await startTestControlPlane(); });
after(async () => { await t.close(); });

test('GET / on the management API says what it serves and where /flags is', async () => {
  const r = await t.request('GET', '/', { key: null });
  assert.equal(r.status, 200);
  assert.equal(r.body.component, 'control-plane');
  assert.match(r.body.evaluation, /SWITCHYARD_FLAGS_PORT/);
});

test('SDK paths on the management port are 404 pointing at the evaluation node', async () => {
  for (const [method, path] of [['POST', '/flags/?v=2'], ['POST', '/decide/'], ['POST', '/i/v0/e/'], ['POST', '/batch/'], ['GET', '/array/phc_x/config']] as const) {
    const r = await t.request(method, path, { key: null, body: method === 'POST' ? { api_key: 'phc_x', distinct_id: 'u' } : undefined });
    assert.equal(r.status, 404, path);
    assert.equal(r.body.type, 'invalid_request');
    assert.match(r.body.detail, /served by evaluation nodes .*SWITCHYARD_FLAGS_PORT/, path);
  }
  assert.equal((await t.request('GET', '/api/nothing-here/', { key: null })).body.detail, 'Not found.', 'other paths unchanged');
});

test('GET / on a node lists its public routes and where the management API is', async () => {
  const node = await startTestNode();
  try {
    const r = await request(`${node.url}/`);
    assert.equal(r.status, 200);
    const body = r.json();
    assert.equal(body.component, 'evaluation-node');
    assert.match(body.flags, /POST \/flags/);
    assert.match(body.management_api, /SWITCHYARD_API_PORT/);
  } finally {
    await node.close();
  }
});
