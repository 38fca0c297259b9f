/**
 * Authentication and authorisation of management requests (research/posthog-management-api.md
 * §5.1–§5.2): a personal API key from `Authorization: Bearer`, else the `personal_api_key`
 * query parameter; the route's scope; and, for project paths, that the project belongs to the
 * key's organization and to its scoped projects.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { errors } from '../../errors.js';
import type { Sql } from '../db/connect.js';
import { findPersonalApiKey, touchPersonalApiKey } from '../keys/store.js';
import { hashPersonalApiKey } from '../keys/tokens.js';
import { hasScope } from '../keys/scopes.js';
import type { AuthContext, ProjectRow } from './types.js';
import type { AuthFailureLimiter } from './auth-failures.js';
import { PROJECT_SETTING_KEYS } from '../../contract/entities.js';

/** Token prefixes handled by other authenticators in PostHog; not personal keys (research §5.1). */
const OTHER_PREFIXES = ['pha_', 'phs_'];

/** Extracts the presented personal key, or null when none was presented. */
export function presentedKey(headers: IncomingHttpHeaders, query: URLSearchParams): { value: string; where: string } | null {
  const h = headers.authorization;
  if (typeof h === 'string') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
    if (m && !OTHER_PREFIXES.some((p) => m[1]!.startsWith(p))) return { value: m[1]!, where: 'Authorization header' };
  }
  const q = query.get('personal_api_key');
  if (q) return { value: q, where: 'query string' };
  return null;
}

/**
 * Resolves the caller. With `failures`, a client `address` past its failed authentications is
 * refused before the key is looked up unless the key authenticated recently, and each unknown key
 * counts against it (./auth-failures.ts).
 * @throws ApiError 401 `not_authenticated` (nothing presented) or `authentication_failed`
 *   (unknown key); 429 `throttled` when the address is past its failures.
 */
export async function authenticate(sql: Sql, headers: IncomingHttpHeaders, query: URLSearchParams,
  failures?: { limiter: AuthFailureLimiter; address: string }): Promise<AuthContext> {
  const presented = presentedKey(headers, query);
  if (!presented) throw errors.notAuthenticated();
  const keyHash = failures ? hashPersonalApiKey(presented.value) : '';
  const waitMs = failures && !failures.limiter.isVouched(keyHash) ? failures.limiter.blockedFor(failures.address) : 0;
  if (waitMs > 0) throw errors.throttled(waitMs / 1000);
  const key = await findPersonalApiKey(sql, presented.value);
  if (!key) {
    failures?.limiter.fail(failures.address);
    throw errors.authenticationFailed(`Personal API key found in request ${presented.where} is invalid.`);
  }
  failures?.limiter.vouch(keyHash);
  touchPersonalApiKey(sql, key.id);
  return { userId: key.userId, organizationId: key.organizationId, keyId: key.id, scopes: new Set(key.scopes), scopedTeams: key.scopedTeams };
}

/** @throws ApiError 403 `API key missing required scope 'x'` unless `auth` holds `scope`. */
export function requireScope(auth: AuthContext, scope: string): void {
  if (!hasScope(auth.scopes, scope)) throw errors.missingScope(scope);
}

/**
 * Loads the project of a project path and checks access. `@current` (PostHog's alias) is the
 * project whose API key is `token` (posthog-node sends `?token=<phc_…>`; a key replaced by a
 * reset counts until its overlap ends, contract/entities.ts `projectAcceptsToken`), else the
 * first project of the key's organization it may see.
 * @throws ApiError 404 `Project not found.` (unknown, deleted, malformed, or another organization's id);
 *   403 when the key's scoped projects exclude it.
 */
export async function resolveProject(sql: Sql, auth: AuthContext, rawId: string, token: string | null = null): Promise<ProjectRow> {
  const current = rawId === '@current';
  if (!current && !/^\d{1,15}$/.test(rawId)) throw errors.notFound('Project not found.');
  const scoped = [...auth.scopedTeams];
  const [project] = !current
    ? await sql<ProjectRow[]>`SELECT id, organization_id, uuid, name, api_token, timezone, created_at,
        ${sql(PROJECT_SETTING_KEYS as string[])} FROM projects WHERE id = ${Number(rawId)} AND deleted_at IS NULL`
    : token !== null && token !== ''
      ? await sql<ProjectRow[]>`SELECT id, organization_id, uuid, name, api_token, timezone, created_at,
          ${sql(PROJECT_SETTING_KEYS as string[])} FROM projects
          WHERE (api_token = ${token} OR (previous_api_token = ${token} AND previous_api_token_expires_at > clock_timestamp())) AND deleted_at IS NULL`
      : await sql<ProjectRow[]>`SELECT id, organization_id, uuid, name, api_token, timezone, created_at,
          ${sql(PROJECT_SETTING_KEYS as string[])} FROM projects
          WHERE organization_id = ${auth.organizationId} AND deleted_at IS NULL AND (${scoped.length === 0} OR id = ANY(${scoped}::bigint[]))
          ORDER BY id LIMIT 1`;
  if (!project || project.organization_id !== auth.organizationId) throw errors.notFound('Project not found.');
  if (auth.scopedTeams.length > 0 && !auth.scopedTeams.includes(project.id)) {
    throw errors.permissionDenied(`API key does not have access to the requested project: ID ${project.id}.`);
  }
  return project;
}
