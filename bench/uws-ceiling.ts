/**
 * The bare uWebSockets.js endpoint of the benches' same-run ceiling: {@link ceilingHandler}
 * answers every POST with a fixed 2,048-byte JSON body. Run as a process
 * (`node dist/bench/uws-ceiling.js <port> <threads> [bytes]`, bench/flags-io.ts) it serves a
 * fixed JSON body of `bytes` bytes (default 2,048; the io mode passes the node's mean answer
 * size, so both put the same bytes through the kernel) from `threads` worker threads on `port`
 * (not 0: SO_REUSEPORT groups need a fixed port) and prints `ready`, so its CPU can be read like
 * a node's; SIGKILL stops it.
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import uWS from 'uWebSockets.js';

/** A JSON body of exactly `bytes` bytes (≥ 28): '{"featureFlags":{},"pad":""}' is 28 bytes, padded. */
function fixedBody(bytes: number): Buffer {
  return Buffer.from(JSON.stringify({ featureFlags: {}, pad: 'x'.repeat(Math.max(0, bytes - 28)) }));
}

/** The ceiling's route answering `body`: reads the request body, answers in one corked write. */
export function ceilingHandlerOf(body: Buffer): (res: uWS.HttpResponse) => void {
  return (res) => {
    res.onAborted(() => {});
    res.onData((_chunk, isLast) => {
      if (isLast) res.cork(() => { res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').end(body); });
    });
  };
}

/** The ceiling's route with the 2,048-byte body. */
export const ceilingHandler = ceilingHandlerOf(fixedBody(2048));

const runDirectly = process.argv[1] === fileURLToPath(import.meta.url);

if (!isMainThread && workerData?.ceiling === true) {
  const { port, bytes } = workerData as { port: number; bytes: number };
  uWS.App().post('/*', ceilingHandlerOf(fixedBody(bytes))).listen('127.0.0.1', port, (s) => parentPort!.postMessage(s ? 'ok' : 'failed'));
} else if (isMainThread && runDirectly) {
  const port = Number(process.argv[2]);
  const threads = Number(process.argv[3] ?? 1);
  const bytes = Number(process.argv[4] ?? 2048);
  let ready = 0;
  for (let i = 0; i < threads; i++) {
    const w = new Worker(fileURLToPath(import.meta.url), { workerData: { ceiling: true, port, bytes } });
    w.on('message', (m) => {
      if (m !== 'ok') { process.stderr.write(`ceiling: cannot listen on ${port}\n`); process.exit(1); }
      if (++ready === threads) process.stdout.write('ready\n');
    });
  }
}
