/**
 * Capture durability as a system: every event a node answered 200 for reaches Postgres
 * exactly once, across a control plane that is down, a node killed with SIGKILL (a real
 * `switchyard eval-node` child process) and restarted on the same data dir.
 *
 * One control plane serves the whole file (the cases use their own event names). The child
 * node cases share one data dir: each kills the child node it finds running (the one the
 * previous case restarted) and restarts it, so a restart is both one case's proof and the next
 * case's node; two kills (one while shipping, one while nothing can ship) cover what the
 * assertions need. The in-process cases run first, so that the child node never sits through
 * their gRPC outages (its reconnect backoff would then slow the cases after them), and the case
 * that replaces the whole control plane runs last.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { waitFor } from '../support/wait.js';
import { eventCounts, post, spawnNode, startCluster, waitForEventsOnce, waitReady, type NodeProcess, type SystemCluster } from './support.js';

/**
 * The child nodes' environment: two IO threads (capture crosses from an IO thread to the main
 * thread's outbox before the 200, the path a SIGKILL must not break, on any machine), and no
 * drain on SIGTERM (SWITCHYARD_DRAIN_SECONDS: the 5 s of `/_ready` 503 for load balancers are
 * no part of these cases; the stop itself still runs).
 */
const CHILD_ENV = { SWITCHYARD_IO_THREADS: '2', SWITCHYARD_DRAIN_SECONDS: '0' };
/** A child that is never killed holding events it accepted only ships and serves: one IO thread. */
const LAST_CHILD_ENV = { ...CHILD_ENV, SWITCHYARD_IO_THREADS: '1' };

/** Interval of the waits that ask a node over HTTP, in ms (the default 20 ms costs both processes CPU for nothing). */
const POLL_MS = 100;

let c: SystemCluster;
/** The child nodes' data dir. */
let dir: string;
/** The child node running now (null before the first one). */
let current: NodeProcess | null = null;
const procs: NodeProcess[] = [];

before(async () => {
  c = await startCluster();
  dir = c.tempDir();
});

after(async () => {
  for (const p of procs) await p.kill('SIGKILL');
  await c?.close();
});

/** Starts a child node on {@link dir} (on `port` when given; `env` as above) and makes it the current one. */
async function startChild(port?: number, env: Record<string, string> = CHILD_ENV): Promise<NodeProcess> {
  current = await spawnNode(c, dir, port, env);
  procs.push(current);
  return current;
}

/** The running child node: the one an earlier case left, or a new one (its first case, or after a failure). */
async function runningChild(): Promise<NodeProcess> {
  if (current && current.child.exitCode === null && current.child.signalCode === null) return current;
  return startChild();
}

/**
 * Captures `requests` /batch/ requests of `perRequest` events named `sys_<label>` on `url` (distinct
 * ids `<users>user-<request>-<event>`, each `$set`ting `seen: label`), each answered 200; returns their uuids.
 */
async function captureBatches(url: string, requests: number, perRequest: number, label: string, users = ''): Promise<string[]> {
  const uuids: string[] = [];
  for (let r = 0; r < requests; r++) {
    const batch = Array.from({ length: perRequest }, (_, i) => {
      const uuid = randomUUID();
      uuids.push(uuid);
      return { event: `sys_${label}`, distinct_id: `${users}user-${r}-${i}`, uuid, properties: { r, i, $set: { seen: label } } };
    });
    const res = await post(`${url}/batch/`, { api_key: c.t.projectKey, batch });
    assert.equal(res.status, 200, res.text);
  }
  return uuids;
}

