/**
 * Issue "evaluation nodes", as a system: a real control plane (Postgres, management HTTP, gRPC)
 * and whole node services (LMDB, Watch, uWebSockets.js /flags), each on its own data dir.
 *
 * - a flag created and PATCHed through the management API is served by both nodes, with the
 *   PATCH response's version in metadata.version;
 * - with the control plane stopped both nodes keep answering with the last state, and a node
 *   restarted meanwhile serves from LMDB;
 * - a node whose data dir is wiped is rebuilt from a snapshot and answers the same.
 *
 * One control plane (one database) for the file; each test creates its own flags (keys prefixed
 * with the test's name) and starts its own nodes, closed after it. The tests run in the order
 * their control-plane moves need: gRPC stopped and started again (the first control plane's own
 * gRPC), then the whole control plane restarted, then the test that stops it for good.
 */
import { afterEach, after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { NodeService } from '../../src/eval-node/service.js';
import { keepAliveClient } from '../support/keep-alive.js';
import { waitFor } from '../support/wait.js';
import { flags, get, startCluster, waitReady, type SystemCluster } from './support.js';

const USERS = Array.from({ length: 40 }, (_, i) => `user-${i}`);

let c: SystemCluster;
/** The nodes the running test started (closed after it). */
const open = new Set<NodeService>();
before(async () => { c = await startCluster(); });
afterEach(async () => {
  for (const n of open) await n.close();
  open.clear();
});
after(async () => { await c?.close(); });

/** Starts a node on `dir` (a fresh directory by default), closed after the test. */
async function startNode(dir = c.tempDir()): Promise<NodeService> {
  const n = await c.startNode(dir);
  open.add(n);
  return n;
}

/** The test's three flags: `<p>-email` (email contains @example.com), `<p>-rollout` (40 %), `<p>-mv` (two variants, last). */
async function createFlags(p: string): Promise<{ emailFlag: { id: number; version: number } }> {
  const create = async (body: Record<string, unknown>) => {
    const r = await c.t.request('POST', `/api/projects/${c.t.projectId}/feature_flags/`, { body });
    assert.equal(r.status, 201, r.text);
    return r.body as { id: number; key: string; version: number };
  };
  const emailFlag = await create({ key: `${p}-email`, filters: { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }], rollout_percentage: 100 }] } });
  await create({ key: `${p}-rollout`, filters: { groups: [{ properties: [], rollout_percentage: 40 }] } });
  await create({ key: `${p}-mv`, filters: {
    groups: [{ properties: [], rollout_percentage: 100 }],
    multivariate: { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] },
    payloads: { control: '{"c":1}', test: '{"t":2}' },
  } });
  return { emailFlag };
}

/**
 * Every user's answers on `url`: `{ distinctId: { key: [enabled, variant, version] } }`. The 40
 * requests share one connection (closed at the end: the node may be stopped next), a third of
 * fetch's CPU each.
 */
async function answers(url: string): Promise<Record<string, Record<string, unknown>>> {
  const out: Record<string, Record<string, unknown>> = {};
  const http = keepAliveClient(1);
  try {
    for (const [i, id] of USERS.entries()) {
      const r = await http.post(`${url}/flags?v=2`, { api_key: c.t.projectKey, distinct_id: id, person_properties: { email: i % 2 ? `${id}@example.com` : `${id}@mail.test` } });
      assert.equal(r.status, 200, r.text);
      out[id] = Object.fromEntries(Object.entries(r.body.flags as Record<string, any>).map(([k, f]) => [k, [f.enabled, f.variant ?? null, f.metadata?.version]]));
    }
  } finally {
    http.close();
  }
  return out;
}

/** Waits until `url` serves `<p>-email` at `version` and every flag of createFlags(p). */
async function waitForVersion(url: string, p: string, version: number): Promise<void> {
  await waitFor(`${url} serving ${p}-email v${version}`, async () => {
    const r = await flags(url, c.t.projectKey, 'probe').catch(() => null);
    // <p>-mv is created last: once it is there, every flag created before it is too.
    return r?.status === 200 && r.body.flags?.[`${p}-email`]?.metadata?.version === version && r.body.flags[`${p}-mv`] !== undefined;
  }, { timeoutMs: 30_000, intervalMs: 25 });
}

