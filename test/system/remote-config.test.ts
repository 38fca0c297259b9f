/**
 * Remote config through the management API: project settings (PATCH /api/projects/<id>/)
 * reach every node's posthog-js remote config through the change log, and F10
 * `…/feature_flags/<id or key>/remote_config` answers on the control plane and on a node, where
 * the real posthog-node `getRemoteConfigPayload` reads it. Real Postgres, gRPC, node, SDK.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PostHog } from 'posthog-node';
import { waitFor } from '../support/wait.js';
import { createFlag, flags, get, startCluster, waitReady } from './support.js';

test('project settings reach the nodes\' remote config; only booleans, only with project:write', async () => {
  const c = await startCluster();
  try {
    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    const path = `/api/projects/${c.t.projectId}/`;
    const configUrl = `${node.http.url}/array/${c.t.projectKey}/config`;
    assert.equal((await get(configUrl)).body.heatmaps, false);

    const bad = await c.t.request('PATCH', path, { body: { heatmaps_opt_in: 'yes' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.attr, 'heatmaps_opt_in');
    const readOnly = await c.t.createKey(['project:read']);
    assert.equal((await c.t.request('PATCH', path, { body: { heatmaps_opt_in: true }, key: readOnly })).status, 403);

    const ok = await c.t.request('PATCH', path, { body: { heatmaps_opt_in: true, capture_dead_clicks: true, name: 'ignored' } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.heatmaps_opt_in, true);
    assert.equal(ok.body.autocapture_opt_out, false);
    assert.equal((await c.t.request('GET', path)).body.capture_dead_clicks, true);
    await waitFor('the node serving the new settings', async () => {
      const config = (await get(configUrl)).body;
      return config.heatmaps === true && config.captureDeadClicks === true;
    }, { timeoutMs: 20_000 });

    // A node started afterwards gets them from its snapshot.
    const late = await c.startNode(c.tempDir());
    await waitReady(late.http.url);
    assert.equal((await get(`${late.http.url}/array/${c.t.projectKey}/config`)).body.heatmaps, true);
  } finally {
    await c.close();
  }
});

test('F10 remote_config on the control plane and on a node, read by posthog-node', async () => {
  const c = await startCluster();
  let ph: PostHog | null = null;
  try {
    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    const create = (body: Record<string, unknown>) => createFlag(c, body);
    const rc = await create({ key: 'rc-theme', is_remote_configuration: true,
      filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"theme":"dark","n":2}' } } });
    const plain = await create({ key: 'rc-plain', filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"a":1}' } } });
    const empty = await create({ key: 'rc-empty', is_remote_configuration: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });

    const base = `/api/projects/${c.t.projectId}/feature_flags`;
    for (const ref of [String(rc.id), rc.key]) {
      const r = await c.t.request('GET', `${base}/${ref}/remote_config/`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body, '{"theme":"dark","n":2}', 'the stored JSON text, as a JSON string');
    }
    const current = await c.t.request('GET', `/api/projects/@current/feature_flags/rc-theme/remote_config?token=${c.t.projectKey}`);
    assert.equal(current.status, 200, current.text);
    assert.equal(current.body, '{"theme":"dark","n":2}');
    assert.equal((await c.t.request('GET', `${base}/${empty.id}/remote_config/`)).body, null);
    const notRc = await c.t.request('GET', `${base}/${plain.id}/remote_config/`);
    assert.equal(notRc.status, 404);
    assert.equal(notRc.text, '');
    assert.equal((await c.t.request('GET', `${base}/nope/remote_config/`)).status, 404);
    const noScope = await c.t.createKey(['project:read']);
    assert.equal((await c.t.request('GET', `${base}/${rc.id}/remote_config/`, { key: noScope })).status, 403);

    // posthog-node asks its host (the node) with the personal API key.
    const key = await c.t.createKey(['feature_flag:read']);
    await waitFor('the node serving rc-theme', async () => {
      const r = await fetch(`${node.http.url}/api/projects/@current/feature_flags/rc-theme/remote_config?token=${c.t.projectKey}`,
        { headers: { authorization: `Bearer ${key}` } });
      await r.arrayBuffer();
      return r.status === 200;
    }, { timeoutMs: 20_000 });
    ph = new PostHog(c.t.projectKey, { host: node.http.url, personalApiKey: key, flushAt: 1, fetchRetryCount: 0 });
    assert.deepEqual(await ph.getRemoteConfigPayload('rc-theme'), { theme: 'dark', n: 2 });
    assert.equal(await ph.getRemoteConfigPayload('rc-empty'), null);
    const onNode = await fetch(`${node.http.url}/api/projects/@current/feature_flags/rc-plain/remote_config?token=${c.t.projectKey}`,
      { headers: { authorization: `Bearer ${key}` } });
    assert.equal(onNode.status, 404);
    const noKey = await fetch(`${node.http.url}/api/projects/@current/feature_flags/rc-theme/remote_config?token=${c.t.projectKey}`);
    assert.equal(noKey.status, 401);
  } finally {
    await ph?.shutdown().catch(() => {});
    await c.close();
  }
});

test('property_matching_version 2 set on the project reaches the feeds and the nodes\' evaluation', async () => {
  const c = await startCluster();
  try {
    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    await createFlag(c, { key: 'not-false',
      filters: { groups: [{ properties: [{ key: 'beta', type: 'person', operator: 'exact', value: false }], rollout_percentage: 100 }] } });
    const enabled = async () => (await flags(node.http.url, c.t.projectKey, 'u1', { person_properties: { beta: 'banana' } })).body.flags['not-false']?.enabled;
    await waitFor('the flag on the node', async () => (await enabled()) !== undefined, { timeoutMs: 20_000 });
    assert.equal(await enabled(), true, 'legacy: false matches anything not truthy');
    const key = await c.t.createKey(['feature_flag:read']);
    const feed = () => fetch(`${node.http.url}/flags/definitions?token=${c.t.projectKey}`, { headers: { authorization: `Bearer ${key}` } });
    const before = await feed();
    const beforeTag = before.headers.get('etag');
    assert.equal((await before.json() as Record<string, unknown>).property_matching_version, undefined);

    assert.equal((await c.t.request('PATCH', `/api/projects/${c.t.projectId}/`, { body: { property_matching_version: 3 } })).status, 400);
    const ok = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/`, { body: { property_matching_version: 2 } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.property_matching_version, 2);
    await waitFor('explicit boolean equality on the node', async () => (await enabled()) === false, { timeoutMs: 20_000 });
    assert.equal((await flags(node.http.url, c.t.projectKey, 'u1', { person_properties: { beta: 'FALSE' } })).body.flags['not-false'].enabled, true);
    const after = await feed();
    assert.notEqual(after.headers.get('etag'), beforeTag, 'the feed ETag follows the setting');
    assert.equal((await after.json() as Record<string, unknown>).property_matching_version, 2);
    const f15 = await c.t.request('GET', `/api/projects/${c.t.projectId}/feature_flags/local_evaluation/`);
    assert.equal(f15.body.property_matching_version, 2);
  } finally {
    await c.close();
  }
});
