/**
 * Capture durability as a system: every event a node answered 200 for reaches Postgres
 * exactly once, across a control plane that is down, a node killed with SIGKILL (a real
 * `switchyard eval-node` child process) and restarted on the same data dir.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { waitFor } from '../support/wait.js';
import { eventCounts, post, spawnNode, startCluster, waitForEventsOnce, waitReady, type NodeProcess, type SystemCluster } from './support.js';

/** Captures `n` events in `requests` /batch/ requests on `url`, each answered 200; returns their uuids. */
async function captureBatches(c: SystemCluster, url: string, requests: number, perRequest: number, label: string): Promise<string[]> {
  const uuids: string[] = [];
  for (let r = 0; r < requests; r++) {
    const batch = Array.from({ length: perRequest }, (_, i) => {
      const uuid = randomUUID();
      uuids.push(uuid);
      return { event: `sys_${label}`, distinct_id: `user-${r}-${i}`, uuid, properties: { r, i, $set: { seen: label } } };
    });
    const res = await post(`${url}/batch/`, { api_key: c.t.projectKey, batch });
    assert.equal(res.status, 200, res.text);
  }
  return uuids;
}

async function eventCount(c: SystemCluster, event: string): Promise<number> {
  const [{ n }] = await c.t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE project_id = ${c.t.projectId} AND event = ${event}`;
  return n;
}

test('events accepted by a child node while gRPC is down survive SIGKILL and arrive exactly once', async () => {
  const c = await startCluster();
  const procs: NodeProcess[] = [];
  try {
    const dir = c.tempDir();
    let node = await spawnNode(c, dir);
    procs.push(node);
    await waitReady(node.url); // knows the project token from its snapshot
    // Shipping works before the outage.
    const early = await captureBatches(c, node.url, 2, 5, 'early');
    await waitForEventsOnce(c.t, early);

    await c.stopGrpc(); // nothing can ship from here on
    const offline = [
      ...await captureBatches(c, node.url, 20, 10, 'offline'),
      ...await captureBatches(c, node.url, 30, 1, 'offline'),
    ];
    const single = randomUUID();
    const r = await post(`${node.url}/i/v0/e/`, { api_key: c.t.projectKey, event: 'sys_offline', distinct_id: 'single', uuid: single });
    assert.equal(r.status, 200, r.text);
    offline.push(single);
    await node.kill('SIGKILL');
    assert.equal((await eventCounts(c.t, offline)).size, 0, 'nothing shipped while gRPC was down');

    await c.startGrpc();
    node = await spawnNode(c, dir, Number(new URL(node.url).port));
    procs.push(node);
    await waitForEventsOnce(c.t, offline);
    assert.equal(await eventCount(c, 'sys_offline'), offline.length, 'no other sys_offline rows');
    assert.equal(await eventCount(c, 'sys_early'), early.length, 'early events not repeated');
    // The restarted node keeps capturing and shipping.
    const late = await captureBatches(c, node.url, 1, 3, 'late');
    await waitForEventsOnce(c.t, late);
    await node.kill('SIGTERM');
  } finally {
    for (const p of procs) await p.kill('SIGKILL');
    await c.close();
  }
});

test('a child node killed while shipping delivers every accepted event exactly once after a restart', async () => {
  const c = await startCluster();
  const procs: NodeProcess[] = [];
  try {
    const dir = c.tempDir();
    let node = await spawnNode(c, dir);
    procs.push(node);
    await waitReady(node.url);
    const uuids = await captureBatches(c, node.url, 40, 25, 'inflight');
    await node.kill('SIGKILL'); // some batches shipped, some maybe mid-flight, some not yet sent
    node = await spawnNode(c, dir);
    procs.push(node);
    await waitForEventsOnce(c.t, uuids);
    assert.equal(await eventCount(c, 'sys_inflight'), uuids.length);
  } finally {
    for (const p of procs) await p.kill('SIGKILL');
    await c.close();
  }
});

test('events accepted by an in-process node while the control plane is down all arrive once when it returns', async () => {
  const c = await startCluster();
  try {
    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    const before = await captureBatches(c, node.http.url, 1, 5, 'before');
    await waitForEventsOnce(c.t, before);
    await c.stopGrpc();
    const during: string[] = [];
    for (let round = 0; round < 5; round++) {
      during.push(...await captureBatches(c, node.http.url, 4, 5, 'during'));
      await new Promise((r) => setTimeout(r, 200)); // the shipper keeps retrying meanwhile
    }
    assert.ok(node.capture.outbox.entries > 0, 'events wait in the outbox');
    assert.equal((await eventCounts(c.t, during)).size, 0);
    await c.startGrpc();
    await waitForEventsOnce(c.t, during);
    await waitFor('outbox drained', () => node.capture.outbox.entries === 0, { timeoutMs: 30_000 });
    assert.equal(await eventCount(c, 'sys_during'), during.length);
    assert.equal(await eventCount(c, 'sys_before'), before.length);
    // $set from the outage reached the node's store too.
    await waitFor('person from the outage on the node', async () => {
      const r = await post(`${node.http.url}/flags?v=2`, { api_key: c.t.projectKey, distinct_id: 'user-0-0' });
      return r.status === 200 && node.node.store.personByDistinctId(c.t.projectId, 'user-0-0')?.properties.seen === 'during';
    }, { timeoutMs: 30_000 });
  } finally {
    await c.close();
  }
});

test('a whole control plane down: a child node SIGKILLed with events in its outbox delivers them once to a new control plane', async () => {
  const c = await startCluster();
  const procs: NodeProcess[] = [];
  try {
    const dir = c.tempDir();
    let node = await spawnNode(c, dir);
    procs.push(node);
    const flag = await c.t.request('POST', `/api/projects/${c.t.projectId}/feature_flags/`, {
      body: { key: 'sys-seen', filters: { groups: [{ properties: [{ key: 'seen', type: 'person', operator: 'exact', value: ['cp_down'] }], rollout_percentage: 100 }] } },
    });
    assert.equal(flag.status, 201, flag.text);
    await waitReady(node.url);
    await waitFor('sys-seen on the node', async () => (await post(`${node.url}/flags?v=2`, { api_key: c.t.projectKey, distinct_id: 'user-0-0' })).body?.flags?.['sys-seen']?.enabled === false);
    await c.restartControlPlane({ down: true });
    const uuids = await captureBatches(c, node.url, 10, 10, 'cp_down');
    await node.kill('SIGKILL');
    await c.startControlPlane(); // a new control plane process on the same database and ports
    node = await spawnNode(c, dir);
    procs.push(node);
    await waitForEventsOnce(c.t, uuids);
    assert.equal(await eventCount(c, 'sys_cp_down'), uuids.length);
    // The persons they $set reach the restarted node.
    await waitFor('person on the restarted node', async () => {
      const r = await post(`${node.url}/flags?v=2`, { api_key: c.t.projectKey, distinct_id: 'user-0-0' });
      return r.status === 200 && r.body.flags['sys-seen'].enabled === true;
    }, { timeoutMs: 30_000 });
  } finally {
    for (const p of procs) await p.kill('SIGKILL');
    await c.close();
  }
});

test('a node that has never reached the control plane asks clients to retry capture (503), then accepts once synced', async () => {
  const c = await startCluster();
  try {
    await c.stopGrpc();
    const node = await c.startNode(c.tempDir()); // empty data dir: no snapshot, no project tokens yet
    const first = randomUUID();
    const body = { api_key: c.t.projectKey, batch: [{ event: 'sys_early_bird', distinct_id: 'x', uuid: first }] };
    const f = await post(`${node.http.url}/flags?v=2`, { api_key: c.t.projectKey, distinct_id: 'x' });
    assert.equal(f.status, 503, f.text);
    const r = await post(`${node.http.url}/batch/`, body);
    assert.equal(r.status, 503, `a valid token is not refused for good before the first snapshot: ${r.status} ${r.text}`);
    assert.equal(r.body.code, 'not_ready');
    await c.startGrpc();
    await waitReady(node.http.url);
    const again = await post(`${node.http.url}/batch/`, body); // the client's retry
    assert.equal(again.status, 200, again.text);
    await waitForEventsOnce(c.t, [first]);
    const unknown = await post(`${node.http.url}/batch/`, { ...body, api_key: 'phc_unknown_project_token_000000000000' });
    assert.equal(unknown.status, 401, 'an unknown token once synced');
  } finally {
    await c.close();
  }
});
