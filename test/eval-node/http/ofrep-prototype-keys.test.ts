/**
 * Flag keys that name Object.prototype members (`__proto__`, `constructor`, `toString`,
 * `hasOwnProperty`, `valueOf`) on a node: OFREP answers 404 FLAG_NOT_FOUND for them unless the
 * project has a flag of that key (flag keys allow them), and `/flags` `flag_keys_to_evaluate`
 * never turns them into answers. Real node store, real uWS server, plain HTTP.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { flag, postFlags, PROJECT_TOKEN, request, standardFlags, startTestNode, worldChanges, type TestNode } from './fixture.js';

let node: TestNode;
const all = { groups: [{ properties: [], rollout_percentage: 100 }] };

before(async () => {
  // A real flag keyed `constructor` (valid: letters only) must still be found.
  node = await startTestNode({ changes: worldChanges([...standardFlags(), flag('constructor', all)]) });
});
after(async () => { await node.close(); });

const ofrep = (key: string) => request(`${node.url}/ofrep/v1/evaluate/flags/${encodeURIComponent(key)}`, {
  method: 'POST', body: JSON.stringify({ context: { targetingKey: 'proto-user' } }),
  headers: { 'content-type': 'application/json', authorization: `Bearer ${PROJECT_TOKEN}` },
});

const PROTOTYPE_NAMES = ['__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'isPrototypeOf'];

test('OFREP answers 404 FLAG_NOT_FOUND for prototype member names that are not flags', async () => {
  for (const key of PROTOTYPE_NAMES) {
    const r = await ofrep(key);
    assert.equal(r.status, 404, `${key}: ${r.text}`);
    assert.deepEqual(r.json(), { key, errorCode: 'FLAG_NOT_FOUND', errorDetails: `flag "${key}" is not active in this project` }, key);
  }
});

test('a flag keyed like a prototype member is evaluated as any flag', async () => {
  const r = await ofrep('constructor');
  assert.equal(r.status, 200, r.text);
  const reference = await postFlags(node, { api_key: PROJECT_TOKEN, distinct_id: 'proto-user' });
  assert.equal(r.json().value, reference.json().flags.constructor.enabled);
  assert.equal(r.json().key, 'constructor');
});

test('/flags flag_keys_to_evaluate with prototype member names answers only real flags', async () => {
  const r = await postFlags(node, { api_key: PROJECT_TOKEN, distinct_id: 'proto-user', flag_keys_to_evaluate: [...PROTOTYPE_NAMES, 'always-on', 'constructor'] });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.json().flags).sort(), ['always-on', 'constructor']);
  const v1 = await postFlags(node, { api_key: PROJECT_TOKEN, distinct_id: 'proto-user', flag_keys_to_evaluate: PROTOTYPE_NAMES }, { path: '/flags?v=1' });
  assert.equal(v1.status, 200, v1.text);
  assert.deepEqual(v1.json().featureFlags, {});
});
