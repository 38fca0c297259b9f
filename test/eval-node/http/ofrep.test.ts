/**
 * OFREP on a node, driven by the real OpenFeature server SDK with the real OFREP
 * provider, and by plain HTTP for the protocol's edges. Expected values are what POST /flags
 * answers for the same user on the same node (one evaluator), never hard-coded.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { OpenFeature, type Client } from '@openfeature/server-sdk';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { postFlags, PROJECT_TOKEN, request, startTestNode, type TestNode } from './fixture.js';

let node: TestNode;
let client: Client;

before(async () => {
  node = await startTestNode();
  await OpenFeature.setProviderAndWait(new OFREPProvider({ baseUrl: node.url, headers: { Authorization: `Bearer ${PROJECT_TOKEN}` } }));
  client = OpenFeature.getClient();
});
after(async () => {
  await OpenFeature.close();
  await node.close();
});

/** /flags v2 for a user: the reference every OFREP answer is compared with. */
async function reference(distinctId: string, personProperties: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const r = await postFlags(node, { api_key: PROJECT_TOKEN, distinct_id: distinctId, person_properties: personProperties });
  assert.equal(r.status, 200);
  return r.json().flags;
}

const ofrep = (path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${PROJECT_TOKEN}` }) =>
  request(`${node.url}/ofrep/v1/evaluate/flags${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });

test('the OpenFeature SDK reads boolean and multivariate flags as /flags answers them', async () => {
  for (let i = 0; i < 40; i++) {
    const id = `of-user-${i}`;
    const email = i % 2 === 0 ? `u${i}@example.com` : `u${i}@other.org`;
    const expected = await reference(id, { email });
    const ctx = { targetingKey: id, email };
    assert.equal(await client.getBooleanValue('email-flag', false, ctx), expected['email-flag'].enabled, `${id} email-flag`);
    assert.equal(await client.getBooleanValue('rollout-50', false, ctx), expected['rollout-50'].enabled, `${id} rollout-50`);
    const mv = await client.getStringDetails('mv', 'fallback', ctx);
    assert.equal(mv.value, expected.mv.variant, `${id} mv`);
    assert.equal(mv.flagMetadata.payload, expected.mv.metadata.payload, 'the payload travels in the metadata');
  }
});

test('unknown flags resolve to the default with FLAG_NOT_FOUND; a missing targeting key is reported', async () => {
  const missing = await client.getBooleanDetails('no-such-flag', true, { targetingKey: 'u' });
  assert.equal(missing.value, true);
  assert.equal(missing.errorCode, 'FLAG_NOT_FOUND');
  const r = await ofrep('/no-such-flag', { context: { targetingKey: 'u' } });
  assert.equal(r.status, 404);
  assert.deepEqual(r.json(), { key: 'no-such-flag', errorCode: 'FLAG_NOT_FOUND', errorDetails: 'flag "no-such-flag" is not active in this project' });
  const noKey = await ofrep('/always-on', { context: { email: 'x' } });
  assert.equal(noKey.status, 400);
  assert.equal(noKey.json().errorCode, 'TARGETING_KEY_MISSING');
  const bad = await ofrep('/always-on', { context: 'nope' });
  assert.equal(bad.json().errorCode, 'INVALID_CONTEXT');
  const parse = await request(`${node.url}/ofrep/v1/evaluate/flags/always-on`, { method: 'POST', body: '{nope', headers: { authorization: `Bearer ${PROJECT_TOKEN}` } });
  assert.equal(parse.status, 400);
  assert.equal(parse.json().errorCode, 'PARSE_ERROR');
});

test('authorised by the project API key, as Bearer or X-API-Key', async () => {
  assert.equal((await ofrep('/always-on', { context: { targetingKey: 'u' } }, {})).status, 401);
  assert.equal((await ofrep('/always-on', { context: { targetingKey: 'u' } }, { authorization: 'Bearer phc_unknownUnknownUnknown000' })).status, 401);
  const viaHeader = await ofrep('/always-on', { context: { targetingKey: 'u' } }, { 'x-api-key': PROJECT_TOKEN });
  assert.equal(viaHeader.status, 200);
  assert.deepEqual({ value: viaHeader.json().value, reason: viaHeader.json().reason }, { value: true, reason: 'TARGETING_MATCH' });
});

test('bulk evaluation lists every flag /flags answers, with an ETag and 304', async () => {
  const ctx = { targetingKey: 'bulk-user', email: 'b@example.com' };
  const expected = await reference('bulk-user', { email: 'b@example.com' });
  const r = await ofrep('', { context: ctx });
  assert.equal(r.status, 200);
  const etag = String(r.headers.etag);
  const flags = r.json().flags as { key: string; value: unknown }[];
  assert.deepEqual(flags.map((f) => f.key).sort(), Object.keys(expected).sort());
  for (const f of flags) assert.equal(f.value, expected[f.key].enabled ? (expected[f.key].variant ?? true) : false, f.key);
  const again = await ofrep('', { context: ctx }, { authorization: `Bearer ${PROJECT_TOKEN}`, 'if-none-match': etag });
  assert.equal(again.status, 304);
  const other = await ofrep('', { context: { targetingKey: 'someone-else' } }, { authorization: `Bearer ${PROJECT_TOKEN}`, 'if-none-match': etag });
  assert.ok(other.status === 200 || other.status === 304, 'another context may or may not change the answer');
  const pre = await request(`${node.url}/ofrep/v1/evaluate/flags`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-headers': 'authorization,content-type' } });
  assert.equal(pre.status, 200, 'browsers (the OFREP web provider) get a preflight');
  assert.equal(pre.headers['access-control-allow-headers'], 'authorization,content-type');
});
