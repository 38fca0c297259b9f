/**
 * `POST /api/personal_api_keys/` (the console's "New key"): the value is returned once and works
 * with exactly its scopes; PostHog's refusals (unknown scope, blank label, another organization's
 * project, more than 10 keys); and no key can grant a scope it does not hold.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';

let t: TestControlPlane;
before(async () => { t = await startTestControlPlane(); });
after(async () => { await t?.close(); });

test('a created key works with exactly its scopes, and its value is shown only once', async () => {
  const r = await t.request('POST', '/api/personal_api_keys/', { body: { label: 'ci', scopes: ['feature_flag:read'] } });
  assert.equal(r.status, 201, r.text);
  assert.match(r.body.value, /^phx_/);
  assert.deepEqual(r.body.scopes, ['feature_flag:read']);
  assert.equal((await t.request('GET', `/api/projects/${t.projectId}/feature_flags/`, { key: r.body.value })).status, 200);
  assert.equal((await t.request('POST', `/api/projects/${t.projectId}/feature_flags/`, { key: r.body.value, body: { key: 'nope' } })).status, 403);
  const listed = await t.request('GET', `/api/personal_api_keys/${r.body.id}/`);
  assert.equal(listed.body.value, undefined, 'never shown again');
});

test('refusals: unknown scope, blank label, a foreign project, escalation, more than ten keys', async () => {
  const bad = async (body: unknown, key?: string) => t.request('POST', '/api/personal_api_keys/', { body, key });
  assert.deepEqual([(await bad({ label: 'x', scopes: ['flags:read'] })).body.detail], ['Invalid scope: flags:read']);
  assert.equal((await bad({ label: ' ', scopes: ['feature_flag:read'] })).body.attr, 'label');
  assert.equal((await bad({ label: 'x', scopes: ['feature_flag:read'], scoped_teams: [987654] })).body.detail, 'You must be a member of all teams that you are scoping the key to.');
  const limited = await t.createKey(['user:write', 'feature_flag:read']);
  assert.equal((await bad({ label: 'x', scopes: ['*'] }, limited)).status, 403, 'user:write cannot mint an all-scope key');
  assert.equal((await bad({ label: 'x', scopes: ['experiment:read'] }, limited)).status, 403);
  assert.equal((await bad({ label: 'x', scopes: ['feature_flag:read'] }, limited)).status, 201);
  for (;;) {
    const r = await bad({ label: 'more', scopes: ['feature_flag:read'] });
    if (r.status !== 201) {
      assert.equal(r.body.detail, 'You can only have 10 personal API keys. Remove an existing key before creating a new one.');
      break;
    }
  }
});
