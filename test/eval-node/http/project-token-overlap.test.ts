/**
 * A project key replaced by a reset (`previous_api_token` until `previous_api_token_expires_at`
 * on the replicated project entity): every token-authenticated route of a node accepts it
 * during the overlap and refuses it once the node's own clock passes the expiry, with no write
 * in between; a later change of the project drops the replaced key from the token index. Real
 * node store, real uWS server, plain HTTP (the whole path through the control plane is
 * test/system/key-rotation-project.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { StoreChange } from '../../../src/eval-node/store/lmdb.js';
import { PERSONAL_KEY, postFlags, request, standardFlags, startTestNode, worldChanges } from './fixture.js';
import { waitFor } from '../../support/wait.js';

const NEW_TOKEN = 'phc_rotatedProjectToken00000000001';
const OLD_TOKEN = 'phc_testProjectToken0000000001';
/** Overlap left when the node starts, in ms: long enough for a node start and one pass over the routes on a loaded machine. */
const OVERLAP_MS = 8_000;

function rotatedProject(previous: string | null, expiresAtMs: number | null, token = NEW_TOKEN): StoreChange {
  const payload: Record<string, unknown> = { id: 1, organization_id: 1, name: 'P1', api_token: token, timezone: 'UTC' };
  if (previous !== null) { payload.previous_api_token = previous; payload.previous_api_token_expires_at = expiresAtMs; }
  return { kind: 'project', entityId: '1', projectId: 1, op: 'upsert', payload };
}

/** Status of every token-authenticated route for `token`. */
async function statuses(url: string, token: string): Promise<Record<string, number>> {
  const node = { url };
  const ofrep = await request(`${url}/ofrep/v1/evaluate/flags/always-on`, {
    method: 'POST', body: JSON.stringify({ context: { targetingKey: 'u1' } }), headers: { 'content-type': 'application/json', 'x-api-key': token },
  });
  const feed = await request(`${url}/api/feature_flag/local_evaluation?token=${token}&send_cohorts`, { headers: { authorization: `Bearer ${PERSONAL_KEY}` } });
  return {
    flags: (await postFlags(node, { api_key: token, distinct_id: 'u1' })).status,
    decide: (await postFlags(node, { token, distinct_id: 'u1' }, { path: '/decide?v=3' })).status,
    ofrep: ofrep.status,
    remote_config: (await request(`${url}/array/${token}/config`)).status,
    local_evaluation: feed.status,
  };
}

const ALL_OK = { flags: 200, decide: 200, ofrep: 200, remote_config: 200, local_evaluation: 200 };

test('a replaced key works on every route until its expiry by the node\'s clock, then is refused', async () => {
  const changes = worldChanges(standardFlags()).map((c) => (c.kind === 'project' && c.entityId === '1' ? rotatedProject(OLD_TOKEN, Date.now() + OVERLAP_MS) : c));
  const node = await startTestNode({ changes });
  try {
    assert.deepEqual(await statuses(node.url, NEW_TOKEN), ALL_OK);
    assert.deepEqual(await statuses(node.url, OLD_TOKEN), ALL_OK, 'the replaced key during the overlap');
    const expiry = (node.store.project(1) as { previous_api_token_expires_at: number }).previous_api_token_expires_at;
    await waitFor('the replaced key refused', async () => (await postFlags(node, { api_key: OLD_TOKEN, distinct_id: 'u1' })).status === 401,
      { timeoutMs: OVERLAP_MS + 5_000, intervalMs: 20 });
    console.log(`# replaced key refused ${Date.now() - expiry} ms after its expiry (noisy shared machine)`);
    assert.deepEqual(await statuses(node.url, OLD_TOKEN), { flags: 401, decide: 401, ofrep: 401, remote_config: 404, local_evaluation: 401 });
    assert.deepEqual(await statuses(node.url, NEW_TOKEN), ALL_OK, 'the current key after the overlap');
  } finally {
    await node.close();
  }
});

test('a second reset drops the key before; an entity without the previous-key fields (older writers) reads as none', async () => {
  const node = await startTestNode();
  try {
    assert.equal(node.store.projectByToken(OLD_TOKEN)?.id, 1);
    const far = Date.now() + 3_600_000;
    await node.store.applyBatch([rotatedProject(OLD_TOKEN, far)], 11);
    assert.equal(node.store.projectByToken(OLD_TOKEN)?.id, 1);
    assert.equal(node.store.projectByToken(NEW_TOKEN)?.id, 1);
    const third = 'phc_rotatedProjectToken00000000002';
    await node.store.applyBatch([rotatedProject(NEW_TOKEN, far, third)], 12);
    assert.equal(node.store.projectByToken(OLD_TOKEN), undefined, 'the key replaced two resets ago');
    assert.equal(node.store.projectByToken(NEW_TOKEN)?.id, 1);
    assert.equal(node.store.projectByToken(third)?.id, 1);
    // Overlap 0 (or an older control plane): no previous-key fields at all.
    await node.store.applyBatch([rotatedProject(null, null, third)], 13);
    assert.equal(node.store.projectByToken(NEW_TOKEN), undefined);
    assert.equal(node.store.projectByToken(third)?.id, 1);
    assert.equal((await postFlags(node, { api_key: NEW_TOKEN, distinct_id: 'u1' })).status, 401);
    assert.equal((await postFlags(node, { api_key: third, distinct_id: 'u1' })).status, 200);
  } finally {
    await node.close();
  }
});
