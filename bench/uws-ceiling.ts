/**
 * The bare uWebSockets.js endpoint of the benches' same-run ceiling: {@link ceilingHandler}
 * answers every POST with a fixed 2,048-byte JSON body. Run as a process
 * (`node dist/bench/uws-ceiling.js <port> <threads>`, bench/flags-io.ts) it serves it from
 * `threads` worker threads on `port` (not 0: SO_REUSEPORT groups need a fixed port) and prints
 * `ready`, so its CPU can be read like a node's; SIGKILL stops it.
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import uWS from 'uWebSockets.js';

/** '{"featureFlags":{},"pad":""}' is 28 bytes: padded to exactly 2,048. */
const FIXED = Buffer.from(JSON.stringify({ featureFlags: {}, pad: 'x'.repeat(2048 - 28) }));

/** The ceiling's route: reads the body, answers {@link FIXED} in one corked write. */
export function ceilingHandler(res: uWS.HttpResponse): void {
  res.onAborted(() => {});
  res.onData((_chunk, isLast) => {
    if (isLast) res.cork(() => { res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').end(FIXED); });
  });
}

const runDirectly = process.argv[1] === fileURLToPath(import.meta.url);

if (!isMainThread && workerData?.ceiling === true) {
  uWS.App().post('/*', ceilingHandler).listen('127.0.0.1', (workerData as { port: number }).port, (s) => parentPort!.postMessage(s ? 'ok' : 'failed'));
} else if (isMainThread && runDirectly) {
  const port = Number(process.argv[2]);
  const threads = Number(process.argv[3] ?? 1);
  let ready = 0;
  for (let i = 0; i < threads; i++) {
    const w = new Worker(fileURLToPath(import.meta.url), { workerData: { ceiling: true, port } });
    w.on('message', (m) => {
      if (m !== 'ok') { process.stderr.write(`ceiling: cannot listen on ${port}\n`); process.exit(1); }
      if (++ready === threads) process.stdout.write('ready\n');
    });
  }
}
