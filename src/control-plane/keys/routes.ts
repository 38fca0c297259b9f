/**
 * PostHog's personal API key endpoints, scoped to the calling key's user (`/api/users/@me/`):
 * `GET /api/personal_api_keys/` (list), `GET /api/personal_api_keys/:id/`, and
 * `DELETE /api/personal_api_keys/:id/` (revoke: 204; the change log carries it to every node,
 * issue 8 item 7). Values and hashes are never returned; another user's key is 404.
 * Scopes: `user:read` to read, `user:write` to revoke.
 */
import { errors } from '../../errors.js';
import type { Deps, Route } from '../http/types.js';
import { object, str } from '../http/schema-parts.js';
import { listPersonalApiKeys, revokePersonalApiKey, type PersonalApiKeyListing } from './store.js';

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
