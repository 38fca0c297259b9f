/**
 * The evaluation node's routes (DESIGN.md "Evaluation node"): /flags and /decide (POST; OPTIONS
 * answers CORS preflights, cors.ts; anything else 405), the local-evaluation feed, capture (when
 * a handler is plugged in, capture-routes.ts), posthog-js's remote config (remote-config-routes.ts)
 * and extension bundles (static-assets.ts), OpenFeature's OFREP (ofrep-handler.ts), probes, and
 * 404 in PostHog's shape for everything else.
 */
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { errors } from '../../errors.js';
import type { NodeHttpContext } from './context.js';
import { definitionsHandler } from './definitions-handler.js';
import { flagsHandler } from './flags-handler.js';
import { healthHandler, metricsHandler, readyHandler } from './probes.js';
import { Exchange } from './reply.js';
import type { RouteLabel } from './metrics.js';
import { registerCaptureRoutes, type CaptureHandler } from './capture-routes.js';
import { preflightHandler } from './cors.js';
import { evaluationNodeIndex } from '../../where.js';
import { registerRemoteConfigRoutes } from './remote-config-routes.js';
import { registerOfrepRoutes } from './ofrep-handler.js';
import { registerStaticRoutes } from './static-assets.js';

const FLAGS_PATHS = ['/flags', '/flags/'];
const DECIDE_PATHS = ['/decide', '/decide/'];
const DEFINITIONS_PATHS = ['/flags/definitions', '/flags/definitions/', '/api/feature_flag/local_evaluation', '/api/feature_flag/local_evaluation/'];

/** Registers every route of the node on `app`. */
export function registerRoutes(app: TemplatedApp, ctx: NodeHttpContext, capture?: CaptureHandler): void {
  for (const [paths, endpoint] of [[FLAGS_PATHS, 'flags'], [DECIDE_PATHS, 'decide']] as const) {
    const handler = flagsHandler(ctx, endpoint);
    for (const p of paths) {
      app.post(p, handler);
      app.options(p, preflightHandler(ctx, endpoint));
      app.any(p, methodNotAllowed(ctx, endpoint, ['POST', 'OPTIONS']));
    }
  }
  const defs = definitionsHandler(ctx);
  for (const p of DEFINITIONS_PATHS) {
    app.get(p, defs);
    app.any(p, methodNotAllowed(ctx, 'definitions', ['GET']));
  }
  registerCaptureRoutes(app, ctx, capture);
  registerRemoteConfigRoutes(app, ctx);
  registerOfrepRoutes(app, ctx);
  registerStaticRoutes(app, ctx);
  app.get('/', (res, req) => new Exchange(res, ctx.metrics, 'other', req.getHeader('origin')).send(200, JSON.stringify(evaluationNodeIndex())));
  app.get('/_health', healthHandler(ctx));
  app.get('/_ready', readyHandler(ctx));
  app.get('/metrics', metricsHandler(ctx));
  // With CORS, so a browser asking for something the node lacks sees a plain 404 instead of a
  // CORS failure.
  app.any('/*', (res, req) => new Exchange(res, ctx.metrics, 'other', req.getHeader('origin')).sendError(errors.notFound(), true));
}

function methodNotAllowed(ctx: NodeHttpContext, route: RouteLabel, allow: string[]): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    const method = req.getCaseSensitiveMethod?.() ?? req.getMethod().toUpperCase();
    new Exchange(res, ctx.metrics, route, req.getHeader('origin')).sendError(errors.methodNotAllowed(method, allow), true);
  };
}
