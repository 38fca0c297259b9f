/**
 * Flag helper endpoints (spec/API.md §4.2; research/posthog-management-api.md §2.7, §2.8, §2.10),
 * all with scope `feature_flag:read` as PostHog's current API declares them:
 *
 * - F13 `POST /feature_flags/bulk_keys` `{"ids": [...]}` → `{"keys": {"<id>": "<key>"}}` for live
 *   flags (unknown ids omitted); all ids invalid → 400 `{"error": "Invalid flag IDs provided"}`;
 *   some invalid → a `warning` naming them.
 * - F14 `GET /feature_flags/evaluation_reasons?distinct_id=&groups=` → every flag's value and
 *   reason for one person, from the evaluation core over the stored person (the nodes' answer);
 *   disabled flags `{"value": false, "evaluation": {"reason": "disabled", "condition_index": null}}`.
 * - F16 `GET /feature_flags/my_flags?groups=` → `[{"feature_flag": <minimal flag>, "value"}]` for the
 *   calling user's distinct id, newest flag first.
 * - F17 `POST /feature_flags/user_blast_radius` `{"condition": {"properties"}, "group_type_index"}` →
 *   `{"users_affected", "total_users"}` over the stored persons or groups (blast-radius.ts).
 * - F7 `POST /feature_flags/:id/create_static_cohort_for_flag` (optional `{"variant"}`) → 201
 *   `{"cohort"}`, filled in the background (static-cohort.ts). It creates a cohort, so it needs
 *   `cohort:write` (PostHog's current API asks only `feature_flag:read`, which would let a
 *   read-only key write).
 *
 * F14, F16 and F17 run in the control plane's scan pool (scan-pool/): past the project's scan
 * slots they answer 429 throttled, past SWITCHYARD_SCAN_TIMEOUT_MS 504 (PostHog's query timeout).
 */
import { errors } from '../../errors.js';
import { featureFlagEntity, type FeatureFlagRow } from '../../contract/entities.js';
import { object, str } from '../http/schema-parts.js';
import { numericIdParam } from '../http/params.js';
import type { Deps, RequestContext, Route } from '../http/types.js';
import { loadProjectFlags, evaluateStored } from './evaluate-stored.js';
import { FLAG_PARAMS, FLAGS_PARAMS } from './schemas.js';
import { createStaticCohortForFlag } from './static-cohort.js';
import { blastRadius } from './blast-radius.js';

const BASE = '/api/projects/:project_id/feature_flags';
const TAGS = ['feature_flags'] as const;

/** `groups` query parameter: a JSON object of group type → key. @throws ApiError 400 attr `groups`. */
function groupsParam(ctx: RequestContext): Record<string, string> {
  const raw = ctx.query.get('groups');
  if (raw === null || raw === '') return {};
  let v: unknown;
  try { v = JSON.parse(raw); } catch { throw errors.validation('Invalid JSON in groups parameter', 'groups'); }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw errors.validation('groups must be a JSON object', 'groups');
  return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, String(x)]));
}

/** A result's value: the variant, else whether it is enabled. */
function valueOf(r: { enabled: boolean; variant: string | null } | undefined): boolean | string {
  return r ? r.variant ?? r.enabled : false;
}

