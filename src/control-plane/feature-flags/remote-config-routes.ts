/**
 * F10 `GET /api/projects/:project_id/feature_flags/:id/remote_config` (scope `feature_flag:read`;
 * research/posthog-management-api.md §2.5): the payload of a remote-configuration flag, looked up
 * by id or key (deleted flags included, as PostHog), `@current` with `?token=` as the project.
 * The rule itself is src/feed/flag-remote-config.ts, shared with nodes.
 */
import type { Deps, Route } from '../http/types.js';
import { FLAG_PARAMS } from './schemas.js';
import { findByIdOrKey, remoteConfigAnswer, type RemoteConfigFlag } from '../../feed/flag-remote-config.js';

/** The F10 route. */
export function featureFlagRemoteConfigRoutes(deps: Deps): Route[] {
  return [{
    method: 'GET', path: '/api/projects/:project_id/feature_flags/:id/remote_config', scope: 'feature_flag:read',
    schema: { summary: 'Payload of a remote-configuration flag, by id or key (F10)', tags: ['feature_flags'], params: FLAG_PARAMS, validatedBy: 'service' },
    async handler(ctx) {
      const raw = ctx.params.id ?? '';
      const byId = /^\d{1,15}$/.test(raw);
      const rows = await deps.sql<(RemoteConfigFlag & { id: number })[]>`
        SELECT id::int AS id, key, filters, is_remote_configuration, deleted FROM feature_flags
        WHERE project_id = ${ctx.project.id} AND ${byId ? deps.sql`id = ${Number(raw)}` : deps.sql`key = ${raw}`}`;
      const answer = remoteConfigAnswer(findByIdOrKey(rows, raw));
      return answer.status === 404 ? { status: 404 } : { status: 200, body: JSON.parse(answer.body) as unknown };
    },
  }];
}
