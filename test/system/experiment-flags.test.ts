/**
 * An experiment created and launched through the management API, with a
 * 20 % holdout, is served by a real node — over 4,000 distinct ids on `/flags` the holdout
 * takes its share within ±2 points (3 standard errors) and the rest splits between control and test — and
 * posthog-node (remote and local evaluation against the node) gets the same variants.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PostHog } from 'posthog-node';
import { keepAliveClient } from '../support/keep-alive.js';
import { waitFor } from '../support/wait.js';
import { flags, startCluster, waitReady } from './support.js';

const IDS = 4_000;
const HOLDOUT_PERCENT = 20;
const CONCURRENCY = 50;
/** Ids whose variant posthog-node must agree on, remotely and locally (every variant among them). */
const SDK_IDS = 100;

test('a launched experiment with a 20 % holdout: /flags over 4,000 ids, and posthog-node agrees', async () => {
  const c = await startCluster();
  let ph: PostHog | null = null;
  // The sweep reuses connections: about a third of fetch's CPU per request, on both sides.
  const http = keepAliveClient(CONCURRENCY);
  try {
    const t = c.t;
    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    const h = await t.request('POST', `/api/projects/${t.projectId}/experiment_holdouts/`, { body: { name: 'Global holdout', filters: [{ properties: [], rollout_percentage: HOLDOUT_PERCENT }] } });
    assert.equal(h.status, 201, h.text);
    const x = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, { body: { name: 'Pricing page', feature_flag_key: 'pricing-page', holdout_id: h.body.id } });
    assert.equal(x.status, 201, x.text);
    const launched = await t.request('PATCH', `/api/projects/${t.projectId}/experiments/${x.body.id}/`, { body: { start_date: new Date().toISOString() } });
    assert.equal(launched.status, 200, launched.text);
    assert.equal(launched.body.feature_flag.active, true);
    const holdoutVariant = `holdout-${h.body.id}`;
    await waitFor('the node serves the launched flag', async () => (await flags(node.http.url, t.projectKey, 'probe')).body?.flags?.['pricing-page']?.enabled === true, { timeoutMs: 30_000 });

    const variants = new Map<string, string>();
    for (let start = 0; start < IDS; start += CONCURRENCY) {
      await Promise.all(Array.from({ length: Math.min(CONCURRENCY, IDS - start) }, async (_, i) => {
        const id = `person-${start + i}`;
        const r = await http.post(`${node.http.url}/flags?v=2`, { api_key: t.projectKey, distinct_id: id });
        assert.equal(r.status, 200, r.text);
        variants.set(id, r.body.flags['pricing-page'].variant as string);
      }));
    }
    const counts = new Map<string, number>();
    for (const v of variants.values()) counts.set(v, (counts.get(v) ?? 0) + 1);
    const share = (100 * (counts.get(holdoutVariant) ?? 0)) / IDS;
    assert.ok(Math.abs(share - HOLDOUT_PERCENT) <= 2, `holdout share ${share.toFixed(2)} %`);
    assert.deepEqual([...counts.keys()].sort(), ['control', holdoutVariant, 'test'].sort());
    const control = (100 * counts.get('control')!) / IDS;
    const test = (100 * counts.get('test')!) / IDS;
    assert.ok(Math.abs(control - test) <= 4.5, `control ${control.toFixed(2)} % vs test ${test.toFixed(2)} %`);

    ph = new PostHog(t.projectKey, { host: node.http.url, personalApiKey: t.personalKey, featureFlagsPollingInterval: 60_000, flushAt: 1000, flushInterval: 0, disableGeoip: true });
    assert.equal(await ph.waitForLocalEvaluationReady(10_000), true);
    const compared = Array.from({ length: SDK_IDS }, (_, i) => variants.get(`person-${i}`));
    assert.equal(new Set(compared).size, 3, 'the compared ids cover control, test and the holdout');
    for (let i = 0; i < SDK_IDS; i++) {
      const id = `person-${i}`;
      const remote: unknown = await ph.getFeatureFlag('pricing-page', id, { sendFeatureFlagEvents: false });
      assert.equal(remote, variants.get(id), `remote ${id}`);
      const local: unknown = await ph.getFeatureFlag('pricing-page', id, { onlyEvaluateLocally: true, sendFeatureFlagEvents: false });
      assert.equal(local, variants.get(id), `local ${id}`);
    }
  } finally {
    http.close();
    await ph?.shutdown();
    await c.close();
  }
});