/** The helper routes. */
export function featureFlagHelperRoutes(deps: Deps): Route[] {
  return [
    {
      method: 'POST', path: `${BASE}/bulk_keys`, scope: 'feature_flag:read',
      schema: { summary: 'Keys of flags by id (F13)', tags: TAGS, params: FLAGS_PARAMS, body: object({ ids: { type: 'array', items: { type: ['integer', 'string'] } } }), validatedBy: 'service' },
      async handler(ctx) {
        const ids = (ctx.body as { ids?: unknown } | undefined)?.ids;
        if (ids === undefined || ids === null || (Array.isArray(ids) && ids.length === 0)) return { status: 200, body: { keys: {} } };
        if (!Array.isArray(ids)) return { status: 400, body: { error: 'Invalid flag IDs provided' } };
        const valid: number[] = [];
        const invalid: unknown[] = [];
        for (const id of ids) {
          const n = typeof id === 'number' ? id : typeof id === 'string' && /^\d{1,15}$/.test(id.trim()) ? Number(id) : NaN;
          if (Number.isSafeInteger(n) && n > 0) valid.push(n); else invalid.push(id);
        }
        if (valid.length === 0) return { status: 400, body: { error: 'Invalid flag IDs provided' } };
        const rows = await deps.sql<{ id: number; key: string }[]>`SELECT id::int AS id, key FROM feature_flags
          WHERE project_id = ${ctx.project.id} AND NOT deleted AND id = ANY(${valid}::bigint[])`;
        const body: Record<string, unknown> = { keys: Object.fromEntries(rows.map((r) => [String(r.id), r.key])) };
        if (invalid.length > 0) body.warning = `Invalid flag IDs ignored: ${JSON.stringify(invalid)}`;
        return { status: 200, body };
      },
    },
    {
      method: 'GET', path: `${BASE}/evaluation_reasons`, scope: 'feature_flag:read',
      schema: {
        summary: "Every flag's value and reason for one distinct id (F14)", tags: TAGS, params: FLAGS_PARAMS, validatedBy: 'service',
        querystring: object({ distinct_id: str('The person to evaluate for.'), groups: str('JSON object of group type → key.') }, ['distinct_id']),
      },
      async handler(ctx) {
        const distinctId = ctx.query.get('distinct_id');
        if (!distinctId) throw errors.required('distinct_id');
        const flags = await loadProjectFlags(deps.sql, ctx.project.id);
        const result = await evaluateStored(deps.sql, ctx.project.id, distinctId, groupsParam(ctx), flags);
        const out: Record<string, unknown> = {};
        for (const f of flags.definitions.flags) {
          const r = result.flags[f.key];
          out[f.key] = f.active === false
            ? { value: false, evaluation: { reason: 'disabled', condition_index: null } }
            : { value: valueOf(r), evaluation: { reason: r?.reason.code ?? 'unknown', condition_index: r?.reason.condition_index ?? null } };
        }
        return { status: 200, body: out };
      },
    },
    {
      method: 'POST', path: `${BASE}/:id/create_static_cohort_for_flag`, scope: 'cohort:write',
      schema: { summary: 'A static cohort of the persons the flag is enabled for (F7)', tags: TAGS, params: FLAG_PARAMS, body: object({ variant: str('Only persons served this variant.') }), validatedBy: 'service' },
      async handler(ctx) {
        return { status: 201, body: await createStaticCohortForFlag(deps.sql, deps.log, ctx.project.id, ctx.auth.userId, numericIdParam(ctx), ctx.body) };
      },
    },
    {
      method: 'POST', path: `${BASE}/user_blast_radius`, scope: 'feature_flag:read',
      schema: {
        summary: 'How many persons or groups a release condition matches (F17)', tags: TAGS, params: FLAGS_PARAMS, validatedBy: 'service',
        body: object({ condition: { type: 'object', description: '`{properties: [...], rollout_percentage}` (the rollout is ignored).' }, group_type_index: { type: ['integer', 'null'] } }, ['condition']),
      },
      async handler(ctx) {
        return { status: 200, body: await blastRadius(deps.sql, ctx.project.id, ctx.body) };
      },
    },
    {
      method: 'GET', path: `${BASE}/my_flags`, scope: 'feature_flag:read',
      schema: { summary: "The calling user's flags and values (F16)", tags: TAGS, params: FLAGS_PARAMS, querystring: object({ groups: str('JSON object of group type → key.') }), validatedBy: 'service' },
      async handler(ctx) {
        const [user] = await deps.sql<{ distinct_id: string | null }[]>`SELECT distinct_id FROM users WHERE id = ${ctx.auth.userId}`;
        if (!user?.distinct_id) throw errors.validation('The user has no distinct_id.', null);
        const groups = groupsParam(ctx);
        const rows = await deps.sql<FeatureFlagRow[]>`SELECT * FROM feature_flags WHERE project_id = ${ctx.project.id} AND NOT deleted ORDER BY created_at DESC, id DESC`;
        if (rows.length === 0) return { status: 200, body: [] };
        const result = await evaluateStored(deps.sql, ctx.project.id, user.distinct_id, groups);
        return { status: 200, body: rows.map((r) => ({ feature_flag: featureFlagEntity(r), value: valueOf(result.flags[r.key]) })) };
      },
    },
  ];
}