/** Creates the flags of createFlags(p) and waits until each of `nodes` is ready and serves them all. */
async function createAndServe(p: string, nodes: NodeService[]): Promise<{ emailFlag: { id: number; version: number } }> {
  const created = await createFlags(p);
  for (const n of nodes) {
    await waitReady(n.http.url);
    await waitForVersion(n.http.url, p, created.emailFlag.version);
  }
  return created;
}

test('a flag created and PATCHed through the management API is served by both nodes', async () => {
  const p = 'created';
  const a = await startNode();
  const b = await startNode();
  const { emailFlag } = await createAndServe(p, [a, b]);
  for (const n of [a, b]) {
    const yes = await flags(n.http.url, c.t.projectKey, 'ada', { person_properties: { email: 'ada@example.com' } });
    assert.equal(yes.status, 200, yes.text);
    assert.equal(yes.body.flags[`${p}-email`].enabled, true);
    assert.equal(yes.body.flags[`${p}-email`].metadata.id, emailFlag.id);
    const no = await flags(n.http.url, c.t.projectKey, 'bob', { person_properties: { email: 'bob@corp.test' } });
    assert.equal(no.body.flags[`${p}-email`].enabled, false);
  }
  const patch = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/feature_flags/${emailFlag.id}/`, {
    body: { filters: { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@corp.test' }], rollout_percentage: 100 }] } },
  });
  assert.equal(patch.status, 200, patch.text);
  const version = patch.body.version as number;
  assert.ok(version > emailFlag.version, 'PATCH bumps the version');
  for (const n of [a, b]) {
    await waitForVersion(n.http.url, p, version);
    const yes = await flags(n.http.url, c.t.projectKey, 'bob', { person_properties: { email: 'bob@corp.test' } });
    assert.equal(yes.body.flags[`${p}-email`].enabled, true);
    assert.equal(yes.body.flags[`${p}-email`].metadata.version, version);
    const no = await flags(n.http.url, c.t.projectKey, 'ada', { person_properties: { email: 'ada@example.com' } });
    assert.equal(no.body.flags[`${p}-email`].enabled, false);
  }
  assert.deepEqual(await answers(a.http.url), await answers(b.http.url), 'both nodes answer alike');
  // A PATCH that only disables the flag reaches both nodes too.
  const off = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/feature_flags/${emailFlag.id}/`, { body: { active: false } });
  assert.equal(off.status, 200, off.text);
  for (const n of [a, b]) {
    await waitFor(`${n.http.url} without the inactive flag`, async () => {
      const r = await flags(n.http.url, c.t.projectKey, 'bob', { person_properties: { email: 'bob@corp.test' } });
      const f = r.body.flags[`${p}-email`];
      return f === undefined || f.enabled === false;
    }, { timeoutMs: 30_000, intervalMs: 25 });
  }
});

