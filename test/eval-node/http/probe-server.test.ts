/**
 * HAProxy's default health check (`OPTIONS / HTTP/1.0`, or `GET /_ready HTTP/1.0`
 * without Host) gets no answer from uWebSockets.js, so the node offers a node:http probe
 * listener (`SWITCHYARD_PROBE_PORT`) with the same /_health, /_ready and /metrics answers.
 * Real node store, real uWS server, raw TCP requests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTestNode } from './fixture.js';

/** Sends `raw` on a new connection; resolves with what came back within `ms` (then closes). */
function exchange(port: number, raw: string, ms = 1_500): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const s = net.connect(port, '127.0.0.1', () => s.write(raw));
    const timer = setTimeout(() => { s.destroy(); resolve(got); }, ms);
    s.on('data', (d) => { got += String(d); });
    s.on('close', () => { clearTimeout(timer); resolve(got); });
    s.on('error', () => { clearTimeout(timer); resolve(got); });
  });
}

const statusOf = (answer: string): number => Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0);

test('HTTP/1.0 and Host-less probes are answered on the probe port, with the flags port\'s answers', async () => {
  const node = await startTestNode({ config: { probePort: 0 } });
  const empty = await startTestNode({ snapshot: false, config: { probePort: 0 } });
  try {
    const port = node.http.probePort!;
    assert.ok(port > 0);
    assert.notEqual(port, node.http.port);
    const h10 = await exchange(port, 'GET /_health HTTP/1.0\r\n\r\n');
    assert.equal(statusOf(h10), 200, h10);
    assert.ok(h10.endsWith('{"status":"ok"}'));
    const ready = await exchange(port, 'GET /_ready HTTP/1.0\r\n\r\n');
    assert.equal(statusOf(ready), 200, ready);
    assert.match(ready, /"status":"ready","revision":10/);
    const hostless = await exchange(port, 'GET /_ready HTTP/1.1\r\nConnection: close\r\n\r\n');
    assert.equal(statusOf(hostless), 200, hostless);
    const metrics = await exchange(port, 'GET /metrics HTTP/1.0\r\n\r\n');
    assert.match(metrics, /switchyard_node_revision 10/);
    assert.match(metrics, /text\/plain; version=0\.0\.4/);
    // HAProxy's default `option httpchk` is `OPTIONS / HTTP/1.0`: any answer below 500 passes it.
    const haproxy = await exchange(port, 'OPTIONS / HTTP/1.0\r\n\r\n');
    assert.ok(statusOf(haproxy) >= 400 && statusOf(haproxy) < 500, haproxy);
    const head = await exchange(port, 'HEAD /_ready HTTP/1.0\r\n\r\n');
    assert.equal(statusOf(head), 200);
    assert.ok(head.endsWith('\r\n\r\n'), 'HEAD has no body');
    const post = await exchange(port, 'POST /_ready HTTP/1.0\r\nContent-Length: 0\r\n\r\n');
    assert.equal(statusOf(post), 405);
    assert.match(post, /allow: GET, HEAD/i);

    // Not ready is 503 here too.
    const notReady = await exchange(empty.http.probePort!, 'GET /_ready HTTP/1.0\r\n\r\n');
    assert.equal(statusOf(notReady), 503, notReady);
    assert.match(notReady, /waiting_for_snapshot/);

    // The same probe on the flags port: answered over HTTP/1.1 with Host, and (why the probe
    // port exists) not at all over HTTP/1.0 by this uWebSockets.js.
    const onFlagsPort = await exchange(node.http.port, `GET /_ready HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    assert.equal(statusOf(onFlagsPort), 200, onFlagsPort);
  } finally {
    await node.close();
    await empty.close();
  }
});

test('the probe listener is off unless configured', async () => {
  const node = await startTestNode();
  try {
    assert.equal(node.http.probePort, null);
  } finally {
    await node.close();
  }
});
