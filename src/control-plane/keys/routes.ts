/**
 * PostHog's personal API key endpoints, scoped to the calling key's user (`/api/users/@me/`):
 * `GET /api/personal_api_keys/` (list), `GET /api/personal_api_keys/:id/`,
 * `POST /api/personal_api_keys/` `{label, scopes, scoped_teams}` (201 with `value`, the only time
 * it is shown; at most 10 live keys per user, PostHog's message; research §5.1), and
 * `DELETE /api/personal_api_keys/:id/` (revoke: 204; the change log carries it to every node). Values and hashes are never returned otherwise; another user's key is 404.
 * Scopes: `user:read` to read, `user:write` to create and revoke. A key can only create keys
 * whose scopes it holds itself (no escalation from `user:write` to `*`).
 */
import { errors } from '../../errors.js';
import type { Deps, Route } from '../http/types.js';
import { object, str } from '../http/schema-parts.js';
import { createPersonalApiKey, listPersonalApiKeys, revokePersonalApiKey, type PersonalApiKeyListing } from './store.js';
import { hasScope, parseScopes } from './scopes.js';

/** PostHog's PersonalAPIKeySerializer shape (without `value`, shown only at creation). */
export function serializePersonalApiKey(k: PersonalApiKeyListing): Record<string, unknown> {
  return {
    id: k.id, label: k.label, mask_value: k.mask_value, created_at: k.created_at.toISOString(),
    last_used_at: k.last_used_at?.toISOString() ?? null, user_id: Number(k.user_id), scopes: k.scopes,
    scoped_teams: k.scoped_teams.map(Number), scoped_organizations: k.scoped_organizations, last_rolled_at: null,
  };
}

const TAGS = ['personal_api_keys'] as const;
const KEY_PARAMS = object({ id: str('Personal API key id.') }, ['id']);

/** Routes of the personal API keys resource. */
export function personalApiKeyRoutes(deps: Deps): Route[] {
  const own = async (userId: number, id: string): Promise<PersonalApiKeyListing> => {
    const key = (await listPersonalApiKeys(deps.sql, userId)).find((k) => k.id === id);
    if (!key) throw errors.notFound();
    return key;
  };
  return [
    {
      method: 'GET', path: '/api/personal_api_keys', scope: 'user:read',
      schema: { summary: 'List the calling user\'s personal API keys', tags: TAGS },
      async handler(ctx) {
        return { status: 200, body: (await listPersonalApiKeys(deps.sql, ctx.auth.userId)).map(serializePersonalApiKey) };
      },
    },
    {
      method: 'GET', path: '/api/personal_api_keys/:id', scope: 'user:read',
      schema: { summary: 'Retrieve one of the calling user\'s personal API keys', tags: TAGS, params: KEY_PARAMS },
      async handler(ctx) {
        return { status: 200, body: serializePersonalApiKey(await own(ctx.auth.userId, ctx.params.id!)) };
      },
    },
    {
      method: 'POST', path: '/api/personal_api_keys', scope: 'user:write',
      schema: {
        summary: 'Create a personal API key for the calling user (its value is returned once)', tags: TAGS, validatedBy: 'service',
        body: object({ label: str('Label (at most 40 characters).'), scopes: { type: 'array', items: { type: 'string' } }, scoped_teams: { type: 'array', items: { type: 'integer' } } }, ['label', 'scopes']),
      },
      async handler(ctx) {
        const b = (ctx.body ?? {}) as Record<string, unknown>;
        if (typeof b.label !== 'string' || b.label.trim() === '') throw errors.validation('This field may not be blank.', 'label', 'blank');
        if (b.label.length > 40) throw errors.validation('Ensure this field has no more than 40 characters.', 'label', 'max_length');
        if (!Array.isArray(b.scopes) || !b.scopes.every((x) => typeof x === 'string')) throw errors.validation('Expected a list of items.', 'scopes', 'not_a_list');
        const scopes = parseScopes(b.scopes as string[]);
        for (const sc of scopes) {
          if (sc === '*' ? !ctx.auth.scopes.has('*') : !hasScope(ctx.auth.scopes, sc)) throw errors.permissionDenied(`This key cannot grant the scope ${sc} it does not hold.`);
        }
        const teams = Array.isArray(b.scoped_teams) ? b.scoped_teams.map(Number) : [];
        if (teams.some((t) => !Number.isSafeInteger(t))) throw errors.validation('Expected a list of project ids.', 'scoped_teams');
        const [{ owned }] = await deps.sql<{ owned: number }[]>`SELECT count(*)::int AS owned FROM projects WHERE organization_id = ${ctx.auth.organizationId} AND id = ANY(${teams}::bigint[])`;
        if (owned !== new Set(teams).size) throw errors.validation('You must be a member of all teams that you are scoping the key to.', 'scoped_teams');
        if ((await listPersonalApiKeys(deps.sql, ctx.auth.userId)).length >= 10) {
          throw errors.validation('You can only have 10 personal API keys. Remove an existing key before creating a new one.', null);
        }
        const { id, value } = await createPersonalApiKey(deps.sql, { userId: ctx.auth.userId, label: b.label.trim(), scopes, scopedTeams: teams });
        return { status: 201, body: { ...serializePersonalApiKey(await own(ctx.auth.userId, id)), value } };
      },
    },
    {
      method: 'DELETE', path: '/api/personal_api_keys/:id', scope: 'user:write',
      schema: { summary: 'Revoke a personal API key (every node stops accepting it)', tags: TAGS, params: KEY_PARAMS },
      async handler(ctx) {
        const revoked = await revokePersonalApiKey(deps.sql, ctx.params.id!, ctx.auth.userId);
        if (!revoked) throw errors.notFound();
        deps.log.info({ key_id: revoked.id, user_id: ctx.auth.userId }, 'personal API key revoked');
        return { status: 204 };
      },
    },
  ];
}
