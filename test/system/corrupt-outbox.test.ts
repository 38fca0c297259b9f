/**
 * A node whose capture outbox was damaged while it was stopped, holding events it had answered
 * 200 for but not shipped (gRPC down), starts anyway: it logs that it moved the outbox aside,
 * captures into a fresh one, recovers the readable events of the old one, and once the control
 * plane is back every recovered event is in Postgres exactly once; what could not be read is
 * counted in /metrics and the log. Two kinds of damage: 64 bytes overwritten at offsets 16 and
 * 4112 (both LMDB meta pages: a SIGSEGV at open before) and 64 bytes over the header of the
 * leaf page holding the newest entries. Real control plane, real `switchyard eval-node`
 * child processes, real files (the first outbox is written by an in-process node; every start
 * on a damaged outbox is a child process).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { salvageRecords } from '../../src/eval-node/store/salvage.js';
import { waitFor } from '../support/wait.js';
import { eventCounts, get, post, spawnNode, startCluster, waitForEventsOnce, waitReady, type NodeProcess, type SystemCluster } from './support.js';

/** Captures `requests` /batch/ requests of `perRequest` events on `url`, each answered 200; returns their uuids. */
async function capture(c: SystemCluster, url: string, requests: number, perRequest: number, label: string): Promise<string[]> {
  const uuids: string[] = [];
  for (let r = 0; r < requests; r++) {
    const batch = Array.from({ length: perRequest }, (_, i) => {
      const uuid = randomUUID();
      uuids.push(uuid);
      return { event: `obx_${label}`, distinct_id: `user-${r}-${i}`, uuid, properties: { r, i, pad: 'x'.repeat(200) } };
    });
    const res = await post(`${url}/batch/`, { api_key: c.t.projectKey, batch });
    assert.equal(res.status, 200, res.text);
  }
  return uuids;
}

/** The value of an unlabelled metric on the node's /metrics. */
async function metric(url: string, name: string): Promise<number> {
  const text = (await get(`${url}/metrics`)).text;
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  assert.ok(m, `${name} on /metrics`);
  return Number(m[1]);
}

function overwrite(file: string, offsets: number[]): void {
  const fd = fs.openSync(file, 'r+');
  for (const o of offsets) fs.writeSync(fd, Buffer.alloc(64, 0xa5), 0, 64, o);
  fs.closeSync(fd);
}

/** The page of `file` holding the live copy of the entry with `uuid`: the newest page with a record containing it. */
function livePageOf(file: string, uuid: string): number {
  const counts = { pages: 0, unreadablePages: 0, unrecognisedPages: 0, unreadableRecords: 0 };
  const pages = [...salvageRecords(file, counts)].filter((r) => r.value.includes(uuid)).map((r) => r.page);
  assert.ok(pages.length > 0, 'the entry is on a page');
  const fd = fs.openSync(file, 'r');
  const txn = (page: number) => { const b = Buffer.alloc(8); fs.readSync(fd, b, 0, 8, page * 4096 + 8); return b.readBigUInt64LE(0); };
  const newest = pages.reduce((a, b) => (txn(b) > txn(a) ? b : a));
  fs.closeSync(fd);
  return newest;
}

