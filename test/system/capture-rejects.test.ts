/**
 * Issue "capture", rejection as a system: malformed and oversized `/batch/` requests to a node
 * are refused whole (4xx) and nothing of them reaches Postgres, while valid requests of the same
 * session do; a large batch the node accepts (over one gRPC message) is delivered without
 * holding up later events, and an event too big for any batch is refused with 413.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { waitFor } from '../support/wait.js';
import { eventCounts, post, startCluster, waitForEventsOnce, waitReady, type SystemCluster } from './support.js';

function events(n: number, label: string, extra: Record<string, unknown> = {}): { uuids: string[]; batch: Record<string, unknown>[] } {
  const uuids: string[] = [];
  const batch = Array.from({ length: n }, (_, i) => {
    const uuid = randomUUID();
    uuids.push(uuid);
    return { event: `sys_${label}`, distinct_id: `${label}-${i}`, uuid, properties: { i, ...extra } };
  });
  return { uuids, batch };
}

async function totalEvents(c: SystemCluster): Promise<number> {
  const [{ n }] = await c.t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE project_id = ${c.t.projectId}`;
  return n;
}

test('malformed and oversized batches are rejected whole and nothing of them lands; valid ones do', async () => {
  const c = await startCluster();
  try {
    const limit = 64 * 1024;
    const node = await c.startNode(c.tempDir(), { maxPublicBodyBytes: limit });
    const url = `${node.http.url}/batch/`;
    await waitReady(node.http.url);
    const token = c.t.projectKey;
    const accepted: string[] = [];
    const rejected: string[] = [];

    const first = events(5, 'valid');
    assert.equal((await post(url, { api_key: token, batch: first.batch })).status, 200);
    accepted.push(...first.uuids);

    const refuse = async (what: string, body: unknown, status: number, headers: Record<string, string> = {}, uuids: string[] = []) => {
      const r = await post(url, body, headers);
      assert.equal(r.status, status, `${what}: ${r.text}`);
      rejected.push(...uuids);
    };
    await refuse('invalid JSON', '{"api_key": "' + token + '", "batch": [{"event": "x", ', 400);
    await refuse('empty body', '', 400);
    await refuse('empty batch', { api_key: token, batch: [] }, 400);
    await refuse('batch is not an array', { api_key: token, batch: 'nope' }, 400);
    for (const [what, bad] of [
      ['missing distinct_id', { event: 'sys_bad', uuid: randomUUID() }],
      ['empty distinct_id', { event: 'sys_bad', distinct_id: '', uuid: randomUUID() }],
      ['empty event name', { event: '', distinct_id: 'x', uuid: randomUUID() }],
      ['invalid uuid', { event: 'sys_bad', distinct_id: 'x', uuid: 'not-a-uuid' }],
      ['an event that is not an object', 42],
    ] as const) {
      const ok = events(4, 'mixed');
      const batch = [...ok.batch.slice(0, 2), bad, ...ok.batch.slice(2)];
      await refuse(`one ${what} among valid events`, { api_key: token, batch }, 400, {}, ok.uuids);
    }
    const wrongToken = events(3, 'wrong_token');
    await refuse('unknown token', { api_key: 'phc_unknown_project_token_000000000000', batch: wrongToken.batch }, 401, {}, wrongToken.uuids);
    const noToken = events(3, 'no_token');
    await refuse('no token', { batch: noToken.batch }, 401, {}, noToken.uuids);
    await refuse('bad gzip', Buffer.from('definitely not gzip'), 400, { 'content-encoding': 'gzip' });
    const gzBad = events(3, 'gzip_bad');
    await refuse('gzip with a bad event', zlib.gzipSync(JSON.stringify({ api_key: token, batch: [...gzBad.batch, { event: 'x' }] })), 400,
      { 'content-encoding': 'gzip' }, gzBad.uuids);

    const big = events(200, 'oversized', { pad: 'x'.repeat(600) });
    const bigBody = JSON.stringify({ api_key: token, batch: big.batch });
    assert.ok(bigBody.length > limit);
    await refuse('over the body limit', bigBody, 413, {}, big.uuids);

    const gz = events(3, 'gzip');
    assert.equal((await post(url, zlib.gzipSync(JSON.stringify({ api_key: token, batch: gz.batch })), { 'content-encoding': 'gzip' })).status, 200);
    accepted.push(...gz.uuids);
    const last = events(5, 'valid');
    assert.equal((await post(url, { api_key: token, batch: last.batch })).status, 200);
    accepted.push(...last.uuids);

    // The outbox ships in order: once the last valid request is in Postgres, anything stored before it is too.
    await waitForEventsOnce(c.t, accepted);
    assert.equal((await eventCounts(c.t, rejected)).size, 0, 'no event of a rejected request');
    assert.equal(await totalEvents(c), accepted.length, 'only the accepted events');
  } finally {
    await c.close();
  }
});

test('a large batch the node accepts is delivered, and events after it are not held up', async () => {
  const c = await startCluster();
  try {
    const node = await c.startNode(c.tempDir()); // default body limit (20 MiB)
    const url = `${node.http.url}/batch/`;
    await waitReady(node.http.url);
    const token = c.t.projectKey;
    // ~6 MiB of valid events in one request: under the body limit, over a gRPC message's default 4 MiB.
    const big = events(60, 'large', { pad: 'y'.repeat(100 * 1024) });
    const r = await post(url, { api_key: token, batch: big.batch });
    assert.ok(r.status === 200 || r.status === 413, `accepted or refused whole: ${r.status} ${r.text}`);
    // One event too big for a batch of its own: the whole request is refused, even when gzip makes it small.
    const withHuge = events(4, 'huge');
    withHuge.batch[2]!.properties = { pad: 'z'.repeat(1536 * 1024) };
    const huge = await post(url, { api_key: token, batch: withHuge.batch });
    assert.equal(huge.status, 413, huge.text);
    assert.equal(huge.body.code, 'event_too_big');
    const gzHuge = events(1, 'huge_gzip', { pad: 'z'.repeat(5 * 1024 * 1024) });
    const small = zlib.gzipSync(JSON.stringify({ api_key: token, ...gzHuge.batch[0] }));
    assert.ok(small.length < 64 * 1024);
    assert.equal((await post(`${node.http.url}/i/v0/e/`, small, { 'content-encoding': 'gzip' })).status, 413);
    const after = events(5, 'after');
    assert.equal((await post(url, { api_key: token, batch: after.batch })).status, 200);
    await waitForEventsOnce(c.t, r.status === 200 ? [...big.uuids, ...after.uuids] : after.uuids, 30_000);
    if (r.status === 413) assert.equal((await eventCounts(c.t, big.uuids)).size, 0);
    assert.equal((await eventCounts(c.t, [...withHuge.uuids, ...gzHuge.uuids])).size, 0, 'nothing of the refused requests');
  } finally {
    await c.close();
  }
});

test('near its bound the outbox sheds requests with 503 outbox_backlog and Retry-After, at the bound it refuses them all; accepted events arrive once', async () => {
  const c = await startCluster();
  try {
    const node = await c.startNode(c.tempDir(), { maxOutboxBytes: 1024 * 1024 });
    const url = `${node.http.url}/batch/`;
    await waitReady(node.http.url);
    await c.stopGrpc();
    const accepted: string[] = [];
    const refused: string[] = [];
    let full = false;
    for (let i = 0; i < 60 && !full; i++) {
      const fillBefore = node.capture.outbox.fill;
      const e = events(10, 'fill', { pad: 'f'.repeat(15 * 1024) }); // ~150 KiB a request
      const r = await post(url, { api_key: c.t.projectKey, batch: e.batch });
      if (r.status === 200) accepted.push(...e.uuids);
      else {
        assert.equal(r.status, 503, r.text);
        const retryAfter = Number(r.headers.get('retry-after'));
        assert.ok(retryAfter >= 1 && retryAfter <= 30, `Retry-After ${r.headers.get('retry-after')}`);
        if (r.body.code === 'outbox_backlog') assert.ok(fillBefore >= 0.8, `shed at ${fillBefore} of the bound`);
        else {
          assert.equal(r.body.code, 'outbox_full');
          assert.equal(retryAfter, 30);
          full = true;
        }
        refused.push(...e.uuids);
      }
    }
    assert.ok(full, 'the outbox filled up');
    assert.ok(accepted.length > 0);
    const metrics = await (await fetch(`${node.http.url}/metrics`)).text();
    assert.match(metrics, /^switchyard_node_capture_outbox_limit_bytes 1048576$/m);
    const shed = Number(/^switchyard_node_capture_outbox_shed_total (\d+)$/m.exec(metrics)?.[1]);
    assert.equal(shed, refused.length / 10 - 1, 'every refusal but the last was a backlog shed');
    await c.startGrpc();
    await waitForEventsOnce(c.t, accepted);
    const more = events(5, 'after_full');
    await waitFor('outbox drained', () => node.capture.outbox.entries === 0, { timeoutMs: 30_000 });
    const r = await post(url, { api_key: c.t.projectKey, batch: more.batch });
    assert.equal(r.status, 200, r.text);
    await waitForEventsOnce(c.t, more.uuids);
    assert.equal((await eventCounts(c.t, refused)).size, 0);
    assert.equal(await totalEvents(c), accepted.length + more.uuids.length);
  } finally {
    await c.close();
  }
});
