/**
 * Probes of the evaluation node (DESIGN.md "Processes"): `GET /_health` answers 200 while the
 * process serves; `GET /_ready` answers 200 only once the store holds a complete snapshot
 * (`store.hasCompleteSnapshot()`), else 503; `GET /metrics` is the Prometheus text of metrics.ts.
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
    let ready = false;
    try { ready = ctx.store.hasCompleteSnapshot(); } catch { ready = false; }
    ex.send(ready ? 200 : 503, JSON.stringify({ status: ready ? 'ready' : 'waiting_for_snapshot', revision: safeRevision(ctx) }));
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
    }) + (ctx.continuity?.renderMetrics() ?? '');
    ex.send(200, text, undefined, 'text/plain; version=0.0.4');
  };
}

function safeRevision(ctx: NodeHttpContext): number {
  try { return ctx.store.revision(); } catch { return 0; }
}
