/**
 * Experience continuity across a cluster, from the outside: a flag with
 * `ensure_experience_continuity` created through the management API; an anonymous user served
 * by node A; the user identifies (posthog-node `identify` with `$anon_distinct_id`, and the
 * `/flags` call with `$anon_distinct_id` posthog-js makes when identifying, in either order);
 * afterwards the identified user keeps the anonymous variant on EVERY node, without
 * `$anon_distinct_id`, while a flag without continuity follows the identified id.
 * One control plane and two nodes serve the file.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { PostHog } from 'posthog-node';
import { waitFor } from '../support/wait.js';
import { waitForHead } from '../support/sync.js';
import { flags, post, startCluster, waitReady, type SystemCluster } from './support.js';

const VARIANTS = { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] };

/** One control plane and two nodes serve the file; the cases use flags and distinct ids of their own. */
let c: SystemCluster;
let a: Awaited<ReturnType<SystemCluster['startNode']>>;
let b: typeof a;

before(async () => {
  c = await startCluster();
  a = await c.startNode(c.tempDir());
  b = await c.startNode(c.tempDir());
});

after(async () => {
  await c?.close();
});

test('$identify merging an anonymous id keeps a continuity flag\'s variant for the identified user on every node', async () => {
  let ph: PostHog | null = null;
  try {
    const create = async (key: string, continuity: boolean) => {
      const r = await c.t.request('POST', `/api/projects/${c.t.projectId}/feature_flags/`, {
        body: { key, ensure_experience_continuity: continuity, filters: { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: VARIANTS } },
      });
      assert.equal(r.status, 201, r.text);
      assert.equal(r.body.ensure_experience_continuity, continuity);
    };
    await create('sys-continuity', true);
    await create('sys-plain', false);
    for (const n of [a, b]) {
      await waitReady(n.http.url);
      await waitFor('flags on the node', async () => {
        const r = await flags(n.http.url, c.t.projectKey, 'probe');
        return r.status === 200 && r.body.flags['sys-continuity'] !== undefined && r.body.flags['sys-plain'] !== undefined;
      });
    }
    const variant = async (url: string, id: string, key: string, anon?: string) => {
      const r = await flags(url, c.t.projectKey, id, anon === undefined ? {} : { $anon_distinct_id: anon });
      assert.equal(r.status, 200, r.text);
      return r.body.flags[key].variant as string;
    };
    // Pairs whose own hashes give different variants, so keeping the anonymous one means something.
    const pairs: { anon: string; user: string; anonVariant: string; userVariant: string }[] = [];
    for (let i = 0; pairs.length < 6 && i < 200; i++) {
      const anon = `anon-${i}`;
      const user = `user-${i}`;
      const anonVariant = await variant(a.http.url, anon, 'sys-continuity');
      const userVariant = await variant(a.http.url, user, 'sys-continuity');
      if (anonVariant !== userVariant) pairs.push({ anon, user, anonVariant, userVariant });
    }
    assert.equal(pairs.length, 6);

    ph = new PostHog(c.t.projectKey, { host: a.http.url, flushAt: 1, flushInterval: 0, disableGeoip: true });
    // The anonymous users visited earlier: their persons exist.
    for (const p of pairs) ph.capture({ distinctId: p.anon, event: 'sys_anonymous_visit' });
    await ph.flush();
    await waitFor('anonymous persons', async () => (await c.t.db.sql`
      SELECT 1 FROM person_distinct_ids WHERE project_id = ${c.t.projectId} AND distinct_id IN ${c.t.db.sql(pairs.map((p) => p.anon))}`).length === pairs.length);
    for (const [i, p] of pairs.entries()) {
      if (i % 2 === 0) {
        // $identify first (ingested), then the identifying /flags call.
        ph.identify({ distinctId: p.user, properties: { $anon_distinct_id: p.anon } });
        await ph.flush();
        await waitFor(`${p.user} merged`, async () => (await c.t.db.sql`
          SELECT DISTINCT person_id FROM person_distinct_ids WHERE project_id = ${c.t.projectId} AND distinct_id IN (${p.anon}, ${p.user})`).length === 1
          && (await c.t.db.sql`SELECT 1 FROM person_distinct_ids WHERE project_id = ${c.t.projectId} AND distinct_id = ${p.user}`).length === 1);
        assert.equal(await variant(a.http.url, p.user, 'sys-continuity', p.anon), p.anonVariant, 'the identifying call answers the anonymous variant');
      } else {
        // The identifying /flags call races ahead of the $identify event.
        assert.equal(await variant(a.http.url, p.user, 'sys-continuity', p.anon), p.anonVariant, 'the identifying call answers the anonymous variant');
        ph.identify({ distinctId: p.user, properties: { $anon_distinct_id: p.anon } });
        await ph.flush();
      }
    }
    await ph.shutdown();
    ph = null;
    for (const n of [a, b]) {
      for (const p of pairs) {
        await waitFor(`${p.user} keeps ${p.anonVariant} on ${n.http.url}`, async () => (await variant(n.http.url, p.user, 'sys-continuity')) === p.anonVariant,
          { timeoutMs: 30_000, intervalMs: 50 });
        assert.equal(await variant(n.http.url, p.anon, 'sys-continuity'), p.anonVariant, 'the anonymous id too');
      }
    }
    // Settled: every node at the head, answers stable; the non-continuity flag follows each id's own hash.
    await waitFor('outbox drained', () => a.capture.outbox.entries === 0, { timeoutMs: 30_000 });
    for (const n of [a, b]) await waitForHead(c.t.db, n.node.store);
    for (const n of [a, b]) {
      for (const p of pairs) {
        assert.equal(await variant(n.http.url, p.user, 'sys-continuity'), p.anonVariant);
        assert.equal(await variant(n.http.url, p.user, 'sys-plain'), await variant(n.http.url, `${p.user}`, 'sys-plain'));
      }
    }
    const [{ n }] = await c.t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM feature_flag_hash_key_overrides WHERE project_id = ${c.t.projectId} AND feature_flag_key = 'sys-plain'`;
    assert.equal(n, 0, 'no override for a flag without continuity');
  } finally {
    await ph?.shutdown().catch(() => {});
  }
});

test('continuity holds when the whole identify flow happens while the control plane is down', async () => {
  const r = await c.t.request('POST', `/api/projects/${c.t.projectId}/feature_flags/`, {
    body: { key: 'sys-continuity-down', ensure_experience_continuity: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: VARIANTS } },
  });
  assert.equal(r.status, 201, r.text);
  for (const n of [a, b]) {
    await waitReady(n.http.url);
    await waitFor('flag on the node', async () => (await flags(n.http.url, c.t.projectKey, 'probe')).body?.flags?.['sys-continuity-down'] !== undefined);
  }
  const variant = async (url: string, id: string, anon?: string) => {
    const res = await flags(url, c.t.projectKey, id, anon === undefined ? {} : { $anon_distinct_id: anon });
    assert.equal(res.status, 200, res.text);
    return res.body.flags['sys-continuity-down'].variant as string;
  };
  const pairs: { anon: string; user: string; anonVariant: string }[] = [];
  for (let i = 0; pairs.length < 4 && i < 200; i++) {
    const [anonVariant, userVariant] = [await variant(a.http.url, `down-anon-${i}`), await variant(a.http.url, `down-user-${i}`)];
    if (anonVariant !== userVariant) pairs.push({ anon: `down-anon-${i}`, user: `down-user-${i}`, anonVariant });
  }
  assert.equal(pairs.length, 4);
  await c.stopGrpc();
  for (const p of pairs) {
    // anonymous visit, then the identifying /flags call, then $identify: all queued in the outbox
    const visit = await post(`${a.http.url}/batch/`, { api_key: c.t.projectKey, batch: [{ event: 'sys_visit', distinct_id: p.anon }] });
    assert.equal(visit.status, 200);
    assert.equal(await variant(a.http.url, p.user, p.anon), p.anonVariant);
    const ident = await post(`${a.http.url}/batch/`, { api_key: c.t.projectKey, batch: [{ event: '$identify', distinct_id: p.user, properties: { $anon_distinct_id: p.anon } }] });
    assert.equal(ident.status, 200);
  }
  await c.startGrpc();
  await waitFor('outbox drained', () => a.capture.outbox.entries === 0, { timeoutMs: 30_000 });
  for (const n of [a, b]) await waitForHead(c.t.db, n.node.store);
  for (const n of [a, b]) {
    for (const p of pairs) assert.equal(await variant(n.http.url, p.user), p.anonVariant, `${p.user} on ${n.http.url}`);
  }
});
