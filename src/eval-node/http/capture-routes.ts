/**
 * Capture endpoints on the node's uWS server (spec/API.md §4.5; DESIGN.md "Evaluation node":
 * `/i/v0/e/`, `/e/`, `/capture/`, `/batch/`, and legacy `/track/`, with or without the trailing
 * slash). The HTTP layer only reads the request (body size-limited → 413) and writes the answer;
 * decoding, validation and the durable outbox belong to the capture module, plugged in as a
 * {@link CaptureHandler} (`startNodeHttp({capture})`, e.g. a closure over
 * src/eval-node/capture/handler.ts `handleCapture` and the node's outbox). Without a handler the
 * paths answer 404 like any unknown path.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { errors } from '../../errors.js';
import type { NodeHttpContext } from './context.js';
import { Exchange, readBody } from './reply.js';
import { preflightHandler } from './cors.js';

/** Handles one capture request; never rejects for client errors (unexpected failures → 500). */
export type CaptureHandler = (path: string, query: string, headers: IncomingHttpHeaders, body: Buffer) => Promise<{ status: number; body: unknown; headers?: [string, string][] }>;

/**
 * Capture paths (each also registered with a trailing slash): PostHog's, including legacy
 * `/engage` (person updates) and `/s` (session recording snapshots, stored as events).
 */
export const CAPTURE_ROUTE_PATHS: readonly string[] = Object.freeze(['/i/v0/e', '/e', '/capture', '/batch', '/track', '/engage', '/s']);

/** Registers the capture routes on `app` when `handler` is given. */
export function registerCaptureRoutes(app: TemplatedApp, ctx: NodeHttpContext, handler: CaptureHandler | undefined): void {
  if (handler === undefined) return;
  const route = captureRoute(ctx, handler);
  const preflight = preflightHandler(ctx, 'capture');
  for (const p of CAPTURE_ROUTE_PATHS) {
    for (const path of [p, `${p}/`]) {
      app.post(path, route);
      app.get(path, route);
      app.options(path, preflight);
    }
  }
}

function captureRoute(ctx: NodeHttpContext, handler: CaptureHandler): (res: HttpResponse, req: HttpRequest) => void {
  const limit = ctx.config.maxPublicBodyBytes;
  return (res, req) => {
    const ex = new Exchange(res, ctx.metrics, 'capture', req.getHeader('origin'));
    const path = req.getUrl();
    const query = req.getQuery() ?? '';
    const headers: IncomingHttpHeaders = {};
    req.forEach((k, v) => { headers[k] = v; });
    if (Number(headers['content-length'] ?? '0') > limit) return ex.sendError(errors.payloadTooLarge(limit), true);
    const run = (body: Buffer): void => {
      handler(path, query, headers, body).then(
        (reply) => ex.send(reply.status, JSON.stringify(reply.body), reply.headers),
        (e: unknown) => {
          ctx.log.error({ err: e }, 'unexpected error on capture');
          ex.sendError(errors.internal());
        },
      );
    };
    if (req.getMethod() === 'get') return run(Buffer.alloc(0));
    readBody(res, limit, (body) => {
      if (body === 'too_large') return ex.sendError(errors.payloadTooLarge(limit), true);
      run(body);
    });
  };
}
