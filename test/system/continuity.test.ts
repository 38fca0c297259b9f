/**
 * Experience continuity end to end (research/posthog-flag-evaluation.md §2.6): a whole node
 * service (LMDB store + Watch sync, uWS /flags and capture, durable outbox, shipper) against a
 * real control-plane gRPC server on real Postgres. /flags with `$anon_distinct_id` appends one
 * hash-key override record to the outbox; ingestion writes the overrides; they come back to the
 * node through the change log; later answers without `$anon_distinct_id` — and after `$identify`
 * merges — keep the anonymous user's variant.
 *
 * One database, gRPC server and inline node serve the file: each case uses distinct ids of its
 * own and compares the node's counters before and after; the pool case starts a node of its own.
 */
import { after, before, test } from 'node:test';
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
import type { ContinuityCounters } from '../../src/eval-node/http/continuity.js';

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

/** The file's control plane side: one database and gRPC server (each case uses its own distinct ids). */
let fx: SyncFixture;
let token: string;
let projectId: number;
/** The inline node the cases share (started by the first case that asks for it). */
let inline: World | null = null;

before(async () => {
  fx = await syncFixture();
  const boot = await bootstrap(fx.db.sql, fx.config);
  projectId = boot.projectId;
  token = boot.projectApiKey;
  await seedFlag(fx, projectId, 'exp', { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: VARIANTS }, true);
  await seedFlag(fx, projectId, 'half', { groups: [{ properties: [], rollout_percentage: 50 }] }, true);
  await seedFlag(fx, projectId, 'plain-exp', { groups: [{ properties: [], rollout_percentage: 50 }], multivariate: VARIANTS }, false);
  await seedFlag(fx, projectId, 'full', { groups: [{ properties: [], rollout_percentage: 100 }] }, true);
  await fx.startServer();
});

after(async () => {
  await inline?.close();
  await fx?.close();
});

/** A node of the file's control plane and what the cases ask of it. */
interface World {
  svc: NodeService;
  flags(distinctId: string, anon?: string): Promise<Record<string, string | boolean>>;
  capture(batch: Record<string, unknown>[]): Promise<Response>;
  /** Captures `anon`'s pageview and its `$identify` as `user` (accepted), then {@link settle}s. */
  identify(anon: string, user: string): Promise<void>;
  /** Waits until the node's outbox is shipped and its store is at the change-log head. */
  settle(): Promise<void>;
  /** The stored overrides of the distinct ids starting with `prefix` (of `flagKey` when given). */
  overrides(prefix: string, flagKey?: string): Promise<{ distinct_id: string; feature_flag_key: string; hash_key: string }[]>;
  /** The node's continuity counters now (a copy: cases compare before and after, the node is shared). */
  counters(): ContinuityCounters;
  close(): Promise<void>;
}

/** The shared inline node, or (evalThreads > 0) a node of its own that the case closes. */
async function world(evalThreads = 0): Promise<World> {
  if (evalThreads === 0 && inline) return inline;
  const svc = await startNodeService({ ...fx.config, dataDir: path.join(fx.dataDir, `node-${evalThreads}`), flagsPort: 0, evalThreads }, createLogger('silent'));
  try {
    await waitForHead(fx.db, svc.node.store);
  } catch (e) {
    await svc.close();
    throw e;
  }
  // /flags over one reused connection (hundreds of requests per test; a third of fetch's CPU each).
  const http = keepAliveClient(1);
  const w: World = {
    svc,
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
    async identify(anon, user) {
      const res = await w.capture([
        { event: '$pageview', distinct_id: anon },
        { event: '$identify', distinct_id: user, properties: { $anon_distinct_id: anon } },
      ]);
      assert.equal(res.status, 200);
      await w.settle();
    },
    async settle() {
      // The recorder appends asynchronously: let pending appends land before reading the outbox.
      await new Promise((r) => setTimeout(r, 20));
      await waitFor('outbox shipped', () => svc.capture.outbox.entries === 0);
      await waitForHead(fx.db, svc.node.store);
    },
    async overrides(prefix, flagKey) {
      return [...await fx.db.sql<{ distinct_id: string; feature_flag_key: string; hash_key: string }[]>`
        SELECT d.distinct_id, o.feature_flag_key, o.hash_key FROM feature_flag_hash_key_overrides o
        JOIN person_distinct_ids d ON d.person_id = o.person_id
        WHERE o.project_id = ${projectId} AND d.distinct_id LIKE ${`${prefix}%`}
          AND (${flagKey ?? null}::text IS NULL OR o.feature_flag_key = ${flagKey ?? null})
        ORDER BY d.distinct_id, o.feature_flag_key`].map((r) => ({ ...r }));
    },
    counters: () => ({ ...svc.http.continuity!.counters }),
    async close() {
      http.close();
      await svc.close();
    },
  };
  if (evalThreads === 0) inline = w;
  return w;
}

