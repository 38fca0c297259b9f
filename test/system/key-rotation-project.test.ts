/**
 * Project API key rotation as a system: PostHog's `PATCH /api/projects/:id/reset_token/` on a
 * real control plane, the new project entity over the real gRPC Watch stream to a real node, and
 * the real posthog-node SDK on both keys. During the overlap (and across a settings change of the
 * project) the replaced key keeps working for remote config, remote and local evaluation and
 * capture (its events land in the same project) and for the control plane's `@current?token=`;
 * after it the node refuses it (the measured delay after the expiry is printed: figures from a
 * shared 2-core machine, noisy). With overlap 0 the replaced key stops as soon as the new one
 * reaches the node.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { PostHog } from 'posthog-node';
import { waitFor } from '../support/wait.js';
import { createFlag, flags, get, startCluster, waitForEventsOnce, waitReady, type SystemCluster } from './support.js';

/** Overlap of the first test, in seconds: room for every check below on a loaded machine. */
const OVERLAP_SECONDS = 8;

function sdk(c: SystemCluster, token: string, host: string, local = false): PostHog {
  return new PostHog(token, {
    host, flushAt: 1, flushInterval: 0, disableGeoip: true, fetchRetryCount: 0,
    ...(local ? { personalApiKey: c.t.personalKey, featureFlagsPollingInterval: 100 } : {}),
  });
}

async function resetToken(c: SystemCluster): Promise<string> {
  const r = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/reset_token/`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.id, c.t.projectId);
  assert.match(r.body.api_token, /^phc_[0-9A-Za-z]{43}$/);
  assert.notEqual(r.body.api_token, c.t.projectKey);
  return r.body.api_token as string;
}

/** Status of the control plane's `@current?token=` (404 when no project has the key). */
async function currentStatus(c: SystemCluster, token: string): Promise<number> {
  const r = await c.t.request('GET', `/api/projects/@current/?token=${token}`);
  if (r.status === 200) assert.equal(r.body.id, c.t.projectId);
  return r.status;
}

/** A node of `c` serving the flag `rot-flag` (on for everyone) under the project's first key. */
async function nodeServingFlag(c: SystemCluster): Promise<Awaited<ReturnType<SystemCluster['startNode']>>> {
  await createFlag(c, { key: 'rot-flag', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
  const node = await c.startNode(c.tempDir());
  await waitReady(node.http.url);
  await waitFor('the flag on the node', async () => (await flags(node.http.url, c.t.projectKey, 'u')).body?.flags?.['rot-flag']?.enabled === true);
  return node;
}

test('reset_token: both keys work during the overlap, on nodes and the control plane; then only the new one', async () => {
  const c = await startCluster({ projectTokenOverlapSeconds: OVERLAP_SECONDS });
  const clients: PostHog[] = [];
  try {
    const oldToken = c.t.projectKey;
    const node = await nodeServingFlag(c);

    // Scope and read-only field, as PostHog.
    const readOnly = await c.t.createKey(['project:read']);
    assert.equal((await c.t.request('PATCH', `/api/projects/${c.t.projectId}/reset_token/`, { key: readOnly })).status, 403);
    const ignored = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/`, { body: { api_token: 'phc_chosenByTheClient0000000000' } });
    assert.equal(ignored.status, 200, ignored.text);
    assert.equal(ignored.body.api_token, oldToken, 'api_token is read-only: ignored');

    const resetAt = Date.now();
    const newToken = await resetToken(c);
    assert.equal((await c.t.request('GET', `/api/projects/${c.t.projectId}/`)).body.api_token, newToken);
    const [row] = await c.t.db.sql<{ expires: Date }[]>`SELECT previous_api_token_expires_at AS expires FROM projects WHERE id = ${c.t.projectId}`;
    const expiresAt = row!.expires.getTime();
    await waitFor('the new key on the node', async () => (await flags(node.http.url, newToken, 'u')).status === 200, { intervalMs: 10 });
    console.log(`# new key accepted by the node ${Date.now() - resetAt} ms after the reset (noisy shared machine)`);
    // A settings change during the overlap rewrites the project entity: the replaced key must survive it.
    assert.equal((await c.t.request('PATCH', `/api/projects/${c.t.projectId}/`, { body: { heatmaps_opt_in: true } })).status, 200);
    await waitFor('the settings change on the node', async () => (await get(`${node.http.url}/array/${newToken}/config`)).body?.heatmaps === true, { intervalMs: 10 });
    assert.equal((await get(`${node.http.url}/array/${oldToken}/config`)).body?.heatmaps, true, 'remote config with the replaced key');

    // During the overlap: remote and local evaluation and capture with both keys.
    const uuids: string[] = [];
    for (const token of [oldToken, newToken]) {
      const remote = sdk(c, token, node.http.url);
      const local = sdk(c, token, node.http.url, true);
      clients.push(remote, local);
      assert.equal(await remote.getFeatureFlag('rot-flag', 'user-1', { sendFeatureFlagEvents: false }), true, `remote evaluation, ${token === oldToken ? 'old' : 'new'} key`);
      assert.equal(await local.waitForLocalEvaluationReady(5_000), true, `local evaluation ready, ${token === oldToken ? 'old' : 'new'} key`);
      assert.equal(await local.getFeatureFlag('rot-flag', 'user-1', { onlyEvaluateLocally: true, sendFeatureFlagEvents: false }), true);
      await local.shutdown(); // it would poll the node for the rest of the overlap
      const uuid = crypto.randomUUID();
      uuids.push(uuid);
      remote.capture({ distinctId: 'rotating-user', event: 'rot_event', uuid });
      await remote.flush();
      assert.equal(await currentStatus(c, token), 200, 'the control plane\'s @current?token=');
    }
    assert.ok(Date.now() < expiresAt, 'the overlap checks ran inside the overlap (raise OVERLAP_SECONDS on a slower machine)');
    await waitForEventsOnce(c.t, uuids); // both in the same project (c.t.projectId)

    // The end of the overlap, by the node's clock: no message is needed. The close polling (for
    // the delay printed below) starts 100 ms before the expiry.
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - 100 - Date.now())));
    const refused = await waitFor('the old key refused by the node', async () => {
      const r = await flags(node.http.url, oldToken, 'u');
      return r.status === 401 ? Date.now() : null;
    }, { timeoutMs: OVERLAP_SECONDS * 1000 + 10_000, intervalMs: 10 });
    console.log(`# old key refused by the node ${refused - expiresAt} ms after the overlap ended (noisy shared machine)`);
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt + 1_000 - Date.now())));
    assert.equal((await flags(node.http.url, oldToken, 'u')).status, 401, 'refused 1 s after the overlap');
    assert.equal(await currentStatus(c, oldToken), 404, 'the control plane refuses it too');
    const oldAfter = sdk(c, oldToken, node.http.url);
    clients.push(oldAfter);
    assert.equal(await oldAfter.getFeatureFlag('rot-flag', 'user-1', { sendFeatureFlagEvents: false }), undefined);

    const newAfter = sdk(c, newToken, node.http.url);
    clients.push(newAfter);
    assert.equal(await newAfter.getFeatureFlag('rot-flag', 'user-2', { sendFeatureFlagEvents: false }), true, 'posthog-node with the new key');
    const last = crypto.randomUUID();
    newAfter.capture({ distinctId: 'rotating-user', event: 'rot_event', uuid: last });
    await newAfter.flush();
    await waitForEventsOnce(c.t, [last]);
  } finally {
    for (const p of clients) await p.shutdown().catch(() => {});
    await c.close();
  }
});

