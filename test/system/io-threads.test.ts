/**
 * A node with two IO threads (`ioThreads: 2`) on one port. Requests on fresh
 * connections land on both threads (the kernel spreads them); a flag created after start is
 * served by both (the main thread relays store changes); capture sent over many connections
 * reaches the control plane whole (durable appends through the main thread's outbox); /flags
 * usage counted on both threads is reported once; the feed rate limit is one budget per project
 * whichever thread answers; /metrics sums every thread's requests.
 *
 * One control plane for the file. The first test starts a one-thread node of its own; the others
 * share one two-thread node (each IO thread loads the node's modules: a start costs about a
 * second of CPU), started by the first of them with every setting they need, which touch
 * nothing the others check: the feed limit (5 a minute; only the test that starts it reads the feed), a
 * short quiet time before a memory release (a release needs 1,000 units of work, which only the
 * bulk capture test does) and a 1 MiB outbox bound (each test's capture drains before the next;
 * only the last test, which stops the control plane's gRPC, fills it).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { waitFor } from '../support/wait.js';
import { onNewConnection } from '../support/http.js';
import { createFlag, startCluster, waitForEventsOnce, waitReady, type SystemCluster } from './support.js';
import type { NodeService } from '../../src/eval-node/service.js';
import { USAGE_PUSH_MS } from '../../src/eval-node/http/io-thread-init.js';

function metric(text: string, name: string, labels = ''): number[] {
  return text.split('\n').filter((l) => l.startsWith(`${name}{`) && l.includes(labels)).map((l) => Number(l.split(' ').pop()));
}

/**
 * The LMDB gauges: the store's map as configured (one mapping), files on disk, pages resident in
 * the process (the store has been read: some), the outbox's payload, memory releases.
 */
function assertStorageMetrics(text: string, mapSize: number): void {
  assert.deepEqual(metric(text, 'switchyard_node_lmdb_map_bytes', 'env="store"'), [mapSize]);
  assert.ok(metric(text, 'switchyard_node_lmdb_file_bytes', 'env="store"')[0]! > 0);
  assert.ok(metric(text, 'switchyard_node_lmdb_map_bytes', 'env="outbox"')[0]! >= 64 * 1024 ** 2);
  const resident = metric(text, 'switchyard_node_lmdb_resident_bytes', 'env="store"')[0]!;
  assert.ok(resident > 0 && resident <= metric(text, 'switchyard_node_lmdb_file_bytes', 'env="store"')[0]!, `store resident ${resident}`);
  assert.equal(metric(text, 'switchyard_node_lmdb_resident_bytes', 'env="outbox"').length, 1);
  assert.match(text, /^switchyard_node_capture_outbox_bytes \d+/m);
  assert.match(text, /^switchyard_node_memory_releases_total \d+/m);
}

let c: SystemCluster;
/** The two-thread node of every test but the first (started by the second test; closed with the cluster). */
let node: NodeService;
before(async () => { c = await startCluster(); });
after(async () => { await c.close(); });

test('one IO thread: the same storage gauges on /metrics', async () => {
  const node = await c.startNode(c.tempDir(), { ioThreads: 1, lmdbMapSize: 128 * 1024 ** 2 });
  try {
    await waitReady(node.http.url);
    assertStorageMetrics((await onNewConnection(`${node.http.url}/metrics`, 'GET')).text, 128 * 1024 ** 2);
  } finally {
    await node.close();
  }
});

