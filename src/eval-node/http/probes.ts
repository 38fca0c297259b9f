/**
 * Probes of the evaluation node (DESIGN.md "Processes"): `GET /_health` answers 200 while the
 * process serves; `GET /_ready` answers 200 only once the store holds a complete snapshot
 * (`store.hasCompleteSnapshot()`) and no read of it has failed to decode (`store.readErrors()`,
 * A damaged store must not look ready), else 503; `GET /metrics` is the
 * Prometheus text of metrics.ts plus the store's read errors. The answers are built by
 * `healthProbe`/`readyProbe`/`metricsProbe` so the node:http probe listener (probe-server.ts)
 * serves the same ones.
 *
 * A stopping process drains (docs/operations.md "Stopping and upgrading"): after
 * {@link markDraining}, `/_ready` answers 503 `draining` whatever the store, while every other
 * route keeps serving. The flag lives in one SharedArrayBuffer made by the main thread when this
 * module loads and handed to every worker thread it starts later through worker_threads'
 * environment data (shared, not copied), so every IO thread sees the main thread's mark.
 */
import { getEnvironmentData, isMainThread, setEnvironmentData } from 'node:worker_threads';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { NodeHttpContext, ProbeAnswer } from './context.js';
import { Exchange } from './reply.js';

export type { ProbeAnswer };

/** `/_health`: 200 while the process serves. */
export function healthProbe(): ProbeAnswer {
  return { status: 200, body: '{"status":"ok"}', contentType: 'application/json' };
}

/** worker_threads environment-data key of the draining flag. */
const DRAINING_KEY = 'switchyard.node.draining';

/** The process-wide draining flag (one Int32: 0 serving, 1 draining); see the module doc. */
const drainingFlag: Int32Array = (() => {
  let buf = getEnvironmentData(DRAINING_KEY) as SharedArrayBuffer | undefined;
  if (!(buf instanceof SharedArrayBuffer)) {
    buf = new SharedArrayBuffer(4);
    if (isMainThread) setEnvironmentData(DRAINING_KEY, buf);
  }
  return new Int32Array(buf);
})();

/** Marks this process as draining: `/_ready` answers 503 `draining` from now on, in every thread. */
export function markDraining(): void {
  Atomics.store(drainingFlag, 0, 1);
}

/** True once {@link markDraining} was called in this process. */
export function isDraining(): boolean {
  return Atomics.load(drainingFlag, 0) === 1;
}

/** `/_ready`: 200 `ready`, else 503 `draining`, `waiting_for_snapshot` or `store_damaged`; with the store's revision. */
export function readyProbe(ctx: NodeHttpContext): ProbeAnswer {
  let status = 'waiting_for_snapshot';
  try {
    if (isDraining()) status = 'draining';
    else if (ctx.store.readErrors() > 0) status = 'store_damaged';
    else if (ctx.store.hasCompleteSnapshot()) status = 'ready';
  } catch { status = 'store_damaged'; }
  return { status: status === 'ready' ? 200 : 503, body: JSON.stringify({ status, revision: safeRevision(ctx) }), contentType: 'application/json' };
}

/** `/metrics`: Prometheus text (version 0.0.4). */
export async function metricsProbe(ctx: NodeHttpContext): Promise<ProbeAnswer> {
  if (ctx.renderMetrics) return ctx.renderMetrics();
  const own = await ctx.metrics.render({
    revision: () => safeRevision(ctx),
    sync: ctx.syncState,
    poolQueueSize: () => ctx.evaluator.queueSize(),
    poolMode: ctx.evaluator.mode,
    storage: () => ({ store: ctx.store.storage(), outbox: ctx.outboxStorage?.() }),
  });
  const text = (own.endsWith('\n') ? own : `${own}\n`) + (ctx.continuity?.renderMetrics() ?? '') + storeMetrics(ctx);
  return { status: 200, body: text, contentType: 'text/plain; version=0.0.4' };
}

function send(ex: Exchange, a: ProbeAnswer): void {
  ex.send(a.status, a.body, undefined, a.contentType);
}

/** `GET /_health`. */
export function healthHandler(ctx: NodeHttpContext): (res: HttpResponse, req: HttpRequest) => void {
  return (res) => send(new Exchange(res, ctx.metrics, 'health', ''), healthProbe());
}

/** `GET /_ready`. */
export function readyHandler(ctx: NodeHttpContext): (res: HttpResponse, req: HttpRequest) => void {
  return (res) => send(new Exchange(res, ctx.metrics, 'ready', ''), readyProbe(ctx));
}

/** `GET /metrics`. */
export function metricsHandler(ctx: NodeHttpContext): (res: HttpResponse, req: HttpRequest) => void {
  return (res) => {
    const ex = new Exchange(res, ctx.metrics, 'metrics', '');
    metricsProbe(ctx).then((a) => send(ex, a), () => send(ex, { status: 500, body: '', contentType: 'text/plain' }));
  };
}

/** `switchyard_node_store_read_errors_total` (Prometheus text) of `store`. */
export function storeMetrics(ctx: Pick<NodeHttpContext, 'store'>): string {
  let n = 0;
  try { n = ctx.store.readErrors(); } catch { n = 0; }
  return '# HELP switchyard_node_store_read_errors_total Store reads that failed to decode (damaged pages); the node is not ready while above 0.\n'
    + `# TYPE switchyard_node_store_read_errors_total counter\nswitchyard_node_store_read_errors_total ${n}\n`;
}

function safeRevision(ctx: NodeHttpContext): number {
  try { return ctx.store.revision(); } catch { return 0; }
}
