/**
 * Posthog-node evaluates a launched experiment's flag on a real node (which
 * makes it send `$feature_flag_called` exposures) and captures conversions; the node ships the
 * events to the control plane; `POST /query/` then returns exactly the per-variant figures a
 * direct computation from what the test sent predicts, with the statistics the module gives for
 * them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PostHog } from 'posthog-node';
import { waitFor } from '../support/wait.js';
import { prng } from '../support/prng.js';
import { analyze } from '../../src/stats/analyze.js';
import { flags, startCluster, waitReady } from './support.js';

const USERS = 160;

test('posthog-node exposures and conversions through a node give the query result a direct computation predicts', async () => {
  const c = await startCluster();
  let ph: PostHog | null = null;
  try {
    const t = c.t;
    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    const x = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, {
      body: { name: 'Signup button', feature_flag_key: 'signup-button', start_date: new Date(Date.now() - 60_000).toISOString() },
    });
    assert.equal(x.status, 201, x.text);
    await waitFor('the node serves the flag', async () => (await flags(node.http.url, t.projectKey, 'probe')).body?.flags?.['signup-button']?.enabled === true, { timeoutMs: 30_000 });

    ph = new PostHog(t.projectKey, { host: node.http.url, flushAt: 50, flushInterval: 0, disableGeoip: true });
    const rand = prng(7);
    const sent = new Map<string, { variant: string; purchases: number }>();
    for (let i = 0; i < USERS; i++) {
      const d = `e2e-${i}`;
      const variant = await ph.getFeatureFlag('signup-button', d); // sends $feature_flag_called
      assert.ok(variant === 'control' || variant === 'test', String(variant));
      const purchases = Math.floor(rand() * (variant === 'test' ? 4 : 3));
      for (let k = 0; k < purchases; k++) ph.capture({ distinctId: d, event: 'purchase', properties: { amount: 10 + k } });
      sent.set(d, { variant, purchases });
    }
    await ph.flush();

    const metric = { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase' } };
    const expected = new Map<string, { n: number; sum: number; sum_squares: number }>();
    for (const { variant, purchases } of sent.values()) {
      const a = expected.get(variant) ?? { n: 0, sum: 0, sum_squares: 0 };
      a.n++; a.sum += purchases; a.sum_squares += purchases * purchases;
      expected.set(variant, a);
    }
    const totalPurchases = [...sent.values()].reduce((s, u) => s + u.purchases, 0);
    await waitFor('every exposure and purchase ingested', async () => {
      const [row] = await t.db.sql<{ exposures: number; purchases: number }[]>`SELECT
        count(*) FILTER (WHERE event = '$feature_flag_called')::int AS exposures, count(*) FILTER (WHERE event = 'purchase')::int AS purchases
        FROM events WHERE project_id = ${t.projectId} AND distinct_id LIKE 'e2e-%'`;
      return row!.exposures >= USERS && row!.purchases === totalPurchases;
    }, { timeoutMs: 60_000, intervalMs: 200 });

    const r = await t.request('POST', `/api/projects/${t.projectId}/query/`, { body: { query: { kind: 'ExperimentQuery', experiment_id: x.body.id, metric } } });
    assert.equal(r.status, 200, r.text);
    const arms = [r.body.baseline, ...r.body.variant_results];
    assert.deepEqual(arms.map((a: { key: string }) => a.key), ['control', 'test']);
    for (const arm of arms) {
      const e = expected.get(arm.key)!;
      assert.deepEqual([arm.number_of_samples, arm.sum, arm.sum_squares], [e.n, e.sum, e.sum_squares], arm.key);
    }
    const predicted = analyze({ method: 'bayesian', config: { baseline_key: 'control' },
      variants: ['control', 'test'].map((key) => ({ key, ...expected.get(key)! })) }).variant_results as { chance_to_win: number; credible_interval: number[] }[];
    assert.ok(Math.abs(r.body.variant_results[0].chance_to_win - predicted[0]!.chance_to_win) < 1e-12);
    assert.deepEqual(r.body.variant_results[0].credible_interval, predicted[0]!.credible_interval);
  } finally {
    await ph?.shutdown().catch(() => {});
    await c.close();
  }
});
