/**
 * Slow and idle clients on the management port of a real control plane (small settings): a
 * client trickling headers (slowloris), one sending nothing, one trickling its body and an idle
 * keep-alive connection are each closed around their timeout; past the connection cap a new
 * connection is closed at once, and the port serves again once connections go. Times printed are
 * from a shared machine: noisy.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';

let t: TestControlPlane;
const HEADERS_MS = 500;
const REQUEST_MS = 1_000;
const KEEP_ALIVE_MS = 300;
const MAX_CONNECTIONS = 4;
/** Allowed lateness past a timeout: Node's check interval (a quarter of the headers timeout) plus a loaded machine's delays. */
const SLACK_MS = 1_500;

before(async () => {
  t = await startTestControlPlane({ apiHeadersTimeoutMs: HEADERS_MS, apiRequestTimeoutMs: REQUEST_MS, apiKeepAliveTimeoutMs: KEEP_ALIVE_MS, apiMaxConnections: MAX_CONNECTIONS });
});
after(async () => { await t?.close(); });

/** Opens a connection to the control plane; resolves once connected. */
function open(): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(new URL(t.baseUrl).port as unknown as number, '127.0.0.1');
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

/** Resolves with ms from now until `s` closes, and what the server sent. */
function closed(s: net.Socket): Promise<{ ms: number; received: string }> {
  const began = Date.now();
  let received = '';
  s.on('data', (d) => { received += d.toString('latin1'); });
  s.on('error', () => {});
  return new Promise((resolve) => s.once('close', () => resolve({ ms: Date.now() - began, received })));
}

test('a slowloris client (a header line every 100 ms) is closed at the headers timeout', async () => {
  const s = await open();
  const done = closed(s);
  s.write('GET /api/projects/ HTTP/1.1\r\nHost: localhost\r\n');
  const drip = setInterval(() => { if (!s.destroyed) s.write(`X-Slow-${Date.now()}: 1\r\n`); }, 100);
  const { ms, received } = await done;
  clearInterval(drip);
  console.log(`slowloris closed after ${ms} ms (headers timeout ${HEADERS_MS} ms): ${received.split('\r\n')[0] || '(nothing sent)'}`);
  assert.ok(ms >= HEADERS_MS - 50 && ms <= HEADERS_MS + SLACK_MS, `closed after ${ms} ms`);
});

test('a connection that sends nothing is closed at the headers timeout', async () => {
  const s = await open();
  const { ms } = await closed(s);
  console.log(`silent connection closed after ${ms} ms`);
  assert.ok(ms <= HEADERS_MS + SLACK_MS, `closed after ${ms} ms`);
});

test('a body trickled a byte every 100 ms is closed at the request timeout', async () => {
  const s = await open();
  const done = closed(s);
  s.write(`POST /api/projects/${t.projectId}/feature_flags/ HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.personalKey}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
  const drip = setInterval(() => { if (!s.destroyed) s.write(' '); }, 100);
  const { ms } = await done;
  clearInterval(drip);
  console.log(`slow body closed after ${ms} ms (request timeout ${REQUEST_MS} ms)`);
  assert.ok(ms >= REQUEST_MS - 50 && ms <= REQUEST_MS + SLACK_MS, `closed after ${ms} ms`);
});

test('an idle keep-alive connection is closed at the keep-alive timeout', async () => {
  const s = await open();
  const done = closed(s);
  s.write('GET /_health HTTP/1.1\r\nHost: localhost\r\n\r\n');
  const { ms, received } = await done;
  assert.match(received, /^HTTP\/1\.1 200/);
  assert.ok(ms <= KEEP_ALIVE_MS + SLACK_MS, `closed after ${ms} ms`);
});

test('past the connection cap a new connection is closed at once; the port serves again once connections go', async () => {
  const held = await Promise.all(Array.from({ length: MAX_CONNECTIONS }, () => open()));
  const heldClosed = held.map((s) => closed(s));
  // The server counts a connection once it accepts it; give it a moment to accept all of them.
  await new Promise((r) => setTimeout(r, 50));
  const extra = await open();
  const refused = closed(extra);
  extra.write('GET /_health HTTP/1.1\r\nHost: localhost\r\n\r\n');
  const { ms, received } = await refused;
  console.log(`connection past the cap closed after ${ms} ms`);
  assert.equal(received, '', 'nothing served past the cap');
  assert.ok(ms < HEADERS_MS, 'closed before any timeout could have closed it');
  for (const s of held) s.destroy();
  await Promise.all(heldClosed);
  await new Promise((r) => setTimeout(r, 50));
  const r = await t.request('GET', '/api/projects/');
  assert.equal(r.status, 200);
});
