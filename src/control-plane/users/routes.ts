/**
 * `GET /api/users/<id>/` (scope `user:read`): the key's user, by PostHog's `@me` alias or its
 * uuid (any other user is 404: PostHog lists only the requesting user to non-staff). Tooling
 * calls it to check a key. The shape is a subset of PostHog's UserSerializer: the user's
 * fields, `team` (TeamBasic of the first live project the key may see, null when none),
 * `organization` (OrganizationSerializer) and `organizations` (OrganizationBasic list). Fields
 * about sessions, passwords and 2FA have the values of a user without them.
 */
import type { Sql } from '../db/connect.js';
import type { Route } from '../http/types.js';
import { errors } from '../../errors.js';
import { object, str } from '../http/schema-parts.js';
import { listProjects } from '../projects/store.js';
import { organizationBasic, serializeOrganization, teamBasic } from '../projects/organizations.js';
import type { UserRow } from './serialize.js';

/** Routes of the users resource. */
export function userRoutes(deps: { sql: Sql }): Route[] {
  return [{
    method: 'GET', path: '/api/users/:user_id', scope: 'user:read',
    schema: {
      summary: 'Retrieve the key\'s user', tags: ['users'], validatedBy: 'service',
      params: object({ user_id: str('`@me` or the user uuid.') }, ['user_id']),
    },
    async handler(ctx) {
      const [user] = await deps.sql<(UserRow & { date_joined: Date })[]>`
        SELECT id, uuid::text, distinct_id, first_name, last_name, email, is_email_verified, hedgehog_config, role_at_organization,
          created_at AS date_joined
        FROM users WHERE id = ${ctx.auth.userId}`;
      const id = ctx.params.user_id ?? '';
      if (!user || (id !== '@me' && id.toLowerCase() !== user.uuid)) throw errors.notFound();
      const organization = await serializeOrganization(deps.sql, ctx.auth);
      const { rows } = await listProjects(deps.sql, ctx.auth.organizationId, ctx.auth.scopedTeams, 1, 0);
      return {
        status: 200,
        body: {
          date_joined: user.date_joined.toISOString(),
          uuid: user.uuid,
          distinct_id: user.distinct_id,
          first_name: user.first_name,
          last_name: user.last_name,
          email: user.email,
          pending_email: null,
          is_email_verified: user.is_email_verified,
          notification_settings: {},
          anonymize_data: false,
          allow_impersonation: false,
          toolbar_mode: 'toolbar',
          has_password: false,
          id: user.id,
          is_staff: false,
          is_impersonated: false,
          is_impersonated_until: null,
          sensitive_session_expires_at: null,
          team: rows[0] ? teamBasic(rows[0], organization.id as string) : null,
          organization,
          organizations: [await organizationBasic(deps.sql, ctx.auth.organizationId)],
          events_column_config: { active: 'DEFAULT' },
          is_2fa_enabled: false,
          has_social_auth: false,
          has_sso_enforcement: false,
          has_seen_product_intro_for: null,
          scene_personalisation: [],
          theme_mode: null,
          hedgehog_config: user.hedgehog_config,
          role_at_organization: user.role_at_organization,
        },
      };
    },
  }];
}
