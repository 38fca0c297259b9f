/**
 * A flag created through the API
 * gets PostHog's usage dashboard; posthog-node evaluates the flag on a real node (sending
 * `$feature_flag_called`) and captures `$feature_view` events; once the node has shipped them,
 * the dashboard's insights show exactly the counts a direct computation from what the test sent
 * predicts. F8 regenerates the dashboard, F9 adds the enriched insights with PostHog's refusals,
 * a key rename follows into the generated insights, and the dashboards and insights resources
 * behave as PostHog's (soft delete, 405 on DELETE, scopes).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PostHog } from 'posthog-node';
import { waitFor } from '../support/wait.js';
import { flags, startCluster, waitReady } from './support.js';

const USERS = 60;
const DAY = 86_400_000;

type Tile = { insight: { name: string; query: any; result: any[] }; color: string | null };

test('a flag\'s usage dashboard counts the calls and users the node saw; F8, F9, rename and the dashboards API', async () => {
  const c = await startCluster();
  let ph: PostHog | null = null;
  try {
    const t = c.t;
    const api = (method: string, path: string, body?: unknown, key?: string) => t.request(method, `/api/projects/${t.projectId}${path}`, { body, key });
    const created = await api('POST', '/feature_flags/', {
      key: 'usage-flag', filters: { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: { variants: [{ key: 'a', rollout_percentage: 50 }, { key: 'b', rollout_percentage: 50 }] } },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(typeof created.body.usage_dashboard, 'number');
    const quiet = await api('POST', '/feature_flags/', { key: 'no-dashboard', _should_create_usage_dashboard: false });
    assert.equal(quiet.body.usage_dashboard, null);

    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    await waitFor('the node serves the flag', async () => typeof (await flags(node.http.url, t.projectKey, 'probe')).body?.flags?.['usage-flag']?.variant === 'string', { timeoutMs: 30_000 });
    ph = new PostHog(t.projectKey, { host: node.http.url, flushAt: 50, flushInterval: 0, disableGeoip: true });
    const variants = new Map<string, string>();
    for (let i = 0; i < USERS; i++) {
      const d = `usage-${i}`;
      variants.set(d, String(await ph.getFeatureFlag('usage-flag', d))); // one $feature_flag_called each
    }
    // Calls on earlier days, and views of the feature for the enriched insights.
    const earlier = [...variants.keys()].slice(0, 20);
    for (const [k, d] of earlier.entries()) {
      ph.capture({ distinctId: d, event: '$feature_flag_called', timestamp: new Date(Date.now() - (1 + (k % 3)) * DAY), properties: { $feature_flag: 'usage-flag', $feature_flag_response: variants.get(d) } });
    }
    for (const d of earlier.slice(0, 8)) ph.capture({ distinctId: d, event: '$feature_view', properties: { feature_flag: 'usage-flag' } });
    await ph.flush();
    await waitFor('every call and view ingested', async () => {
      const [r] = await t.db.sql<{ calls: number; views: number }[]>`SELECT count(*) FILTER (WHERE event = '$feature_flag_called')::int AS calls,
        count(*) FILTER (WHERE event = '$feature_view')::int AS views FROM events WHERE project_id = ${t.projectId} AND distinct_id LIKE 'usage-%'`;
      return r!.calls >= USERS + earlier.length && r!.views === 8;
    }, { timeoutMs: 60_000, intervalMs: 200 });

    const dashboard = await api('GET', `/dashboards/${created.body.usage_dashboard}/`);
    assert.equal(dashboard.status, 200, dashboard.text);
    assert.equal(dashboard.body.name, 'Generated Dashboard: usage-flag Usage');
    assert.deepEqual(dashboard.body.filters, { date_from: '-30d' });
    const tiles = dashboard.body.tiles as Tile[];
    assert.deepEqual(tiles.map((x) => x.insight.name), ['Feature Flag Called Total Volume', 'Feature Flag calls made by unique users per variant']);
    // Expected from what was sent: calls per (variant, day), unique users per variant.
    const callsBy = new Map<string, number>();
    const today = new Date().toISOString().slice(0, 10);
    for (const [d, v] of variants) callsBy.set(`${v}|${today}`, (callsBy.get(`${v}|${today}`) ?? 0) + 1);
    for (const [k, d] of earlier.entries()) {
      const day = new Date(Date.now() - (1 + (k % 3)) * DAY).toISOString().slice(0, 10);
      const v = variants.get(d)!;
      callsBy.set(`${v}|${day}`, (callsBy.get(`${v}|${day}`) ?? 0) + 1);
    }
    const volume = tiles[0]!.insight.result as { breakdown_value: string; data: number[]; days: string[] }[];
    assert.deepEqual(volume.map((r) => r.breakdown_value).sort(), [...new Set(variants.values())].sort());
    for (const series of volume) {
      assert.equal(series.days.length, 31, '-30d by day: thirty days and today');
      for (const [k, day] of series.days.entries()) assert.equal(series.data[k], callsBy.get(`${series.breakdown_value}|${day}`) ?? 0, `${series.breakdown_value} ${day}`);
    }
    const users = tiles[1]!.insight.result as { breakdown_value: string; aggregated_value: number }[];
    for (const series of users) {
      assert.equal(series.aggregated_value, [...variants.values()].filter((v) => v === series.breakdown_value).length, series.breakdown_value);
    }
    // The same numbers through /query/ with the insight's own query.
    const direct = await api('POST', '/query/', { query: tiles[1]!.insight.query });
    assert.deepEqual(direct.body.results.map((r: { aggregated_value: number }) => r.aggregated_value), users.map((r) => r.aggregated_value));

    // F9 refusals in PostHog's order, then success once the flag has enriched analytics.
    const enrich = () => api('POST', `/feature_flags/${created.body.id}/enrich_usage_dashboard/`);
    assert.deepEqual((await enrich()).body, { success: false, error: 'No enriched analytics available for this feature flag' });
    assert.deepEqual((await api('POST', `/feature_flags/${quiet.body.id}/enrich_usage_dashboard/`)).body, { success: false, error: 'Usage dashboard not found' });
    assert.equal((await api('PATCH', `/feature_flags/${created.body.id}/`, { has_enriched_analytics: true })).status, 200);
    const ok = await enrich();
    assert.deepEqual([ok.status, ok.body], [200, { success: true }]);
    assert.deepEqual((await enrich()).body, { success: false, error: 'Usage dashboard already has enriched data' });
    const enriched = (await api('GET', `/dashboards/${created.body.usage_dashboard}/`)).body.tiles as Tile[];
    const viewed = enriched.find((x) => x.insight.name === 'Feature Viewed Total Volume')!;
    assert.deepEqual(viewed.insight.result.map((r: { count: number }) => r.count), [8, 8], 'eight views by eight users');

    // F8 makes a new dashboard (with the enriched insights, since the flag has them).
    const f8 = await api('POST', `/feature_flags/${created.body.id}/dashboard/`);
    assert.deepEqual([f8.status, f8.body], [200, { success: true }]);
    const flag = (await api('GET', `/feature_flags/${created.body.id}/`)).body;
    assert.notEqual(flag.usage_dashboard, created.body.usage_dashboard);
    assert.equal((await api('GET', `/dashboards/${flag.usage_dashboard}/`)).body.tiles.length, 4);
    assert.equal((await api('POST', '/feature_flags/999999/dashboard/')).status, 404);
    const readOnly = await t.createKey(['feature_flag:read', 'dashboard:write']);
    assert.equal((await api('POST', `/feature_flags/${created.body.id}/dashboard/`, undefined, readOnly)).status, 403, 'changing the flag needs feature_flag:write');
    assert.equal((await api('POST', `/feature_flags/${created.body.id}/enrich_usage_dashboard/`, undefined, readOnly)).status, 403);

    // A key rename follows into the generated insights.
    assert.equal((await api('PATCH', `/feature_flags/${created.body.id}/`, { key: 'usage-flag-2' })).status, 200);
    const renamed = (await api('GET', `/dashboards/${flag.usage_dashboard}/`)).body.tiles as Tile[];
    assert.equal(renamed[0]!.insight.query.source.properties.values[0].values[0].value, 'usage-flag-2');

    // The resources: list, insights on dashboards, soft delete, 405, scopes.
    const list = await api('GET', '/dashboards/');
    assert.equal(list.status, 200);
    assert.ok(list.body.results.some((d: { id: number }) => d.id === flag.usage_dashboard));
    const mine = await api('POST', '/dashboards/', { name: 'Mine', pinned: true });
    assert.equal(mine.status, 201, mine.text);
    const insight = await api('POST', '/insights/', { name: 'Views', query: tiles[0]!.insight.query, dashboards: [mine.body.id] });
    assert.equal(insight.status, 201, insight.text);
    assert.deepEqual(insight.body.dashboards, [mine.body.id]);
    assert.ok(Array.isArray(insight.body.result));
    assert.equal((await api('GET', '/dashboards/')).body.results[0].id, mine.body.id, 'pinned first');
    const bad = await api('POST', '/insights/', { name: 'x', dashboards: [999999] });
    assert.deepEqual([bad.status, bad.body.attr, bad.body.detail], [400, 'dashboards', 'Invalid pk "999999" - object does not exist.']);
    const moved = await api('PATCH', `/insights/${insight.body.id}/`, { dashboards: [flag.usage_dashboard] });
    assert.deepEqual(moved.body.dashboards, [flag.usage_dashboard]);
    assert.equal((await api('GET', `/dashboards/${mine.body.id}/`)).body.tiles.length, 0);
    assert.equal((await api('DELETE', `/dashboards/${mine.body.id}/`)).status, 405);
    assert.equal((await api('DELETE', `/insights/${insight.body.id}/`)).status, 405);
    assert.equal((await api('PATCH', `/dashboards/${mine.body.id}/`, { deleted: true })).status, 200);
    assert.equal((await api('GET', `/dashboards/${mine.body.id}/`)).status, 404);
    assert.equal((await api('PATCH', `/dashboards/${mine.body.id}/`, { deleted: false })).status, 200);
    const dashboardsOnly = await t.createKey(['dashboard:read']);
    assert.equal((await api('GET', '/dashboards/', undefined, dashboardsOnly)).status, 200);
    assert.equal((await api('POST', '/dashboards/', { name: 'no' }, dashboardsOnly)).status, 403);
    assert.equal((await api('GET', '/insights/', undefined, dashboardsOnly)).status, 403);
    const linked = await api('PATCH', `/feature_flags/${created.body.id}/`, { analytics_dashboards: [mine.body.id] });
    assert.deepEqual([linked.status, linked.body.analytics_dashboards], [200, [mine.body.id]]);
  } finally {
    await ph?.shutdown();
    await c.close();
  }
});