test('two IO threads share one port, the store, capture, usage, the feed limit and /metrics', async () => {
  const t = c.t;
  await createFlag(c, { key: 'before', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
  node = await c.startNode(c.tempDir(), {
    ioThreads: 2, definitionsRatePerMinute: 5, lmdbMapSize: 256 * 1024 ** 2, memoryReleaseQuietMs: 300, maxOutboxBytes: 1024 * 1024,
  });
  await waitReady(node.http.url);
  const flagsUrl = `${node.http.url}/flags/?v=2`;
  const ask = (d: string) => onNewConnection(flagsUrl, 'POST', { token: t.projectKey, distinct_id: d });
  await waitFor('the node serves the first flag', async () => JSON.parse((await ask('probe')).text).flags?.before?.enabled === true, { timeoutMs: 30_000 });

  // A change after start reaches both threads.
  await createFlag(c, { key: 'after', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
  await waitFor('a thread serves the new flag', async () => JSON.parse((await ask('probe')).text).flags?.after?.enabled === true, { timeoutMs: 30_000 });
  await new Promise((r) => setTimeout(r, 3 * USAGE_PUSH_MS)); // the probes' counts arrive, then are dropped
  node.http.usage.takeUsage();
  const before = await onNewConnection(`${node.http.url}/metrics`, 'GET');
  const flagsBefore = metric(before.text, 'switchyard_node_http_requests_total', 'route="flags",status="200"').reduce((a, b) => a + b, 0);
  const N = 60;
  for (let i = 0; i < N; i++) {
    const r = await ask(`user-${i}`);
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.text).flags.after.enabled, true, 'every thread knows the new flag');
  }
  const after = await onNewConnection(`${node.http.url}/metrics`, 'GET');
  assert.equal(metric(after.text, 'switchyard_node_http_requests_total', 'route="flags",status="200"').reduce((a, b) => a + b, 0) - flagsBefore, N, '/metrics sums the threads');
  const perThread = metric(after.text, 'switchyard_node_io_thread_requests_total');
  assert.equal(perThread.length, 2, 'one series per thread');
  assert.ok(perThread.every((n) => n > 0), `both threads answered: ${perThread.join(', ')}`);
  assert.equal(metric(after.text, 'switchyard_node_process_cpu_user_seconds_total').length, 0, 'labels-free process metrics are not summed per thread');
  assert.match(after.text, /^switchyard_node_process_cpu_user_seconds_total \d/m);
  assertStorageMetrics(after.text, 256 * 1024 ** 2);
  // Each IO thread's heap, used within total.
  for (const thread of ['0', '1']) {
    const [used] = metric(after.text, 'switchyard_node_io_thread_heap_bytes', `thread="${thread}",kind="used"`);
    const [total] = metric(after.text, 'switchyard_node_io_thread_heap_bytes', `thread="${thread}",kind="total"`);
    assert.ok(used! > 0 && used! <= total!, `thread ${thread} heap ${used} / ${total}`);
  }

  // Usage counted on both threads is reported once, in full.
  await waitFor('usage pushed by both threads', async () => {
    const u = node.http.usage.takeUsage();
    for (const [org, n] of u) node.http.usage.addMany(org, n);
    return [...u.values()].reduce((a, b) => a + b, 0) >= N;
  }, { timeoutMs: 5_000, intervalMs: 100 });
  assert.equal([...node.http.usage.takeUsage().values()].reduce((a, b) => a + b, 0), N);

  // Capture over many connections: every event reaches the control plane.
  const uuids: string[] = [];
  for (let i = 0; i < 20; i++) {
    const batch = Array.from({ length: 5 }, (_, k) => ({ uuid: crypto.randomUUID(), event: 'threaded', distinct_id: `cap-${i}-${k}`, properties: {} }));
    uuids.push(...batch.map((e) => e.uuid));
    const r = await onNewConnection(`${node.http.url}/batch/`, 'POST', { api_key: t.projectKey, batch });
    assert.equal(r.status, 200, r.text);
  }
  await waitForEventsOnce(t, uuids);

  // The feed's 5 requests per minute are one budget, whichever thread answers.
  const feedKey = t.personalKey; // known to the node since its snapshot
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++) {
    statuses.push((await onNewConnection(`${node.http.url}/api/feature_flag/local_evaluation?token=${t.projectKey}`, 'GET', undefined, { authorization: `Bearer ${feedKey}` })).status);
  }
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429]);
});