test('reset_token with overlap 0: the old key stops as soon as the new one reaches the node', async () => {
  const c = await startCluster({ projectTokenOverlapSeconds: 0 });
  let ph: PostHog | null = null;
  try {
    const oldToken = c.t.projectKey;
    const node = await nodeServingFlag(c);
    const resetAt = Date.now();
    const newToken = await resetToken(c);
    assert.equal(await currentStatus(c, oldToken), 404, 'the control plane refuses the old key at once');
    const [row] = await c.t.db.sql`SELECT previous_api_token, previous_api_token_expires_at FROM projects WHERE id = ${c.t.projectId}`;
    assert.deepEqual({ ...row }, { previous_api_token: null, previous_api_token_expires_at: null });
    await waitFor('the new key on the node', async () => (await flags(node.http.url, newToken, 'u')).status === 200, { intervalMs: 10 });
    // Each IO thread of the node reads the change on its own turn: within a second, every one refuses the old key.
    await waitFor('the old key refused, once the new one is served', async () => (await flags(node.http.url, oldToken, 'u')).status === 401, { timeoutMs: 1_000, intervalMs: 10 });
    console.log(`# overlap 0: key swapped on the node ${Date.now() - resetAt} ms after the reset (noisy shared machine)`);
    ph = new PostHog(newToken, { host: node.http.url, flushAt: 1, flushInterval: 0, disableGeoip: true, fetchRetryCount: 0 });
    assert.equal(await ph.getFeatureFlag('rot-flag', 'user-3', { sendFeatureFlagEvents: false }), true);
  } finally {
    await ph?.shutdown().catch(() => {});
    await c.close();
  }
});
