/**
 * Capture bodies are checked against their budget before they are parsed (capture/decode.ts,
 * src/json-budget.ts), on a real node (uWS HTTP, LMDB outbox, shipper) shipping to a real
 * control plane (gRPC Ingest, Postgres):
 *
 * - 6 M nested arrays (400), then a 1.5 M-key event (413) and a 600,000-event batch under the
 *   byte limit (413) at once, are refused after one pass over the text; the two at once stay
 *   under {@link TWO_AT_ONCE_RSS_CEILING_MB} of RSS growth, and a /flags request sent meanwhile
 *   is answered. Times and RSS growth are printed (noisy on a shared machine);
 * - a large legitimate batch (MAX_CAPTURE_EVENTS posthog-js-like events) is accepted and lands;
 * - an event with `"offset": 1e300` is dated now (no date holds it) and the whole batch lands;
 * - `/flags` refuses a body over MAX_BODY_MEMBERS (400) and answers one with 5,000 person
 *   properties.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { waitFor } from '../../support/wait.js';
import { request } from '../http/fixture.js';
import { createLogger } from '../../../src/log.js';
import { startNodeService, type NodeService } from '../../../src/eval-node/service.js';
import { MAX_BODY_MEMBERS, MAX_CAPTURE_EVENTS, MAX_CAPTURE_MEMBERS, MAX_PAYLOAD_DEPTH } from '../../../src/limits.js';

/**
 * Most the process's RSS may grow while two hostile ~20 MB capture bodies are refused at once:
 * each body's bytes and text on the node side, the test client's copies, and uWS buffers. Without
 * the budget, parsing two such bodies takes gigabytes.
 */
const TWO_AT_ONCE_RSS_CEILING_MB = 256;

let t: TestControlPlane;
let node: NodeService;
let dataDir: string;
let url: string;

