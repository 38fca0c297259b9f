/**
 * `GET /api/organizations/<id>/` (scope `organization:read`): the key's organization, by
 * PostHog's `@current` alias or its uuid (any other id is 404, as PostHog answers for an
 * organization the user is not a member of). The shape is a subset of PostHog's
 * OrganizationSerializer; `teams` and `projects` list the live projects the key may see.
 * Tenancy here has no memberships: every user of an organization manages it, reported as
 * PostHog's admin level (`membership_level` 8).
 */
import type { Sql } from '../db/connect.js';
import type { AuthContext, Route } from '../http/types.js';
import { errors } from '../../errors.js';
import { object, str } from '../http/schema-parts.js';
import { listProjects } from './store.js';

/** PostHog's OrganizationMembership.Level.ADMIN. */
const ADMIN_LEVEL = 8;
/** More projects than an organization holds: `teams` lists them all. */
const ALL_PROJECTS = 10_000;

/** An organization row. */
interface OrganizationRow { id: number; uuid: string; name: string; created_at: Date }

/** The `slug` of an organization name: lower case, each run of other characters one `-` (organizations here store no slug). */
export function organizationSlug(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
}

/** PostHog's OrganizationBasicSerializer of the key's organization (the `organizations` list of `/api/users/@me/`). */
export async function organizationBasic(sql: Sql, organizationId: number): Promise<Record<string, unknown>> {
  const org = await organizationRow(sql, organizationId);
  return {
    id: org.uuid, name: org.name, slug: organizationSlug(org.name), logo_media_id: null,
    membership_level: ADMIN_LEVEL, members_can_use_personal_api_keys: true,
  };
}

/**
 * The key's organization in PostHog's OrganizationSerializer shape (a subset): `teams` are
 * PostHog's TeamBasic of each live project the key may see, `projects` their `{id, name, organization_id}`.
 */
export async function serializeOrganization(sql: Sql, auth: AuthContext): Promise<Record<string, unknown>> {
  const org = await organizationRow(sql, auth.organizationId);
  const { rows } = await listProjects(sql, auth.organizationId, auth.scopedTeams, ALL_PROJECTS, 0);
  const [{ members }] = await sql<{ members: number }[]>`SELECT count(*)::int AS members FROM users WHERE organization_id = ${org.id} AND is_active`;
  return {
    id: org.uuid,
    name: org.name,
    slug: organizationSlug(org.name),
    logo_media_id: null,
    created_at: org.created_at.toISOString(),
    updated_at: org.created_at.toISOString(),
    membership_level: ADMIN_LEVEL,
    plugins_access_level: 0,
    teams: rows.map((p) => teamBasic(p, org.uuid)),
    projects: rows.map((p) => ({ id: p.id, name: p.name, organization_id: org.uuid })),
    available_product_features: [],
    is_member_join_email_enabled: false,
    metadata: {},
    customer_id: null,
    enforce_2fa: null,
    members_can_invite: true,
    members_can_use_personal_api_keys: true,
    allow_publicly_shared_resources: true,
    member_count: members,
  };
}

/** PostHog's TeamBasicSerializer of a projects row (each project is its own single environment). */
export function teamBasic(p: { id: number; uuid: string; name: string; api_token: string; timezone: string }, organizationUuid: string): Record<string, unknown> {
  return {
    id: p.id, uuid: p.uuid, organization: organizationUuid, project_id: p.id, api_token: p.api_token, name: p.name,
    completed_snippet_onboarding: false, has_completed_onboarding_for: null, ingested_event: false, is_demo: false, timezone: p.timezone,
  };
}

async function organizationRow(sql: Sql, id: number): Promise<OrganizationRow> {
  const [org] = await sql<OrganizationRow[]>`SELECT id, uuid, name, created_at FROM organizations WHERE id = ${id}`;
  if (!org) throw errors.notFound();
  return org;
}

/** Routes of the organizations resource. */
export function organizationRoutes(deps: { sql: Sql }): Route[] {
  return [{
    method: 'GET', path: '/api/organizations/:organization_id', scope: 'organization:read',
    schema: {
      summary: 'Retrieve the key\'s organization', tags: ['organizations'], validatedBy: 'service',
      params: object({ organization_id: str('`@current` or the organization uuid.') }, ['organization_id']),
    },
    async handler(ctx) {
      const id = ctx.params.organization_id ?? '';
      if (id !== '@current') {
        const [own] = await deps.sql<{ uuid: string }[]>`SELECT uuid::text FROM organizations WHERE id = ${ctx.auth.organizationId}`;
        if (own?.uuid !== id.toLowerCase()) throw errors.notFound();
      }
      return { status: 200, body: await serializeOrganization(deps.sql, ctx.auth) };
    },
  }];
}
