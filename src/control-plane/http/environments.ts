/**
 * PostHog's environment paths: `/api/environments/<id>/…` names the same project-scoped
 * resources as `/api/projects/<id>/…` (in PostHog an environment is a team; here each project is
 * its own single environment, so the two ids are the same). Every route under the project
 * prefix, the project itself included, is also served under the environment prefix, with the
 * same scope, validation and handler; resources added later get their alias with no change here.
 */
import type { Route } from './types.js';

/** The project-scoped prefix of management routes. */
export const PROJECT_PREFIX = '/api/projects/:project_id';
/** PostHog's environment prefix, an alias of {@link PROJECT_PREFIX}. */
export const ENVIRONMENT_PREFIX = '/api/environments/:project_id';

/**
 * For each route under {@link PROJECT_PREFIX}, the same route under {@link ENVIRONMENT_PREFIX}.
 * The server serves them but leaves them out of the OpenAPI document, which would otherwise
 * list every project-scoped operation twice.
 */
export function environmentAliases(routes: readonly Route[]): Route[] {
  return routes
    .filter((r) => r.path === PROJECT_PREFIX || r.path.startsWith(`${PROJECT_PREFIX}/`))
    .map((r) => ({ ...r, path: ENVIRONMENT_PREFIX + r.path.slice(PROJECT_PREFIX.length) }));
}