test('a node whose data dir is wiped is rebuilt from a snapshot and answers the same', async () => {
  const p = 'wiped';
  const dir = c.tempDir();
  let a = await startNode(dir);
  const { emailFlag } = await createFlags(p);
  const patch = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/feature_flags/${emailFlag.id}/`, { body: { name: 'rebuilt' } });
  assert.equal(patch.status, 200, patch.text);
  await waitReady(a.http.url);
  await waitForVersion(a.http.url, p, patch.body.version);
  const before = await answers(a.http.url);
  await a.close();
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir);
  a = await startNode(dir);
  await waitReady(a.http.url);
  await waitForVersion(a.http.url, p, patch.body.version);
  assert.deepEqual(await answers(a.http.url), before, 'same answers after a rebuild');
});

test('changes made while gRPC is down reach running and restarted nodes once it is back', async () => {
  const p = 'grpc-down';
  const dirB = c.tempDir();
  const a = await startNode();
  let b = await startNode(dirB);
  const { emailFlag } = await createAndServe(p, [a, b]);
  await b.close(); // b misses what follows and catches up from its stored revision
  await c.stopGrpc(); // the management API keeps working
  const patch = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/feature_flags/${emailFlag.id}/`, {
    body: { filters: { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@later.test' }], rollout_percentage: 100 }] } },
  });
  assert.equal(patch.status, 200, patch.text);
  const created = await c.t.request('POST', `/api/projects/${c.t.projectId}/feature_flags/`, { body: { key: `${p}-while-down`, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } } });
  assert.equal(created.status, 201, created.text);
  const deleted = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/feature_flags/${(await c.t.request('GET', `/api/projects/${c.t.projectId}/feature_flags/?search=${p}-rollout`)).body.results[0].id}/`, { body: { deleted: true } });
  assert.equal(deleted.status, 200, deleted.text);
  // Still the old state on a, meanwhile.
  const old = await flags(a.http.url, c.t.projectKey, 'x', { person_properties: { email: 'x@example.com' } });
  assert.equal(old.body.flags[`${p}-email`].enabled, true);
  assert.equal(old.body.flags[`${p}-while-down`], undefined);
  b = await startNode(dirB);
  await waitReady(b.http.url); // from its own LMDB, before gRPC is back
  await c.startGrpc();
  for (const n of [a, b]) {
    await waitFor(`${n.http.url} caught up`, async () => {
      const r = await flags(n.http.url, c.t.projectKey, 'x', { person_properties: { email: 'x@later.test' } });
      return r.status === 200 && r.body.flags[`${p}-email`]?.metadata?.version === patch.body.version
        && r.body.flags[`${p}-while-down`]?.enabled === true && r.body.flags[`${p}-rollout`] === undefined;
    }, { timeoutMs: 60_000, intervalMs: 50 });
    const r = await flags(n.http.url, c.t.projectKey, 'x', { person_properties: { email: 'x@later.test' } });
    assert.equal(r.body.flags[`${p}-email`].enabled, true);
  }
  assert.deepEqual(await answers(a.http.url), await answers(b.http.url));
});

test('a whole control plane restarted on the same database: nodes resume and follow later changes', async () => {
  const p = 'restarted';
  const a = await startNode();
  const b = await startNode();
  const { emailFlag } = await createAndServe(p, [a, b]);
  const listed = async () => (await c.t.request('GET', `/api/projects/${c.t.projectId}/feature_flags/`)).body.count as number;
  const count = await listed();
  const before = await answers(a.http.url);
  await c.restartControlPlane({ down: true });
  assert.deepEqual(await answers(b.http.url), before);
  await c.startControlPlane(); // migrations and bootstrap again, same ports
  const patch = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/feature_flags/${emailFlag.id}/`, { body: { name: 'after the restart', rollout_percentage: 100 } });
  assert.equal(patch.status, 200, patch.text);
  for (const n of [a, b]) await waitForVersion(n.http.url, p, patch.body.version);
  assert.equal(await listed(), count, 'bootstrap did not duplicate anything visible');
  assert.deepEqual(await answers(a.http.url), await answers(b.http.url));
});

test('with the control plane stopped both nodes keep answering with the last state; a node restarted meanwhile serves /flags from LMDB', async () => {
  const p = 'stopped';
  const dirA = c.tempDir();
  let a = await startNode(dirA);
  const b = await startNode();
  const { emailFlag } = await createFlags(p);
  const patch = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/feature_flags/${emailFlag.id}/`, { body: { rollout_percentage: 100, name: 'last state' } });
  assert.equal(patch.status, 200, patch.text);
  for (const n of [a, b]) {
    await waitReady(n.http.url);
    await waitForVersion(n.http.url, p, patch.body.version);
  }
  const before = await answers(a.http.url);
  assert.deepEqual(await answers(b.http.url), before);
  await c.restartControlPlane({ down: true }); // management HTTP, gRPC and its Postgres pool
  for (const n of [a, b]) {
    assert.deepEqual(await answers(n.http.url), before, 'same answers without the control plane');
    assert.equal((await get(`${n.http.url}/_ready`)).status, 200);
  }
  // Restarted while the control plane is still down: ready from its LMDB alone.
  await a.close();
  a = await startNode(dirA);
  const ready = await get(`${a.http.url}/_ready`);
  assert.equal(ready.status, 200, ready.text);
  assert.equal(ready.body.status, 'ready');
  assert.deepEqual(await answers(a.http.url), before, 'same answers from LMDB alone');
});
