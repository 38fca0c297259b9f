/**
 * A project's share of an IO thread's evaluation time under contention
 * (src/eval-node/http/eval-share.ts): the counting rules on a stepped clock, then a real node
 * where one project's `/flags` requests each run to the evaluation budget (a backtracking regex in
 * 100 condition groups) while another project keeps asking: the heavy project is answered 429
 * `throttled` with `Retry-After` for part of the time, the other project never is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BUSY_FRACTION, EvaluationShare, RECENT_MS, WINDOW_MS } from '../../../src/eval-node/http/eval-share.js';
import { Worker } from 'node:worker_threads';
import { flag, OTHER_ORG_TOKEN, postFlags, PROJECT_TOKEN, startTestNode, worldChanges, type Answer } from './fixture.js';

/** A share on a clock the test moves. */
function stepped(percent: number) {
  let t = 1_000;
  const share = new EvaluationShare(percent, () => t);
  return { share, advance(ms: number) { t += ms; } };
}

/** `project` evaluates for `ms` (admitted first); returns admit's answer. */
function evaluate(c: ReturnType<typeof stepped>, project: number, ms: number): number {
  const wait = c.share.admit(project);
  if (wait === 0) { c.advance(ms); c.share.record(project, ms); }
  return wait;
}

test('a project alone on the thread is never refused, however much it evaluates', () => {
  const c = stepped(50);
  for (let i = 0; i < 100; i++) assert.equal(evaluate(c, 1, 50), 0, `request ${i}`);
});

test('past its share of a busy window, a project is refused until the window ends; the other is not', () => {
  const c = stepped(50);
  assert.equal(evaluate(c, 2, 1), 0); // B asks in this window
  let refused = 0;
  let wait = 0;
  for (let i = 0; i < 10 && refused === 0; i++) {
    wait = evaluate(c, 1, 50);
    if (wait > 0) refused = i;
  }
  // Refused once it has used half of the window: after 3 requests of 50 ms (150 ms ≥ 125 ms).
  assert.equal(refused, 3);
  assert.equal(wait, WINDOW_MS - 151);
  assert.equal(c.share.admit(2), 0, 'the other project is admitted');
  c.advance(wait);
  assert.equal(c.share.admit(1), 0, 'a new window admits it again');
});

test('a thread with time to spare applies no share', () => {
  const c = stepped(50);
  assert.equal(evaluate(c, 2, 1), 0);
  assert.equal(evaluate(c, 1, 130), 0);
  c.advance(WINDOW_MS - 140); // idle: busy 131 ms of 240 < 80 %
  assert.ok(131 < (WINDOW_MS - 10) * BUSY_FRACTION);
  assert.equal(c.share.admit(1), 0);
});

test('another project counts for a second after it last asked', () => {
  const c = stepped(50);
  assert.equal(evaluate(c, 2, 1), 0);
  const waits: number[] = [];
  for (let i = 0; i < 40; i++) waits.push(evaluate(c, 1, 50)); // refused waits take no time: advance past them
  const refusedAt = (from: number) => waits.slice(from).findIndex((w) => w > 0);
  assert.ok(refusedAt(0) >= 0, 'refused while the other project is recent');
  // Keep the heavy project busy past RECENT_MS after the other project's ask: never refused again.
  for (let i = 0; i < 60; i++) { const w = evaluate(c, 1, 50); if (w > 0) c.advance(w); }
  const late: number[] = [];
  for (let i = 0; i < 20; i++) late.push(evaluate(c, 1, 50));
  assert.deepEqual(late.filter((w) => w > 0), [], 'alone again after RECENT_MS');
  assert.ok(RECENT_MS < 60 * 50);
});

test('a share of 100 % never refuses', () => {
  const c = stepped(100);
  assert.equal(evaluate(c, 2, 1), 0);
  for (let i = 0; i < 20; i++) assert.equal(evaluate(c, 1, 50), 0);
});

test('on a node, a project running every request to the budget is throttled while another project keeps its answers', async () => {
  const redos = '^(?=(a+)+$)'; // catastrophic for a backtracking engine: each search runs to its limit
  // Each group's pattern differs (an alternative that never matches): identical conditions are tested once per request.
  const heavy = flag('heavy', { groups: Array.from({ length: 100 }, (_, i) => ({ properties: [{ key: 'email', type: 'person', operator: 'regex', value: `${redos}|^q${i}$` }], rollout_percentage: 100 })) });
  const node = await startTestNode({ changes: worldChanges([heavy]) });
  try {
    // The heavy project sends from another thread (the node runs on this one): 8 connections, each
    // request as soon as the previous answer, until the other project has had STOP_AFTER answers
    // since the heavy one was first refused (`shared`: [refusals, stop]), or for 2 s at most.
    const STOP_AFTER = 20;
    const shared = new Int32Array(new SharedArrayBuffer(8));
    const attacker = new Worker(`
      const http = require('node:http');
      const { workerData, parentPort } = require('node:worker_threads');
      const body = JSON.stringify(workerData.body);
      const shared = workerData.shared;
      const statuses = []; const retryAfter = []; const types = [];
      const end = Date.now() + 2000;
      const one = () => new Promise((resolve) => {
        const req = http.request(workerData.url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
          let text = ''; res.on('data', (c) => { text += c; });
          res.on('end', () => { statuses.push(res.statusCode); if (res.statusCode === 429) { Atomics.add(shared, 0, 1); retryAfter.push(res.headers['retry-after']); try { types.push(JSON.parse(text).type); } catch { types.push(text); } } resolve(); });
        });
        req.on('error', () => { statuses.push(0); resolve(); });
        req.end(body);
      });
      const lane = async () => { while (Date.now() < end && Atomics.load(shared, 1) === 0) await one(); };
      Promise.all(Array.from({ length: 8 }, lane)).then(() => parentPort.postMessage({ statuses, retryAfter, types }));
    `, { eval: true, workerData: { shared, url: `${node.url}/flags?v=2`, body: { token: PROJECT_TOKEN, distinct_id: 'a', person_properties: { email: `${'a'.repeat(32)}!` } } } });
    let attacking = true;
    const report = new Promise<{ statuses: number[]; retryAfter: string[]; types: string[] }>((resolve, reject) => {
      attacker.once('message', (m) => { attacking = false; resolve(m as never); });
      attacker.once('error', reject);
    });
    const b: Answer[] = [];
    let whileRefused = 0; // the other project's answers since the heavy one was first refused
    while (attacking) {
      const refused = Atomics.load(shared, 0) > 0;
      b.push(await postFlags(node, { token: OTHER_ORG_TOKEN, distinct_id: `b-${b.length}` }));
      if (refused && ++whileRefused >= STOP_AFTER) Atomics.store(shared, 1, 1);
    }
    const a = await report;
    await attacker.terminate();
    assert.ok(a.statuses.includes(429), `statuses of the heavy project: ${a.statuses.join(',')}`);
    assert.ok(a.statuses.every((s) => s === 200 || s === 429), a.statuses.join(','));
    assert.ok(a.types.every((t) => t === 'throttled_error'), a.types.join(','));
    assert.ok(a.retryAfter.every((r) => Number(r) >= 1), a.retryAfter.join(','));
    assert.ok(whileRefused > 0, 'the other project asked while the heavy one was refused');
    assert.deepEqual(b.filter((r) => r.status !== 200).map((r) => r.status), [], 'the other project is never refused');
  } finally {
    await node.close();
  }
});
