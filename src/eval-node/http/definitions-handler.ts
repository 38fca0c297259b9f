/**
 * `GET /flags/definitions?token=<project key>[&send_cohorts]` — the local-evaluation feed that
 * posthog-node polls (research/posthog-flag-evaluation.md §6.1; management-api §2.9, §5.2), also
 * served at Django's older `/api/feature_flag/local_evaluation`.
 *
 * Auth: `Authorization: Bearer <personal API key>`; the key (looked up by its `sha256$` hash) must
 * belong to the organization owning the project, list the project in `scoped_teams` when that is
 * non-empty, and hold `feature_flag:read`, `feature_flag:write` or `*`.
 * Errors in PostHog's shape: no key 401 `not_authenticated`; unknown key 401
 * `authentication_failed`; missing/unknown token 401 `missing_token`/`invalid_token`; other
 * organization or project outside scoped_teams 403 `permission_denied`; missing scope 403; quota
 * limited 402 `payment_required`; over the per-project rate (PostHog's 600/min/team, shared with
 * remote_config; config.definitionsRatePerMinute) 429 `throttled` with `Retry-After`.
 * Caching: weak `ETag: W/"<definitions revision>[c][m2]"` (`c` = with cohorts, `m2` = property
 * matching version 2, a project setting outside the definitions revision), `Cache-Control:
 * private, must-revalidate`; a matching `If-None-Match` → 304 with no body.
 */
import crypto from 'node:crypto';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { errors, isApiError } from '../../errors.js';
import type { PersonalApiKeyEntity, ProjectEntity } from '../../contract/entities.js';
import type { NodeHttpContext } from './context.js';
import { Exchange } from './reply.js';

/** Scopes that allow reading the feed. */
const FEED_SCOPES: ReadonlySet<string> = new Set(['feature_flag:read', 'feature_flag:write', '*']);

/** Stored form of a personal API key (same as control-plane/keys/tokens.ts `hashPersonalApiKey`). */
export function hashPersonalApiKey(value: string): string {
  return `sha256$${crypto.createHash('sha256').update(value, 'utf8').digest('hex')}`;
}

/** The uWS handler of the feed. */
export function definitionsHandler(ctx: NodeHttpContext): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    const ex = new Exchange(res, ctx.metrics, 'definitions', ''); // server-side SDKs only: no CORS (cors.ts)
    try {
      const query = new URLSearchParams(req.getQuery() ?? '');
      const authorization = req.getHeader('authorization');
      const ifNoneMatch = req.getHeader('if-none-match');
      const project = authorizeFeedRequest(ctx, authorization, query.get('token'));
      const sendCohorts = query.has('send_cohorts') && !['false', '0'].includes(query.get('send_cohorts') ?? '');
      const matching = project.settings?.property_matching_version === 2 ? 2 : undefined;
      const defs = { ...ctx.store.definitions(project.id), propertyMatchingVersion: matching };
      const etag = `W/"${defs.revision}${sendCohorts ? 'c' : ''}${matching === 2 ? 'm2' : ''}"`;
      const headers: [string, string][] = [['ETag', etag], ['Cache-Control', 'private, must-revalidate']];
      if (ifNoneMatch !== '' && ifNoneMatch.split(',').some((t) => t.trim() === etag || t.trim() === '*')) {
        return ex.send(304, '', headers, null);
      }
      ex.send(200, ctx.feed.body(project.id, defs, sendCohorts), headers);
    } catch (e) {
      if (isApiError(e)) return ex.sendError(e);
      ctx.log.error({ err: e }, 'unexpected error on /flags/definitions');
      ex.sendError(errors.internal());
    }
  };
}

/**
 * Resolves and authorizes a request by personal API key for the project of `token` (the rules in
 * the module doc; also used by F10 remote_config, which has no quota: `checkQuota` false).
 * @throws ApiError 401/402/403, 503 before the first snapshot.
 */
export function authorizeFeedRequest(ctx: NodeHttpContext, authorization: string, token: string | null, checkQuota = true): ProjectEntity {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (m === null) throw errors.notAuthenticated();
  const key: PersonalApiKeyEntity | undefined = ctx.store.personalApiKeyByHash(hashPersonalApiKey(m[1]!));
  if (key === undefined) {
    if (!ctx.store.hasCompleteSnapshot()) throw errors.unavailable('not_ready', 'This node has not loaded its definitions yet; retry shortly.');
    throw errors.authenticationFailed();
  }
  if (token === null || token === '') {
    throw errors.invalidToken('missing_token', 'API key not provided. Pass the project API key as the token query parameter.');
  }
  const project = ctx.store.projectByToken(token);
  if (project === undefined) throw errors.invalidToken('invalid_token', 'Project API key invalid.');
  if (key.organization_id !== project.organization_id) throw errors.permissionDenied("You don't have access to the project.");
  if (key.scoped_teams.length > 0 && !key.scoped_teams.includes(project.id)) {
    throw errors.permissionDenied(`API key does not have access to the requested project: ID ${project.id}.`);
  }
  if (!key.scopes.some((s) => FEED_SCOPES.has(s))) throw errors.missingScope('feature_flag:read');
  if (checkQuota && ctx.store.organization(project.organization_id)?.quota_limited === true) throw errors.quotaLimited();
  const waitMs = ctx.feedLimiter.take(String(project.id));
  if (waitMs > 0) throw errors.throttled(waitMs / 1000);
  return project;
}
