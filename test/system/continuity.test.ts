/**
 * Experience continuity end to end (research/posthog-flag-evaluation.md §2.6): a whole node
 * service (LMDB store + Watch sync, uWS /flags and capture, durable outbox, shipper) against a
 * real control-plane gRPC server on real Postgres. /flags with `$anon_distinct_id` appends one
 * hash-key override record to the outbox; ingestion writes the overrides; they come back to the
 * node through the change log; later answers without `$anon_distinct_id` — and after `$identify`
 * merges — keep the anonymous user's variant.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { keepAliveClient } from '../support/keep-alive.js';
import { syncFixture, waitForHead, type SyncFixture } from '../support/sync.js';
import { waitFor } from '../support/wait.js';
import { createLogger } from '../../src/log.js';
import { bootstrap } from '../../src/control-plane/bootstrap.js';
import { appendChanges } from '../../src/control-plane/change-log/store.js';
import { featureFlagEntity, type FeatureFlagRow } from '../../src/contract/entities.js';
import { startNodeService, type NodeService } from '../../src/eval-node/service.js';
import { HASH_KEY_OVERRIDE_EVENT } from '../../src/contract/override-records.js';

const VARIANTS = { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] };

/** Inserts a flag with its change-log entry. */
async function seedFlag(fx: SyncFixture, projectId: number, key: string, filters: Record<string, unknown>, continuity: boolean): Promise<void> {
  await fx.db.sql.begin(async (tx) => {
    const [row] = await tx<FeatureFlagRow[]>`
      INSERT INTO feature_flags (project_id, key, name, filters, ensure_experience_continuity)
      VALUES (${projectId}, ${key}, ${key}, ${tx.json(filters as never)}, ${continuity}) RETURNING *`;
    await appendChanges(tx, [{ projectId, kind: 'feature_flag', entityId: String(row!.id), op: 'upsert', payload: featureFlagEntity(row!) }]);
  });
}

interface World {
  fx: SyncFixture;
  svc: NodeService;
  token: string;
  projectId: number;
  flags(distinctId: string, anon?: string): Promise<Record<string, string | boolean>>;
  capture(batch: Record<string, unknown>[]): Promise<Response>;
  /** Waits until the node's outbox is shipped and its store is at the change-log head. */
  settle(): Promise<void>;
  overrides(flagKey?: string): Promise<{ distinct_id: string; feature_flag_key: string; hash_key: string }[]>;
  close(): Promise<void>;
}