test('after bulk capture goes quiet the node hands memory back: a release is counted and the outbox pages are no longer mapped', async () => {
  const releases = (text: string) => Number(/^switchyard_node_memory_releases_total (\d+)$/m.exec(text)?.[1]);
  const before = releases((await onNewConnection(`${node.http.url}/metrics`, 'GET')).text);
  assert.equal(before, node.memory.releases);
  // 1,500 events: 1,500 outbox entries in and out, past the 1,000 units that make a release due.
  const uuids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const batch = Array.from({ length: 500 }, (_, k) => ({ uuid: crypto.randomUUID(), event: 'bulk', distinct_id: `bulk-${i}-${k}`, properties: { n: k } }));
    uuids.push(...batch.map((e) => e.uuid));
    const r = await onNewConnection(`${node.http.url}/batch/`, 'POST', { api_key: c.t.projectKey, batch });
    assert.equal(r.status, 200, r.text);
  }
  await waitForEventsOnce(c.t, uuids);
  // Watched on the releaser itself (a /metrics scrape reads /proc/self/smaps), then on /metrics.
  await waitFor('a release after the bulk work', () => node.memory.releases > before || null, { timeoutMs: 15_000, intervalMs: 50 });
  const metrics = (await onNewConnection(`${node.http.url}/metrics`, 'GET')).text;
  assert.ok(releases(metrics) > before, `releases on /metrics: ${releases(metrics)}`);
  // The outbox is quiet: of its pages only what /metrics itself reads is mapped again (one
  // fault maps at most 16 pages, 64 KiB).
  const resident = metric(metrics, 'switchyard_node_lmdb_resident_bytes', 'env="outbox"')[0]!;
  assert.ok(resident <= 128 * 1024, `outbox resident after the release: ${resident}`);
  // Nothing is lost by it: the node still answers from its store.
  const r = await onNewConnection(`${node.http.url}/flags/?v=2`, 'POST', { token: c.t.projectKey, distinct_id: 'after-release' });
  assert.equal(r.status, 200, r.text);
});

test('two IO threads: near the outbox bound capture is shed with 503 outbox_backlog and Retry-After, at it refused; accepted events arrive once', async () => {
  const shedTotal = async () => Number(/^switchyard_node_capture_outbox_shed_total (\d+)$/m.exec((await onNewConnection(`${node.http.url}/metrics`, 'GET')).text)?.[1]);
  const shedBefore = await shedTotal();
  await c.stopGrpc(); // nothing drains: the outbox fills
  const accepted: string[] = [];
  const refused: string[] = [];
  const codes: string[] = [];
  for (let i = 0; i < 60 && !codes.includes('outbox_full'); i++) {
    const batch = Array.from({ length: 10 }, (_, k) => ({ uuid: crypto.randomUUID(), event: 'fill', distinct_id: `fill-${i}-${k}`, properties: { pad: 'f'.repeat(15 * 1024) } }));
    const r = await onNewConnection(`${node.http.url}/batch/`, 'POST', { api_key: c.t.projectKey, batch });
    if (r.status === 200) { accepted.push(...batch.map((e) => e.uuid)); continue; }
    assert.equal(r.status, 503, r.text);
    codes.push((JSON.parse(r.text) as { code: string }).code);
    const retryAfter = Number(r.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 30, `Retry-After ${String(r.headers['retry-after'])}`);
    refused.push(...batch.map((e) => e.uuid));
  }
  assert.ok(codes.includes('outbox_full'), 'the outbox filled up');
  assert.ok(codes.every((x) => x === 'outbox_backlog' || x === 'outbox_full'), codes.join(', '));
  assert.equal(await shedTotal() - shedBefore, codes.filter((x) => x === 'outbox_backlog').length,
    'sheds decided on the main thread for requests the IO threads answered');
  await c.startGrpc();
  await waitForEventsOnce(c.t, accepted);
  const [n] = await c.t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE uuid = ANY(${refused}::uuid[])`;
  assert.equal(n!.n, 0, 'nothing of the refused requests');
});
