/**
 * Issue "evaluation nodes", local evaluation as a system: posthog-node polling a node's
 * `/flags/definitions` (personal API key, ETag) follows flags created, PATCHed and deleted
 * through the management API, and keeps evaluating locally while the control plane is down.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PostHog } from 'posthog-node';
import { waitFor } from '../support/wait.js';
import { flags, startCluster, waitReady } from './support.js';

test('posthog-node local evaluation against a node follows management API changes', async () => {
  const c = await startCluster();
  let ph: PostHog | null = null;
  try {
    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    const created = await c.t.request('POST', `/api/projects/${c.t.projectId}/feature_flags/`, {
      body: { key: 'sys-local', filters: { groups: [{ properties: [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }], rollout_percentage: 100 }] } },
    });
    assert.equal(created.status, 201, created.text);
    await waitFor('flag on the node', async () => (await flags(node.http.url, c.t.projectKey, 'x')).body?.flags?.['sys-local'] !== undefined);
    ph = new PostHog(c.t.projectKey, {
      host: node.http.url, personalApiKey: c.t.personalKey, featureFlagsPollingInterval: 100, flushAt: 1000, flushInterval: 0, disableGeoip: true,
    });
    assert.equal(await ph.waitForLocalEvaluationReady(10_000), true);
    const local = (plan: string) => ph!.getFeatureFlag('sys-local', 'user-1', { personProperties: { plan }, onlyEvaluateLocally: true, sendFeatureFlagEvents: false });
    assert.equal(await local('pro'), true);
    assert.equal(await local('free'), false);

    const patch = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/feature_flags/${created.body.id}/`, {
      body: { filters: { groups: [{ properties: [{ key: 'plan', type: 'person', operator: 'exact', value: ['free'] }], rollout_percentage: 100 }] } },
    });
    assert.equal(patch.status, 200, patch.text);
    await waitFor('local evaluation sees the PATCH', async () => (await local('free')) === true && (await local('pro')) === false, { timeoutMs: 30_000, intervalMs: 50 });

    await c.restartControlPlane({ down: true });
    await new Promise((r) => setTimeout(r, 300)); // a few polls without a control plane
    assert.equal(await local('free'), true, 'still evaluating locally from the node');
    await c.startControlPlane();

    const del = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/feature_flags/${created.body.id}/`, { body: { deleted: true } });
    assert.equal(del.status, 200, del.text);
    await waitFor('local evaluation drops the deleted flag', async () => (await local('free')) === undefined, { timeoutMs: 60_000, intervalMs: 50 });
  } finally {
    await ph?.shutdown().catch(() => {});
    await c.close();
  }
});