before(async () => {
  t = await startTestControlPlane();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-body-budget-'));
  node = await startNodeService({ ...t.config, dataDir, flagsPort: 0, controlPlane: `127.0.0.1:${t.cp.grpc!.port}` }, createLogger('silent'));
  url = node.http.url;
  await waitFor('node ready', async () => (await request(`${url}/_ready`)).status === 200, { timeoutMs: 30_000, intervalMs: 50 });
});
after(async () => {
  await node.close();
  await t.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const mb = (bytes: number): number => Math.round(bytes / 1e6);

async function post(pathName: string, body: string): Promise<{ status: number; json: any; ms: number }> {
  const t0 = performance.now();
  const r = await request(url + pathName, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  return { status: r.status, json: r.json(), ms: Math.round(performance.now() - t0) };
}

async function storedEvents(uuids: string[]): Promise<Map<string, Date>> {
  const rows = await t.db.sql<{ uuid: string; timestamp: Date }[]>`
    SELECT uuid::text AS uuid, timestamp FROM events WHERE project_id = ${t.projectId} AND uuid::text = ANY(${uuids})`;
  return new Map(rows.map((r) => [r.uuid, r.timestamp]));
}

test('hostile capture bodies are refused after one pass; two at once stay under the RSS ceiling', async () => {
  const token = t.projectKey;
  const N = 6_000_000;
  const nested = '['.repeat(N) + ']'.repeat(N);
  // 1,500,000 distinct keys `k<block><000-999>`, each block of 1,000 joined from one template (a
  // string per key cost 0.7 s of CPU).
  const block = Array.from({ length: 1000 }, (_, j) => `"k#${String(j).padStart(3, '0')}":1`).join(',').split('#');
  const wide = `{"api_key":"${token}","event":"x","distinct_id":"d","properties":{${Array.from({ length: 1500 }, (_, b) => block.join(String(b))).join(',')}}}`;
  const event = '{"event":"e","distinct_id":"d"}';
  const events = `{"api_key":"${token}","batch":[${`${event},`.repeat(600_000 - 1)}${event}]}`;
  assert.ok(events.length < t.config.maxCaptureBodyBytes, 'the batch is under the byte limit');

  const deep = { name: '6 M nested arrays', body: nested, status: 400, detail: `failed to parse request: JSON nests deeper than ${MAX_PAYLOAD_DEPTH} levels` };
  const rss0 = process.memoryUsage().rss;
  const r = await post('/batch/', deep.body);
  assert.equal(r.status, deep.status, `${deep.name}: ${JSON.stringify(r.json)}`);
  assert.equal(r.json.detail, deep.detail, deep.name);
  console.log(`node capture, ${deep.name} (${mb(deep.body.length)} MB): ${r.status} in ${r.ms} ms, RSS +${mb(process.memoryUsage().rss - rss0)} MB`);

  // The two over the member and event budgets are sent at once (each is refused alike alone).
  const cases = [
    { name: '600,000-event batch', body: events, status: 413, detail: `payload batch holds more than ${MAX_CAPTURE_EVENTS} events.` },
    { name: '1.5 M-key event', body: wide, status: 413, detail: `payload JSON holds more than ${MAX_CAPTURE_MEMBERS} array elements and object members.` },
  ];
  const rss1 = process.memoryUsage().rss;
  let peak = rss1;
  const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 5);
  const hostile = Promise.all(cases.map((c) => post('/batch/', c.body)));
  // Another project's SDK meanwhile (an unknown token: answered 401 by the same thread).
  const flagsT0 = performance.now();
  const flags = await request(`${url}/flags?v=2`, { method: 'POST', body: JSON.stringify({ api_key: 'phc_someoneElse', distinct_id: 'u' }), headers: { 'content-type': 'application/json' } });
  const flagsMs = Math.round(performance.now() - flagsT0);
  const both = await hostile;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  for (const [i, c] of cases.entries()) {
    assert.equal(both[i]!.status, c.status, `${c.name}: ${JSON.stringify(both[i]!.json)}`);
    assert.equal(both[i]!.json.detail, c.detail, c.name);
  }
  assert.equal(flags.status, 401);
  const grew = mb(peak - rss1);
  console.log(`node capture, ${cases.map((c, i) => `${c.name} (${mb(c.body.length)} MB) ${both[i]!.status} in ${both[i]!.ms} ms`).join(', ')}, both at once; a /flags request meanwhile answered in ${flagsMs} ms; peak RSS +${grew} MB (ceiling ${TWO_AT_ONCE_RSS_CEILING_MB} MB; figures noisy on a shared machine)`);
  assert.ok(grew < TWO_AT_ONCE_RSS_CEILING_MB, `RSS grew ${grew} MB`);
});

test('a batch of MAX_CAPTURE_EVENTS posthog-js-like events is accepted and every event lands', async () => {
  const uuids: string[] = [];
  const batch = Array.from({ length: MAX_CAPTURE_EVENTS }, (_, i) => {
    const uuid = randomUUID();
    uuids.push(uuid);
    return {
      event: i % 10 === 0 ? '$pageview' : '$autocapture', uuid, distinct_id: `user-${i % 50}`, timestamp: new Date().toISOString(),
      properties: {
        $current_url: `https://example.com/page/${i}`, $host: 'example.com', $pathname: `/page/${i}`, $browser: 'Chrome', $os: 'Mac OS X',
        $device_type: 'Desktop', $screen_height: 1080, $screen_width: 1920, $lib: 'web', $lib_version: '1.200.0', $session_id: `s-${i % 50}`,
        $window_id: 'w', $referrer: '$direct', $event_type: 'click', $elements_chain: 'button.btn:text="Go"nth-child="1"',
        $active_feature_flags: ['a', 'b'], $feature_flag_payloads: {}, $set: { plan: 'free' },
      },
    };
  });
  const body = JSON.stringify({ api_key: t.projectKey, batch, sent_at: new Date().toISOString() });
  const r = await post('/batch/', body);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  console.log(`node capture, legal batch of ${MAX_CAPTURE_EVENTS} events (${mb(body.length)} MB): 200 in ${r.ms} ms`);
  // Poll a cheap count (this test's event names are its own), then check every uuid once: a
  // lookup of 10,000 uuids on each poll cost Postgres seconds of CPU while the batch landed.
  await waitFor(`${uuids.length} events in Postgres`, async () => {
    const [row] = await t.db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM events WHERE project_id = ${t.projectId} AND event IN ('$pageview', '$autocapture')`;
    return row!.n >= uuids.length;
  }, { timeoutMs: 240_000, intervalMs: 250 });
  assert.equal((await storedEvents(uuids)).size, uuids.length, 'every event of the batch, by its uuid');
});

test('an offset no date can hold dates its event now; the rest of the batch lands as sent', async () => {
  const [good, huge, negative, oneSecond] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  const before = Date.now();
  const r = await post('/batch/', JSON.stringify({
    api_key: t.projectKey, batch: [
      { event: 'offset_case', distinct_id: 'o', uuid: good, timestamp: '2024-05-01T12:00:00.000Z' },
      { event: 'offset_case', distinct_id: 'o', uuid: huge, offset: 1e300 },
      { event: 'offset_case', distinct_id: 'o', uuid: negative, offset: -1e300 },
      { event: 'offset_case', distinct_id: 'o', uuid: oneSecond, offset: 1000 },
    ],
  }));
  const after = Date.now();
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const stored = await waitFor('the offset batch in Postgres', async () => {
    const m = await storedEvents([good, huge, negative, oneSecond]);
    return m.size === 4 ? m : null;
  }, { timeoutMs: 60_000, intervalMs: 100 });
  assert.equal(stored.get(good)!.toISOString(), '2024-05-01T12:00:00.000Z');
  for (const u of [huge, negative]) {
    const ms = stored.get(u)!.getTime();
    assert.ok(ms >= before && ms <= after, `dated now, got ${stored.get(u)!.toISOString()}`);
  }
  const ms = stored.get(oneSecond)!.getTime();
  assert.ok(ms >= before - 1000 && ms <= after - 1000, `one second before now, got ${stored.get(oneSecond)!.toISOString()}`);
});

test('/flags: a body over MAX_BODY_MEMBERS → 400 before parsing; 5,000 person properties are answered', async () => {
  const props = (n: number): Record<string, number> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, i]));
  // Under the 1 MiB byte limit: a long array of tiny members.
  const over = await post('/flags?v=2', JSON.stringify({ api_key: t.projectKey, distinct_id: 'u', person_properties: { ids: new Array(MAX_BODY_MEMBERS).fill(0) } }));
  assert.equal(over.status, 400, JSON.stringify(over.json));
  assert.deepEqual(over.json, {
    type: 'invalid_request', code: 'request_decoding_error', attr: null,
    detail: `Failed to decode request: JSON holds more than ${MAX_BODY_MEMBERS} array elements and object members`,
  });
  console.log(`node /flags, ${MAX_BODY_MEMBERS + 4} members: 400 in ${over.ms} ms`);
  const ok = await post('/flags?v=2', JSON.stringify({ api_key: t.projectKey, distinct_id: 'u', person_properties: props(5_000) }));
  assert.equal(ok.status, 200, JSON.stringify(ok.json));
  assert.equal(typeof ok.json.flags, 'object');
});
