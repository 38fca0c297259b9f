/**
 * PostHog's environment paths: `/api/environments/<id>/…` names the same project-scoped
 * resources as `/api/projects/<id>/…` (in PostHog an environment is a team; here each project is
 * its own single environment, so the two ids are the same). Every route under the project
 * prefix, the project itself included, is also served under the environment prefix, with the
 * same scope, validation and handler; resources added later get their alias with no change here.
 *
 * The server rewrites the path before routing ({@link projectPath}) instead of registering each
 * route twice: registering and compiling the aliases took about half of the API's start-up.
 * Handlers see the path as sent (fastify's `originalUrl`), so links in answers keep the prefix
 * the client used.
 */

/** The project-scoped prefix of management routes. */
export const PROJECT_PREFIX = '/api/projects/:project_id';
/** PostHog's environment prefix, an alias of {@link PROJECT_PREFIX}. */
export const ENVIRONMENT_PREFIX = '/api/environments/:project_id';

/** `/api/environments/<id>` followed by the end, `/`, `?` or `#`; `<id>` is one non-empty path segment. */
const ENVIRONMENT_PATH = /^\/api\/environments(?=\/[^/?#]+(?:[/?#]|$))/;

/**
 * The project path a request URL names: `/api/environments/<id>…` → `/api/projects/<id>…`
 * (query string kept); any other URL unchanged. The OpenAPI document lists only the project
 * paths.
 */
export function projectPath(url: string): string {
  return url.startsWith('/api/environments/') ? url.replace(ENVIRONMENT_PATH, '/api/projects') : url;
}