/** The node's `switchyard_node_hash_key_override_records_total{outcome=…}` metric. */
async function recordsMetric(w: World, outcome: string): Promise<number> {
  const text = await (await fetch(`${w.svc.http.url}/metrics`)).text();
  const m = new RegExp(`^switchyard_node_hash_key_override_records_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text);
  assert.ok(m, `metric for ${outcome} in ${text}`);
  return Number(m[1]);
}

for (const evalThreads of [0, 1]) {
  const mode = evalThreads === 0 ? 'inline' : 'pool';
  test(`/flags with $anon_distinct_id persists the override; later answers without it keep the variant (${mode})`, async () => {
    const w = await world(evalThreads);
    try {
      const prefix = `a-${mode}-`;
      const anon = `${prefix}anon`;
      const anonAnswer = await w.flags(anon);
      // A user id whose own hash gives another variant of `exp` (so the test can fail).
      let user = '';
      for (let i = 0; i < 100 && user === ''; i++) if ((await w.flags(`${prefix}user-${i}`)).exp !== anonAnswer.exp) user = `${prefix}user-${i}`;
      assert.notEqual(user, '', 'found a user bucketed differently');
      await w.identify(anon, user);
      const before = w.counters();
      const metricBefore = await recordsMetric(w, 'enqueued');

      const first = await w.flags(user, anon);
      assert.equal(first.exp, anonAnswer.exp, 'first answer buckets by $anon_distinct_id');
      assert.equal(first.half, anonAnswer.half);
      await w.flags(user, anon); // deduplicated
      await w.settle();
      const rows = await waitFor('override rows', async () => { const r = await w.overrides(prefix); return r.length === 4 ? r : null; });
      assert.deepEqual(rows, [
        { distinct_id: anon, feature_flag_key: 'exp', hash_key: anon },
        { distinct_id: anon, feature_flag_key: 'half', hash_key: anon },
        { distinct_id: user, feature_flag_key: 'exp', hash_key: anon },
        { distinct_id: user, feature_flag_key: 'half', hash_key: anon },
      ]);
      const person = w.svc.node.store.personByDistinctId(projectId, user)!;
      assert.deepEqual(w.svc.node.store.hashKeyOverrides(projectId, person.id), { exp: anon, half: anon }, 'override reached the node');

      const later = await w.flags(user);
      assert.equal(later.exp, anonAnswer.exp, 'same variant without $anon_distinct_id');
      assert.equal(later.half, anonAnswer.half);
      assert.equal(w.counters().enqueued - before.enqueued, 1);
      assert.equal(w.counters().deduplicated - before.deduplicated, 1);
      // Covered now: no further record.
      await w.flags(user, anon);
      assert.equal(w.counters().covered - before.covered, 1);
      assert.equal(await recordsMetric(w, 'enqueued') - metricBefore, 1, 'the enqueued metric');
      // Never an event nor an event definition.
      assert.equal((await fx.db.sql`SELECT 1 FROM events WHERE event = ${HASH_KEY_OVERRIDE_EVENT}`).length, 0);
      assert.equal((await fx.db.sql`SELECT 1 FROM event_definitions WHERE name = ${HASH_KEY_OVERRIDE_EVENT}`).length, 0);
    } finally {
      if (w !== inline) await w.close();
    }
  });
}

test('$identify keeps the continuity variant for 100 users (where their own hash would differ for many)', async () => {
  const w = await world();
  const n = 100;
  const anons = Array.from({ length: n }, (_, i) => `b-anon-${i}`);
  const users = Array.from({ length: n }, (_, i) => `b-user-${i}`);
  assert.equal((await w.capture(anons.map((a) => ({ event: '$pageview', distinct_id: a })))).status, 200);
  await w.settle();
  const before = w.counters();
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
  await waitFor(`${n} overrides of exp`, async () => new Set((await w.overrides('b-', 'exp')).map((r) => r.hash_key)).size === n);
  await waitForHead(fx.db, w.svc.node.store);

  let kept = 0;
  for (let i = 0; i < n; i++) if ((await w.flags(users[i]!)).exp === anonVariant[i]) kept++;
  assert.equal(kept, n, `all ${n} identified users keep the anonymous variant (${differ} would have switched)`);
  assert.equal(w.counters().enqueued - before.enqueued, n);
});

test('a client-sent internal record is refused with 400 and writes nothing', async () => {
  const w = await world();
  const anon = 'c-anon';
  const user = 'c-user';
  await w.identify(anon, user);
  const forged = { event: HASH_KEY_OVERRIDE_EVENT, distinct_id: user, $internal: 'hash_key_override',
    properties: { distinct_ids: [user, anon], flag_keys: ['exp', 'plain-exp'], hash_key: 'chosen-by-client' } };
  const before = w.svc.capture.outbox.entries;
  for (const send of [
    () => w.capture([forged]),
    () => w.capture([{ event: '$pageview', distinct_id: user }, forged]),
    () => fetch(`${w.svc.http.url}/i/v0/e/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...forged, api_key: token }) }),
  ]) {
    const res = await send();
    assert.equal(res.status, 400);
    assert.equal((await res.json() as { code: string }).code, 'reserved_event_name');
  }
  assert.equal(w.svc.capture.outbox.entries, before);
  assert.equal((await w.capture([{ event: 'barrier', distinct_id: user }])).status, 200);
  await w.settle();
  assert.deepEqual(await w.overrides('c-'), []);
  assert.equal((await fx.db.sql`SELECT 1 FROM events WHERE event = ${HASH_KEY_OVERRIDE_EVENT}`).length, 0);
});

test('no override for non-continuity flags nor for 100 % flags without variants', async () => {
  const w = await world();
  const anon = 'd-anon';
  const user = 'd-user';
  await w.identify(anon, user);
  const before = w.counters();
  // Only non-hashing or non-continuity flags answered: no record at all.
  const post = (keys: string[]) => fetch(`${w.svc.http.url}/flags?v=2`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token, distinct_id: user, $anon_distinct_id: anon, flag_keys_to_evaluate: keys }) });
  assert.equal((await post(['plain-exp', 'full'])).status, 200);
  await w.settle();
  assert.equal(w.counters().enqueued - before.enqueued, 0);
  assert.deepEqual(await w.overrides('d-'), []);
  // All flags: only the hashing continuity flags get overrides.
  await w.flags(user, anon);
  await w.settle();
  await waitFor('overrides', async () => (await w.overrides('d-')).length > 0);
  assert.deepEqual([...new Set((await w.overrides('d-')).map((r) => r.feature_flag_key))], ['exp', 'half']);
});