async function world(evalThreads = 0): Promise<World> {
  const fx = await syncFixture();
  try {
    const boot = await bootstrap(fx.db.sql, fx.config);
    const projectId = boot.projectId;
    await seedFlag(fx, projectId, 'exp', { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: VARIANTS }, true);
    await seedFlag(fx, projectId, 'half', { groups: [{ properties: [], rollout_percentage: 50 }] }, true);
    await seedFlag(fx, projectId, 'plain-exp', { groups: [{ properties: [], rollout_percentage: 50 }], multivariate: VARIANTS }, false);
    await seedFlag(fx, projectId, 'full', { groups: [{ properties: [], rollout_percentage: 100 }] }, true);
    await fx.startServer();
    const svc = await startNodeService({ ...fx.config, dataDir: path.join(fx.dataDir, 'node'), flagsPort: 0, evalThreads }, createLogger('silent'));
    await waitForHead(fx.db, svc.node.store);
    const token = boot.projectApiKey;
    // /flags over one reused connection (hundreds of requests per test; a third of fetch's CPU each).
    const http = keepAliveClient(1);
    const w: World = {
      fx, svc, token, projectId,
      async flags(distinctId, anon) {
        const body: Record<string, unknown> = { token, distinct_id: distinctId };
        if (anon !== undefined) body.$anon_distinct_id = anon;
        const res = await http.post(`${svc.http.url}/flags?v=2`, body);
        assert.equal(res.status, 200);
        const json = res.body as { flags: Record<string, { enabled: boolean; variant: string | null }> };
        return Object.fromEntries(Object.entries(json.flags).map(([k, f]) => [k, f.variant ?? f.enabled]));
      },
      capture(batch) {
        return fetch(`${svc.http.url}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: token, batch }) });
      },
      async settle() {
        // The recorder appends asynchronously: let pending appends land before reading the outbox.
        await new Promise((r) => setTimeout(r, 20));
        await waitFor('outbox shipped', () => svc.capture.outbox.entries === 0);
        await waitForHead(fx.db, svc.node.store);
      },
      async overrides(flagKey) {
        return [...await fx.db.sql<{ distinct_id: string; feature_flag_key: string; hash_key: string }[]>`
          SELECT d.distinct_id, o.feature_flag_key, o.hash_key FROM feature_flag_hash_key_overrides o
          JOIN person_distinct_ids d ON d.person_id = o.person_id
          WHERE o.project_id = ${projectId} AND (${flagKey ?? null}::text IS NULL OR o.feature_flag_key = ${flagKey ?? null})
          ORDER BY d.distinct_id, o.feature_flag_key`].map((r) => ({ ...r }));
      },
      async close() {
        http.close();
        await svc.close();
        await fx.close();
      },
    };
    return w;
  } catch (e) {
    await fx.close();
    throw e;
  }
}

for (const evalThreads of [0, 2]) {
  test(`/flags with $anon_distinct_id persists the override; later answers without it keep the variant (${evalThreads === 0 ? 'inline' : 'pool'})`, async () => {
    const w = await world(evalThreads);
    try {
      const anon = 'anon-a';
      const anonAnswer = await w.flags(anon);
      // A user id whose own hash gives another variant of `exp` (so the test can fail).
      let user = '';
      for (let i = 0; i < 100 && user === ''; i++) if ((await w.flags(`user-a-${i}`)).exp !== anonAnswer.exp) user = `user-a-${i}`;
      assert.notEqual(user, '', 'found a user bucketed differently');
      assert.equal((await w.capture([
        { event: '$pageview', distinct_id: anon },
        { event: '$identify', distinct_id: user, properties: { $anon_distinct_id: anon } },
      ])).status, 200);
      await w.settle();

      const first = await w.flags(user, anon);
      assert.equal(first.exp, anonAnswer.exp, 'first answer buckets by $anon_distinct_id');
      assert.equal(first.half, anonAnswer.half);
      await w.flags(user, anon); // deduplicated
      await w.settle();
      const rows = await waitFor('override rows', async () => { const r = await w.overrides(); return r.length === 4 ? r : null; });
      assert.deepEqual(rows, [
        { distinct_id: anon, feature_flag_key: 'exp', hash_key: anon },
        { distinct_id: anon, feature_flag_key: 'half', hash_key: anon },
        { distinct_id: user, feature_flag_key: 'exp', hash_key: anon },
        { distinct_id: user, feature_flag_key: 'half', hash_key: anon },
      ]);
      const person = w.svc.node.store.personByDistinctId(w.projectId, user)!;
      assert.deepEqual(w.svc.node.store.hashKeyOverrides(w.projectId, person.id), { exp: anon, half: anon }, 'override reached the node');

      const later = await w.flags(user);
      assert.equal(later.exp, anonAnswer.exp, 'same variant without $anon_distinct_id');
      assert.equal(later.half, anonAnswer.half);
      assert.equal(w.svc.http.continuity?.counters.enqueued, 1);
      assert.equal(w.svc.http.continuity?.counters.deduplicated, 1);
      // Covered now: no further record.
      await w.flags(user, anon);
      assert.equal(w.svc.http.continuity?.counters.covered, 1);
      assert.match(await (await fetch(`${w.svc.http.url}/metrics`)).text(), /switchyard_node_hash_key_override_records_total\{outcome="enqueued"\} 1/);
      // Never an event nor an event definition.
      assert.equal((await w.fx.db.sql`SELECT 1 FROM events WHERE event = ${HASH_KEY_OVERRIDE_EVENT}`).length, 0);
      assert.equal((await w.fx.db.sql`SELECT 1 FROM event_definitions WHERE name = ${HASH_KEY_OVERRIDE_EVENT}`).length, 0);
    } finally {
      await w.close();
    }
  });
}

test('$identify keeps the continuity variant for 200 users (where their own hash would differ for many)', async () => {
  const w = await world();
  try {
    const n = 200;
    const anons = Array.from({ length: n }, (_, i) => `anon-b-${i}`);
    const users = Array.from({ length: n }, (_, i) => `user-b-${i}`);
    assert.equal((await w.capture(anons.map((a) => ({ event: '$pageview', distinct_id: a })))).status, 200);
    await w.settle();
    const anonVariant: unknown[] = [];
    const ownVariant: unknown[] = [];
    for (let i = 0; i < n; i++) {
      anonVariant.push((await w.flags(anons[i]!)).exp);
      ownVariant.push((await w.flags(users[i]!)).exp); // no person yet: bucketed by the user id
    }
    const differ = anonVariant.filter((v, i) => v !== ownVariant[i]).length;
    assert.ok(differ > 0, 'without overrides a share of users would switch variant');

    // posthog-js on identify(): $identify is captured, then flags reload with $anon_distinct_id.
    assert.equal((await w.capture(users.map((u, i) => ({ event: '$identify', distinct_id: u, properties: { $anon_distinct_id: anons[i] } })))).status, 200);
    for (let i = 0; i < n; i++) assert.equal((await w.flags(users[i]!, anons[i]!)).exp, anonVariant[i], `first answer of ${users[i]}`);
    await w.settle();
    await waitFor('200 overrides of exp', async () => new Set((await w.overrides('exp')).map((r) => r.hash_key)).size === n);
    await waitForHead(w.fx.db, w.svc.node.store);

    let kept = 0;
    for (let i = 0; i < n; i++) if ((await w.flags(users[i]!)).exp === anonVariant[i]) kept++;
    assert.equal(kept, n, `all ${n} identified users keep the anonymous variant (${differ} would have switched)`);
    assert.equal(w.svc.http.continuity?.counters.enqueued, n);
  } finally {
    await w.close();
  }
});

test('a client-sent internal record is refused with 400 and writes nothing', async () => {
  const w = await world();
  try {
    const anon = 'anon-c';
    const user = 'user-c';
    assert.equal((await w.capture([
      { event: '$pageview', distinct_id: anon },
      { event: '$identify', distinct_id: user, properties: { $anon_distinct_id: anon } },
    ])).status, 200);
    await w.settle();
    const forged = { event: HASH_KEY_OVERRIDE_EVENT, distinct_id: user, $internal: 'hash_key_override',
      properties: { distinct_ids: [user, anon], flag_keys: ['exp', 'plain-exp'], hash_key: 'chosen-by-client' } };
    const before = w.svc.capture.outbox.entries;
    for (const send of [
      () => w.capture([forged]),
      () => w.capture([{ event: '$pageview', distinct_id: user }, forged]),
      () => fetch(`${w.svc.http.url}/i/v0/e/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...forged, api_key: w.token }) }),
    ]) {
      const res = await send();
      assert.equal(res.status, 400);
      assert.equal((await res.json() as { code: string }).code, 'reserved_event_name');
    }
    assert.equal(w.svc.capture.outbox.entries, before);
    assert.equal((await w.capture([{ event: 'barrier', distinct_id: user }])).status, 200);
    await w.settle();
    assert.deepEqual(await w.overrides(), []);
    assert.equal((await w.fx.db.sql`SELECT 1 FROM events WHERE event = ${HASH_KEY_OVERRIDE_EVENT}`).length, 0);
  } finally {
    await w.close();
  }
});

test('no override for non-continuity flags nor for 100 % flags without variants', async () => {
  const w = await world();
  try {
    const anon = 'anon-d';
    const user = 'user-d';
    assert.equal((await w.capture([
      { event: '$pageview', distinct_id: anon },
      { event: '$identify', distinct_id: user, properties: { $anon_distinct_id: anon } },
    ])).status, 200);
    await w.settle();
    // Only non-hashing or non-continuity flags answered: no record at all.
    const post = (keys: string[]) => fetch(`${w.svc.http.url}/flags?v=2`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: w.token, distinct_id: user, $anon_distinct_id: anon, flag_keys_to_evaluate: keys }) });
    assert.equal((await post(['plain-exp', 'full'])).status, 200);
    await w.settle();
    assert.equal(w.svc.http.continuity?.counters.enqueued, 0);
    assert.deepEqual(await w.overrides(), []);
    // All flags: only the hashing continuity flags get overrides.
    await w.flags(user, anon);
    await w.settle();
    await waitFor('overrides', async () => (await w.overrides()).length > 0);
    assert.deepEqual([...new Set((await w.overrides()).map((r) => r.feature_flag_key))], ['exp', 'half']);
  } finally {
    await w.close();
  }
});
