/**
 * Remote config on a node:
 * - posthog-js's `GET /array/<token>/config` (JSON) and `GET /array/<token>/config.js` (script),
 *   built by src/feed/remote-config.ts from the project and its flags in the node store, with
 *   CORS for browsers (cors.ts; preflights answered). Answers: 200; 404 (PostHog's body) for an
 *   unknown token; 503 `not_ready` before the node's first complete snapshot (so a browser
 *   retries instead of running without config).
 * - F10 `GET /api/projects/<id | @current>/feature_flags/<id or key>/remote_config?token=<phc_…>`
 *   (src/feed/flag-remote-config.ts), which posthog-node's `getRemoteConfigPayload` calls on its
 *   host; personal API key auth as the local-evaluation feed (definitions-handler.ts). A node
 *   keeps no deleted flags, so unlike the control plane it answers 404 for them.
 */
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { buildRemoteConfig, remoteConfigScript, type RemoteConfig } from '../../feed/remote-config.js';
import type { NodeHttpContext } from './context.js';
import { preflightHandler } from './cors.js';
import { Exchange } from './reply.js';
import { authorizeFeedRequest } from './definitions-handler.js';
import { findByIdOrKey, remoteConfigAnswer } from '../../feed/flag-remote-config.js';
import { errors, isApiError } from '../../errors.js';

const FLAG_REMOTE_CONFIG_PATHS = ['/api/projects/:project/feature_flags/:flag/remote_config', '/api/projects/:project/feature_flags/:flag/remote_config/'];

/** Registers the remote-config routes on `app`. */
export function registerRemoteConfigRoutes(app: TemplatedApp, ctx: NodeHttpContext): void {
  const preflight = preflightHandler(ctx, 'remote_config');
  for (const [path, script] of [['/array/:token/config', false], ['/array/:token/config.js', true]] as const) {
    app.get(path, handler(ctx, script));
    app.options(path, preflight);
  }
  for (const path of FLAG_REMOTE_CONFIG_PATHS) app.get(path, flagRemoteConfigHandler(ctx));
}

function flagRemoteConfigHandler(ctx: NodeHttpContext): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    const ex = new Exchange(res, ctx.metrics, 'remote_config', '');
    try {
      const projectParam = req.getParameter(0) ?? '';
      const flagParam = safeDecode(req.getParameter(1) ?? '');
      const project = authorizeFeedRequest(ctx, req.getHeader('authorization'), new URLSearchParams(req.getQuery() ?? '').get('token'), false);
      if (projectParam !== '@current' && projectParam !== String(project.id)) throw errors.notFound('Project not found.');
      const answer = remoteConfigAnswer(findByIdOrKey(ctx.store.definitions(project.id).flags, flagParam));
      ex.send(answer.status, answer.body, undefined, answer.status === 404 ? null : 'application/json');
    } catch (e) {
      if (isApiError(e)) return ex.sendError(e);
      ctx.log.error({ err: e }, 'unexpected error on remote_config');
      ex.sendError(errors.internal());
    }
  };
}

function handler(ctx: NodeHttpContext, script: boolean): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    const ex = new Exchange(res, ctx.metrics, 'remote_config', req.getHeader('origin'));
    let config: RemoteConfig;
    try {
      const project = ctx.store.projectByToken(req.getParameter(0) ?? '');
      if (project === undefined) {
        return ex.sendError(ctx.store.hasCompleteSnapshot() ? errors.notFound() : errors.unavailable('not_ready', 'This node has not loaded its definitions yet; retry shortly.'));
      }
      const hasFeatureFlags = ctx.store.definitions(project.id).flags.some((f) => f.active && !f.deleted);
      config = buildRemoteConfig(project, hasFeatureFlags);
    } catch (e) {
      ctx.log.error({ err: e }, 'remote config failed');
      return ex.sendError(errors.internal());
    }
    if (script) ex.send(200, remoteConfigScript(config), undefined, 'application/javascript');
    else ex.send(200, JSON.stringify(config));
  };
}

function safeDecode(s: string): string {
  try { return decodeURIComponent(s); } catch { return s; }
}
