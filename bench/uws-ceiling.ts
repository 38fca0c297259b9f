/**
 * A bare uWebSockets.js endpoint for the benches' same-run ceiling, as its own process (so its
 * CPU can be read like a node's): `node dist/bench/uws-ceiling.js <port> <threads>` answers every
 * POST with a fixed 2,048-byte JSON body from `threads` worker threads on `port` (which must not
 * be 0: SO_REUSEPORT groups need a fixed port), then prints `ready` on stdout. Stops with SIGTERM.
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import uWS from 'uWebSockets.js';

/** '{"featureFlags":{},"pad":""}' is 28 bytes: padded to exactly 2,048. */
const FIXED = Buffer.from(JSON.stringify({ featureFlags: {}, pad: 'x'.repeat(2048 - 28) }));

function serve(port: number): void {
  const app = uWS.App();
  app.post('/*', (res) => {
    res.onAborted(() => {});
    res.onData((_chunk, isLast) => {
      if (isLast) res.cork(() => { res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').end(FIXED); });
    });
  });
  app.listen('127.0.0.1', port, (s) => parentPort!.postMessage(s ? 'ok' : 'failed'));
}

if (isMainThread) {
  const port = Number(process.argv[2]);
  const threads = Number(process.argv[3] ?? 1);
  let ready = 0;
  for (let i = 0; i < threads; i++) {
    const w = new Worker(fileURLToPath(import.meta.url), { workerData: { port } });
    w.on('message', (m) => {
      if (m !== 'ok') { process.stderr.write(`ceiling: cannot listen on ${port}\n`); process.exit(1); }
      if (++ready === threads) process.stdout.write('ready\n');
    });
  }
  process.on('SIGTERM', () => process.exit(0));
} else {
  serve((workerData as { port: number }).port);
}