async function eventCount(event: string): Promise<number> {
  const [{ n }] = await c.t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE project_id = ${c.t.projectId} AND event = ${event}`;
  return n;
}

test('a node that has never reached the control plane asks clients to retry capture (503), then accepts once synced', async () => {
  await c.stopGrpc();
  const node = await c.startNode(c.tempDir()); // empty data dir: no snapshot, no project tokens yet
  try {
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
    await node.close();
  }
});

test('events accepted by an in-process node while the control plane is down all arrive once when it returns', async () => {
  const node = await c.startNode(c.tempDir());
  try {
    await waitReady(node.http.url);
    const before = await captureBatches(node.http.url, 1, 5, 'before');
    await waitForEventsOnce(c.t, before);
    await c.stopGrpc();
    const during: string[] = [];
    for (let round = 0; round < 5; round++) {
      during.push(...await captureBatches(node.http.url, 4, 5, 'during'));
      await new Promise((r) => setTimeout(r, 200)); // the shipper keeps retrying meanwhile
    }
    assert.ok(node.capture.outbox.entries > 0, 'events wait in the outbox');
    assert.equal((await eventCounts(c.t, during)).size, 0);
    await c.startGrpc();
    await waitForEventsOnce(c.t, during);
    await waitFor('outbox drained', () => node.capture.outbox.entries === 0, { timeoutMs: 30_000 });
    assert.equal(await eventCount('sys_during'), during.length);
    assert.equal(await eventCount('sys_before'), before.length);
    // $set from the outage reached the node's store too.
    await waitFor('person from the outage on the node', async () => {
      const r = await post(`${node.http.url}/flags?v=2`, { api_key: c.t.projectKey, distinct_id: 'user-0-0' });
      return r.status === 200 && node.node.store.personByDistinctId(c.t.projectId, 'user-0-0')?.properties.seen === 'during';
    }, { timeoutMs: 30_000, intervalMs: POLL_MS });
  } finally {
    await node.close();
  }
});

test('a child node killed while shipping delivers every accepted event exactly once after a restart', async () => {
  const node = await runningChild();
  await waitReady(node.url);
  const uuids = await captureBatches(node.url, 40, 25, 'inflight');
  await node.kill('SIGKILL'); // some batches shipped, some maybe mid-flight, some not yet sent
  await startChild();
  await waitForEventsOnce(c.t, uuids);
  assert.equal(await eventCount('sys_inflight'), uuids.length);
});

test('a whole control plane down: a child node SIGKILLed with events in its outbox (batches and single events) delivers them once to a new control plane', async () => {
  let node = await runningChild();
  const flag = await c.t.request('POST', `/api/projects/${c.t.projectId}/feature_flags/`, {
    body: { key: 'sys-seen', filters: { groups: [{ properties: [{ key: 'seen', type: 'person', operator: 'exact', value: ['cp_down'] }], rollout_percentage: 100 }] } },
  });
  assert.equal(flag.status, 201, flag.text);
  await waitReady(node.url);
  // Shipping works before the outage.
  const early = await captureBatches(node.url, 2, 5, 'early', 'early-');
  await waitForEventsOnce(c.t, early);
  // Persons of their own (cp-user-…): none exists before this case's events $set them.
  await waitFor('sys-seen on the node', async () => (await post(`${node.url}/flags?v=2`, { api_key: c.t.projectKey, distinct_id: 'cp-user-0-0' })).body?.flags?.['sys-seen']?.enabled === false, { intervalMs: POLL_MS });

  await c.restartControlPlane({ down: true }); // nothing can ship from here on
  const offline = [
    ...await captureBatches(node.url, 20, 10, 'cp_down', 'cp-'),
    ...await captureBatches(node.url, 30, 1, 'cp_down', 'cp-single-'),
  ];
  const single = randomUUID();
  const r = await post(`${node.url}/i/v0/e/`, { api_key: c.t.projectKey, event: 'sys_cp_down', distinct_id: 'single', uuid: single });
  assert.equal(r.status, 200, r.text);
  offline.push(single);
  await node.kill('SIGKILL');
  assert.equal((await eventCounts(c.t, offline)).size, 0, 'nothing shipped while the control plane was down');

  await c.startControlPlane(); // a new control plane process on the same database and ports
  node = await startChild(Number(new URL(node.url).port), LAST_CHILD_ENV); // on the port the killed one had
  await waitForEventsOnce(c.t, offline);
  assert.equal(await eventCount('sys_cp_down'), offline.length, 'no other sys_cp_down rows');
  assert.equal(await eventCount('sys_early'), early.length, 'early events not repeated');
  // The persons they $set reach the restarted node.
  await waitFor('person on the restarted node', async () => {
    const res = await post(`${node.url}/flags?v=2`, { api_key: c.t.projectKey, distinct_id: 'cp-user-0-0' });
    return res.status === 200 && res.body.flags['sys-seen'].enabled === true;
  }, { timeoutMs: 30_000, intervalMs: POLL_MS });
  // The restarted node keeps capturing and shipping.
  const late = await captureBatches(node.url, 1, 3, 'late');
  await waitForEventsOnce(c.t, late);
});
