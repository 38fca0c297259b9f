/**
 * One IO thread of an evaluation node (src/eval-node/http/io-threads.ts): a uWebSockets.js app
 * with every route of the node, listening on the node's port beside the other IO threads (the
 * kernel spreads connections over them: SO_REUSEPORT). It reads the node's LMDB store read-only;
 * what must happen once per node goes to the main thread:
 *
 * - capture and continuity appends: events are packed here (Outbox.pack) and the bytes are
 *   transferred to the main thread, which appends them durably before the request is answered;
 * - /flags usage counts: pushed every {@link USAGE_PUSH_MS} and when closing;
 * - /metrics: rendered by the main thread over every thread's request metrics;
 * - store changes: the main thread relays each applied change (the thread's compiled projects
 *   are swapped like on the main thread);
 * - the feed rate limit: one table in shared memory (SharedTokenBuckets).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { collectGarbage } from '../src/eval-node/memory/gc.js';
import { USAGE_PUSH_MS, type IoThreadInit } from '../src/eval-node/http/io-thread-init.js';
import { createLogger } from '../src/log.js';
import { openNodeStore } from '../src/eval-node/store/lmdb.js';
import { startNodeHttp, type NodeHttp } from '../src/eval-node/http/server.js';
import { SharedTokenBuckets } from '../src/eval-node/http/rate-limit.js';
import { ThreadRpc, type WireError } from '../src/eval-node/http/thread-rpc.js';
import { handleCapture } from '../src/eval-node/capture/handler.js';
import { Outbox, OutboxFullError } from '../src/eval-node/capture/outbox.js';
import type { CapturedEvent } from '../src/contract/events.js';
import type { ProbeAnswer } from '../src/eval-node/http/probes.js';

const init = workerData as IoThreadInit;
const rpc = new ThreadRpc(parentPort!);
const log = createLogger(init.config.logLevel).child({ io_thread: init.index });
const store = openNodeStore(init.storePath, { readOnly: true });
let httpRef: NodeHttp | null = null;
// An uncaught error ends this thread, but never with uWS sockets open (that aborts the whole
// process): close them, then exit 1 so the main thread starts a replacement.
const fail = (err: unknown): void => {
  log.error({ err }, 'IO thread failed; closing its sockets');
  void Promise.resolve(httpRef?.close()).catch(() => undefined).finally(() => process.exit(1));
};
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);
// Listening for store changes before serving anything: the HTTP layer subscribes to the store.
rpc.onNotice('applied', (m) => store.relayApplied(m.revision as number, new Set(m.projectIds as (number | null)[])));

/** Appends through the main thread's outbox; `shed` for client requests (capture/outbox.ts). */
async function append(events: CapturedEvent[], shed = false): Promise<void> {
  const packed = Outbox.pack(events);
  const bytes = packed.buffer.slice(packed.byteOffset, packed.byteOffset + packed.byteLength) as ArrayBuffer;
  try {
    await rpc.call(shed ? 'appendShed' : 'append', bytes, [bytes]);
  } catch (e) {
    const w = e as WireError;
    if (w.name === 'OutboxFullError') throw new OutboxFullError(Number(w.data?.maxBytes), Number(w.data?.retryAfterS), w.data?.backlog === true, w.data?.stopping === true);
    throw new Error(w.message);
  }
}

const http = await startNodeHttp({
  config: { ...init.config, evalThreads: 0 },
  log,
  store,
  port: init.port,
  geoipBytes: init.geoipBytes,
  capture: init.withCapture ? (p, q, h, b) => handleCapture(p, q, h, b, {
    projectIdForToken: (token) => store.projectByToken(token)?.id ?? null,
    ready: () => store.hasCompleteSnapshot(),
    append: (events) => append(events, true),
  }, Date.now(), init.config.maxCaptureBodyBytes) : undefined,
  captureAppend: init.withCapture ? append : undefined,
  ioThread: {
    index: init.index,
    feedLimiter: new SharedTokenBuckets(init.limiter, init.config.definitionsRatePerMinute, 60_000),
    renderMetrics: () => rpc.call<ProbeAnswer>('metrics'),
  },
});

httpRef = http;
if (init.testHooks) rpc.serve('test:crash', () => { setTimeout(() => { throw new Error('crash injected by a test'); }, 0); return true; });

const pushUsage = (): void => {
  const counts = http.usage.takeUsage();
  if (counts.size > 0) rpc.notify('usage', { counts: [...counts] });
};
const usageTimer = setInterval(pushUsage, USAGE_PUSH_MS);

rpc.serve('metricsJson', async () => ({ metrics: await http.metrics.requestMetricsJson(), continuity: http.continuity?.counters ?? null }));
rpc.serve('collectGarbage', () => collectGarbage());
rpc.serve('close', async () => {
  clearInterval(usageTimer);
  await http.close();
  pushUsage();
  await store.close();
  // End the thread once the reply is posted (terminate() from outside, with uWS sockets still
  // registered in this thread's loop, would abort the process).
  setImmediate(() => process.exit(0));
  return true;
});
rpc.notify('listening', { port: http.port });
