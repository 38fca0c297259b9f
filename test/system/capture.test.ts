/**
 * Issue "capture", as a system: posthog-node, unchanged, pointed at a whole node service
 * (uWebSockets.js capture → durable LMDB outbox → gRPC Ingest → Postgres), read back through
 * Postgres, the management API and every node's /flags.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PostHog } from 'posthog-node';
import { waitFor } from '../support/wait.js';
import { waitForHead } from '../support/sync.js';
import { createFlag, flags, startCluster, waitForEventsOnce, waitReady, type SystemCluster } from './support.js';

async function waitForFlag(c: SystemCluster, url: string, key: string): Promise<void> {
  await waitReady(url);
  await waitFor(`${url} serving ${key}`, async () => {
    const r = await flags(url, c.t.projectKey, 'probe').catch(() => null);
    return r?.status === 200 && r.body.flags?.[key] !== undefined;
  }, { timeoutMs: 30_000, intervalMs: 25 });
}

function client(c: SystemCluster, host: string): PostHog {
  return new PostHog(c.t.projectKey, { host, flushAt: 1, flushInterval: 0, disableGeoip: true, fetchRetryCount: 0 });
}

test('posthog-node capture through a node: events, event definitions and last_called_at', async () => {
  const c = await startCluster();
  let ph: PostHog | null = null;
  try {
    const node = await c.startNode(c.tempDir());
    const flag = await createFlag(c, { key: 'sys-called', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
    await waitForFlag(c, node.http.url, 'sys-called');
    const before = await c.t.request('GET', `/api/projects/${c.t.projectId}/feature_flags/${flag.id}/`);
    assert.equal(before.body.last_called_at, null);

    ph = client(c, node.http.url);
    const uuids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const uuid = randomUUID();
      uuids.push(uuid);
      ph.capture({ distinctId: `user-${i}`, event: i % 2 ? 'sys_signed_up' : 'sys_page_loaded', properties: { n: i }, uuid });
    }
    // posthog-node's own $feature_flag_called from a remote /flags evaluation …
    assert.equal(await ph.getFeatureFlag('sys-called', 'auto-caller'), true);
    // … and an explicit one.
    const explicit = randomUUID();
    uuids.push(explicit);
    ph.capture({ distinctId: 'explicit-caller', event: '$feature_flag_called', properties: { $feature_flag: 'sys-called', $feature_flag_response: true }, uuid: explicit });
    await ph.flush();
    await ph.shutdown();
    ph = null;

    await waitForEventsOnce(c.t, uuids);
    const called = await waitFor('both $feature_flag_called events', async () => {
      const rows = await c.t.db.sql<{ distinct_id: string; flag: string }[]>`
        SELECT distinct_id, properties->>'$feature_flag' AS flag FROM events
        WHERE project_id = ${c.t.projectId} AND event = '$feature_flag_called' ORDER BY distinct_id`;
      return rows.length >= 2 ? rows : null;
    }, { timeoutMs: 30_000, intervalMs: 100 });
    assert.deepEqual(called.map((r) => [r.distinct_id, r.flag]), [['auto-caller', 'sys-called'], ['explicit-caller', 'sys-called']]);
    const [{ n }] = await c.t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE project_id = ${c.t.projectId}`;
    assert.equal(n, uuids.length + 1, 'every event exactly once, nothing else');

    // D1: the event definitions list holds every captured event name.
    const defs = await c.t.request('GET', `/api/projects/${c.t.projectId}/event_definitions/?limit=100`);
    assert.equal(defs.status, 200, defs.text);
    const names = (defs.body.results as { name: string }[]).map((d) => d.name);
    for (const name of ['sys_signed_up', 'sys_page_loaded', '$feature_flag_called']) assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
    const search = await c.t.request('GET', `/api/projects/${c.t.projectId}/event_definitions/?search=sys_signed`);
    assert.deepEqual((search.body.results as { name: string }[]).map((d) => d.name), ['sys_signed_up']);

    // F3: the flag's last_called_at is set.
    const after = await c.t.request('GET', `/api/projects/${c.t.projectId}/feature_flags/${flag.id}/`);
    assert.equal(after.status, 200, after.text);
    assert.equal(typeof after.body.last_called_at, 'string');
    assert.ok(Number.isFinite(Date.parse(after.body.last_called_at)), after.body.last_called_at);
  } finally {
    await ph?.shutdown().catch(() => {});
    await c.close();
  }
});

test('$set through capture on one node is matched by /flags without person_properties on every node', async () => {
  const c = await startCluster();
  let ph: PostHog | null = null;
  try {
    const a = await c.startNode(c.tempDir());
    const b = await c.startNode(c.tempDir());
    await createFlag(c, { key: 'sys-pro', filters: { groups: [{ properties: [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }], rollout_percentage: 100 }] } });
    for (const n of [a, b]) await waitForFlag(c, n.http.url, 'sys-pro');
    for (const n of [a, b]) {
      for (const id of ['captured-pro', 'identified-pro', 'captured-free']) {
        const r = await flags(n.http.url, c.t.projectKey, id);
        assert.equal(r.body.flags['sys-pro'].enabled, false, `${id} before any $set`);
      }
    }
    ph = client(c, a.http.url);
    ph.capture({ distinctId: 'captured-pro', event: 'sys_upgraded', properties: { $set: { plan: 'pro' } } });
    ph.identify({ distinctId: 'identified-pro', properties: { plan: 'pro' } });
    ph.capture({ distinctId: 'captured-free', event: 'sys_seen', properties: { $set: { plan: 'free' } } });
    await ph.flush();
    await ph.shutdown();
    ph = null;
    for (const n of [a, b]) {
      for (const id of ['captured-pro', 'identified-pro']) {
        await waitFor(`${id} matching sys-pro on ${n.http.url}`, async () => {
          const r = await flags(n.http.url, c.t.projectKey, id);
          assert.equal(r.status, 200, r.text);
          return r.body.flags['sys-pro'].enabled === true;
        }, { timeoutMs: 30_000, intervalMs: 25 });
      }
    }
    // captured-free's person is in Postgres and every node has applied the head revision, yet it does not match.
    await waitFor('captured-free person', async () => (await c.t.db.sql`
      SELECT 1 FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
      WHERE d.distinct_id = 'captured-free' AND p.properties->>'plan' = 'free'`).length === 1);
    for (const n of [a, b]) await waitForHead(c.t.db, n.node.store);
    for (const n of [a, b]) {
      const r = await flags(n.http.url, c.t.projectKey, 'captured-free');
      assert.equal(r.body.flags['sys-pro'].enabled, false);
      // Request properties still override stored ones.
      const o = await flags(n.http.url, c.t.projectKey, 'captured-pro', { person_properties: { plan: 'enterprise' } });
      assert.equal(o.body.flags['sys-pro'].enabled, false);
    }
  } finally {
    await ph?.shutdown().catch(() => {});
    await c.close();
  }
});

test('$identify on one node merges an anonymous person captured on another; both nodes match the merged properties', async () => {
  const c = await startCluster();
  let pa: PostHog | null = null;
  let pb: PostHog | null = null;
  try {
    const a = await c.startNode(c.tempDir());
    const b = await c.startNode(c.tempDir());
    await createFlag(c, { key: 'sys-merged', filters: { groups: [{ properties: [
      { key: 'plan', type: 'person', operator: 'exact', value: ['pro'] },
      { key: 'email', type: 'person', operator: 'icontains', value: '@example.com' },
    ], rollout_percentage: 100 }] } });
    for (const n of [a, b]) await waitForFlag(c, n.http.url, 'sys-merged');
    pa = client(c, a.http.url);
    pa.capture({ distinctId: 'anon-77', event: 'sys_pageview', properties: { $set: { plan: 'pro' } } });
    await pa.flush();
    await waitFor('anonymous person in Postgres', async () => (await c.t.db.sql`SELECT 1 FROM person_distinct_ids WHERE distinct_id = 'anon-77'`).length === 1);
    pb = client(c, b.http.url);
    pb.identify({ distinctId: 'user-77', properties: { $anon_distinct_id: 'anon-77', $set: { email: 'u77@example.com' } } });
    await pb.flush();
    for (const n of [a, b]) {
      for (const id of ['user-77', 'anon-77']) {
        await waitFor(`${id} matching sys-merged on ${n.http.url}`, async () => {
          const r = await flags(n.http.url, c.t.projectKey, id);
          assert.equal(r.status, 200, r.text);
          return r.body.flags['sys-merged'].enabled === true;
        }, { timeoutMs: 30_000, intervalMs: 25 });
      }
    }
    const persons = await c.t.db.sql<{ person_id: number }[]>`SELECT DISTINCT person_id FROM person_distinct_ids WHERE distinct_id IN ('anon-77', 'user-77')`;
    assert.equal(persons.length, 1, 'one person for both ids');
  } finally {
    await pa?.shutdown().catch(() => {});
    await pb?.shutdown().catch(() => {});
    await c.close();
  }
});

test('$groupidentify through capture: a group flag matches stored group properties on every node', async () => {
  const c = await startCluster();
  let ph: PostHog | null = null;
  try {
    const a = await c.startNode(c.tempDir());
    const b = await c.startNode(c.tempDir());
    for (const n of [a, b]) await waitReady(n.http.url);
    ph = client(c, a.http.url);
    ph.groupIdentify({ groupType: 'organization', groupKey: 'acme', properties: { size: 50, tier: 'gold' } });
    ph.groupIdentify({ groupType: 'organization', groupKey: 'tiny', properties: { size: 2, tier: 'gold' } });
    await ph.flush();
    await waitFor('group type mapping', async () => (await c.t.db.sql`SELECT 1 FROM group_type_mappings WHERE project_id = ${c.t.projectId} AND group_type = 'organization'`).length === 1);
    await createFlag(c, { key: 'sys-big-org', filters: { aggregation_group_type_index: 0, groups: [{ properties: [
      { key: 'size', type: 'group', group_type_index: 0, operator: 'gt', value: '10' },
      { key: 'tier', type: 'group', group_type_index: 0, operator: 'exact', value: ['gold'] },
    ], rollout_percentage: 100 }] } });
    for (const n of [a, b]) {
      await waitForFlag(c, n.http.url, 'sys-big-org');
      await waitFor(`acme matching on ${n.http.url}`, async () => {
        const r = await flags(n.http.url, c.t.projectKey, 'someone', { groups: { organization: 'acme' } });
        return r.status === 200 && r.body.flags['sys-big-org'].enabled === true;
      }, { timeoutMs: 30_000, intervalMs: 25 });
      const tiny = await flags(n.http.url, c.t.projectKey, 'someone', { groups: { organization: 'tiny' } });
      assert.equal(tiny.body.flags['sys-big-org'].enabled, false);
      const none = await flags(n.http.url, c.t.projectKey, 'someone');
      assert.equal(none.body.flags['sys-big-org'].enabled, false);
      const overridden = await flags(n.http.url, c.t.projectKey, 'someone', { groups: { organization: 'tiny' }, group_properties: { organization: { size: 99 } } });
      assert.equal(overridden.body.flags['sys-big-org'].enabled, true, 'request group properties override stored ones');
    }
  } finally {
    await ph?.shutdown().catch(() => {});
    await c.close();
  }
});
