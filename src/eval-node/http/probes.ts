/**
 * Probes of the evaluation node (DESIGN.md "Processes"): `GET /_health` answers 200 while the
 * process serves; `GET /_ready` answers 200 only once the store holds a complete snapshot
 * (`store.hasCompleteSnapshot()`) and no read of it has failed to decode (`store.readErrors()`,
 * issue 8 item 6: a damaged store must not look ready), else 503; `GET /metrics` is the
 * Prometheus text of metrics.ts plus the store's read errors.
 */
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { NodeHttpContext } from './context.js';
import { Exchange } from './reply.js';

/** `GET /_health`. */
export function healthHandler(ctx: NodeHttpContext): (res: HttpResponse, req: HttpRequest) => void {
  return (res) => new Exchange(res, ctx.metrics, 'health', '').send(200, '{"status":"ok"}');
}

/** `GET /_ready`. */
export function readyHandler(ctx: NodeHttpContext): (res: HttpResponse, req: HttpRequest) => void {
  return (res) => {
    const ex = new Exchange(res, ctx.metrics, 'ready', '');
    let status = 'waiting_for_snapshot';
    try {
      if (ctx.store.readErrors() > 0) status = 'store_damaged';
      else if (ctx.store.hasCompleteSnapshot()) status = 'ready';
    } catch { status = 'store_damaged'; }
    ex.send(status === 'ready' ? 200 : 503, JSON.stringify({ status, revision: safeRevision(ctx) }));
  };
}

/** `GET /metrics`. */
export function metricsHandler(ctx: NodeHttpContext): (res: HttpResponse, req: HttpRequest) => void {
  return (res) => {
    const ex = new Exchange(res, ctx.metrics, 'metrics', '');
    const text = ctx.metrics.render({
      revision: () => safeRevision(ctx),
      sync: ctx.syncState,
      poolQueueSize: () => ctx.evaluator.queueSize(),
      poolMode: ctx.evaluator.mode,
    }) + (ctx.continuity?.renderMetrics() ?? '') + storeMetrics(ctx);
    ex.send(200, text, undefined, 'text/plain; version=0.0.4');
  };
}

/** `switchyard_node_store_read_errors_total` (Prometheus text). */
function storeMetrics(ctx: NodeHttpContext): string {
  let n = 0;
  try { n = ctx.store.readErrors(); } catch { n = 0; }
  return '# HELP switchyard_node_store_read_errors_total Store reads that failed to decode (damaged pages); the node is not ready while above 0.\n'
    + `# TYPE switchyard_node_store_read_errors_total counter\nswitchyard_node_store_read_errors_total ${n}\n`;
}

function safeRevision(ctx: NodeHttpContext): number {
  try { return ctx.store.revision(); } catch { return 0; }
}