test('a node with a damaged capture outbox starts, captures on a fresh one and delivers the recovered events exactly once', { timeout: 300_000 }, async () => {
  const c = await startCluster();
  const procs: NodeProcess[] = [];
  try {
    const dir = c.tempDir();
    const outbox = path.join(dir, 'capture-outbox');
    // No drain on SIGTERM (SWITCHYARD_DRAIN_SECONDS: the 5 s of /_ready 503 for load balancers are
    // no part of this test; the stop itself, with its last attempt to ship, still runs).
    const env = { SWITCHYARD_LOG_LEVEL: 'info', SWITCHYARD_IO_THREADS: '1', SWITCHYARD_KEEP_MOVED_ASIDE: '1', SWITCHYARD_DRAIN_SECONDS: '0' };
    // The outbox to damage first is written by an in-process node on the same data dir, stopped
    // as SIGTERM stops a child (service close: its last attempt to ship, the outbox closed).
    const first = await c.startNode(dir, { ioThreads: 1 });
    let held: string[];
    try {
      await waitReady(first.http.url);
      await waitForEventsOnce(c.t, await capture(c, first.http.url, 3, 5, 'shipped')); // the outbox has a history

      // 1. Both meta pages overwritten (offsets 16 and 4112).
      await c.stopGrpc();
      held = await capture(c, first.http.url, 40, 10, 'held');
    } finally {
      await first.close();
    }
    assert.equal((await eventCounts(c.t, held)).size, 0, 'nothing shipped while gRPC was down');
    overwrite(path.join(outbox, 'data.mdb'), [16, 4112]);
    let node = await spawnNode(c, dir, undefined, env);
    procs.push(node);
    await waitReady(node.url);
    assert.match(node.output(), /"level":50[^\n]*capture outbox is damaged; moved it aside/, 'logged at error level');
    assert.ok(node.output().includes(outbox), 'the log names the path');
    assert.match(node.output(), /both LMDB meta pages are damaged/, 'and what failed');
    const fresh = await capture(c, node.url, 2, 5, 'fresh'); // capture works on the fresh outbox
    await waitFor('recovery finished', () => /recovered every readable event of a capture outbox/.test(node.output()), { timeoutMs: 60_000 });
    assert.equal(await metric(node.url, 'switchyard_node_capture_outbox_moved_aside_total'), 1);
    assert.ok(await metric(node.url, 'switchyard_node_capture_outbox_recovered_events_total') >= held.length, 'every held event recovered');
    assert.equal(await metric(node.url, 'switchyard_node_capture_outbox_unreadable_entries_total'), 0);
    assert.equal(await metric(node.url, 'switchyard_node_capture_outbox_unreadable_pages_total'), 0);
    await c.startGrpc();
    await waitForEventsOnce(c.t, [...held, ...fresh]);
    const asides = fs.readdirSync(dir).filter((d) => d.startsWith('capture-outbox.corrupt-'));
    assert.equal(asides.length, 1);
    assert.ok(fs.existsSync(path.join(dir, asides[0]!, 'recovered.json')), 'the copy is marked recovered');

    // 2. The header of the leaf page holding the newest entry overwritten.
    await c.stopGrpc();
    const held2 = await capture(c, node.url, 40, 10, 'held2');
    await node.kill('SIGTERM');
    const file = path.join(outbox, 'data.mdb');
    const last = held2[held2.length - 1]!;
    overwrite(file, [livePageOf(file, last) * 4096 + 16]);
    node = await spawnNode(c, dir, undefined, env);
    procs.push(node);
    await waitReady(node.url);
    assert.match(node.output(), /"level":50[^\n]*capture outbox is damaged; moved it aside/);
    await waitFor('recovery finished', () => /recovered a capture outbox moved aside; some of it could not be read/.test(node.output()), { timeoutMs: 60_000 });
    assert.match(node.output(), /"level":50[^\n]*"unreadable_pages":1/, 'the loss is logged at error level');
    assert.equal(await metric(node.url, 'switchyard_node_capture_outbox_unreadable_pages_total'), 1);
    const recoveredEvents = await metric(node.url, 'switchyard_node_capture_outbox_recovered_events_total');
    assert.ok(recoveredEvents > 0, 'the readable pages were recovered');
    await c.startGrpc();
    await waitFor('the outbox drained', async () => await metric(node.url, 'switchyard_node_capture_outbox_bytes') === 0, { timeoutMs: 60_000, intervalMs: 100 });
    const counts = await eventCounts(c.t, [...held, ...fresh, ...held2]);
    for (const [u, n] of counts) assert.equal(n, 1, `event ${u} stored ${n} times`);
    const arrived = held2.filter((u) => counts.has(u)).length;
    assert.ok(arrived > 0 && arrived < held2.length, `some held events recovered, the damaged page's lost (${arrived} of ${held2.length})`);
    assert.equal(counts.has(last), false, 'the newest entry was only on the damaged page');
    // Pruned to SWITCHYARD_KEEP_MOVED_ASIDE=1 once the second copy was recovered.
    const left = fs.readdirSync(dir).filter((d) => d.startsWith('capture-outbox.corrupt-'));
    assert.equal(left.length, 1, left.join(', '));
    assert.notEqual(left[0], asides[0], 'the older copy was deleted');
    assert.equal(await metric(node.url, 'switchyard_node_capture_outbox_copies_pruned_total'), 1);
    await node.kill('SIGTERM');
  } finally {
    for (const p of procs) await p.kill('SIGKILL');
    await c.close();
  }
});
