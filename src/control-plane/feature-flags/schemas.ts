/**
 * Request schemas of the feature-flag routes (F1–F6, F10–F12, F15) for the OpenAPI document.
 * The flag service validates flag bodies itself (DRF coercions and PostHog's messages, research
 * posthog-management-api.md §1.2), so these routes are `validatedBy: 'service'`.
 */
import { bool, int, LIMIT_OFFSET, object, projectParams, str, strings } from '../http/schema-parts.js';
import type { JsonSchema } from '../http/types.js';
import { BUCKETING_IDENTIFIERS, CREATION_CONTEXTS, EVALUATION_RUNTIMES } from './types.js';
import { ORDER_FIELDS } from './list-query.js';

/** `/feature_flags/:id` path parameters (a non-numeric id is a 404). */
export const FLAG_PARAMS: JsonSchema = projectParams({ id: str('Flag id.') });
/** `/feature_flags` path parameters. */
export const FLAGS_PARAMS: JsonSchema = projectParams();

/** `filters`: condition sets, variants, payloads (research posthog-flag-evaluation.md §1). */
const FILTERS: JsonSchema = {
  type: 'object',
  description: 'Release conditions: `groups` (condition sets with `properties`, `rollout_percentage`, optional `variant`), '
    + '`multivariate.variants` (`key`, `rollout_percentage`), `payloads` by variant or `"true"`, `aggregation_group_type_index`, '
    + '`super_groups`, `holdout_groups`.',
  properties: {
    groups: { type: 'array', items: { type: 'object' } },
    multivariate: { type: ['object', 'null'] },
    payloads: { type: 'object' },
    aggregation_group_type_index: { type: ['integer', 'null'] },
    super_groups: { type: 'array', items: { type: 'object' } },
    holdout_groups: { type: ['array', 'null'], items: { type: 'object' } },
  },
};

/** A flag body for create, update (PATCH/PUT). */
export const FLAG_BODY: JsonSchema = object({
  key: str('Unique key within the project: letters, numbers, `-` and `_`, at most 400 characters.'),
  name: str('Description shown in the UI.'),
  filters: FILTERS,
  active: bool('Whether the flag is served.'),
  deleted: bool('Soft delete (hard DELETE is refused with 405).'),
  ensure_experience_continuity: { type: ['boolean', 'null'], description: 'Keep a person\'s value across identify.' },
  version: int('The version being edited; a stale version is a 409 conflict.'),
  tags: strings('Tags (trimmed, lower-cased, de-duplicated).'),
  evaluation_tags: strings('Evaluation contexts the flag is limited to.'),
  evaluation_runtime: str('Where the flag may be evaluated.', { enum: [...EVALUATION_RUNTIMES] }),
  bucketing_identifier: { type: ['string', 'null'], enum: [...BUCKETING_IDENTIFIERS, null] },
  creation_context: str('What created the flag.', { enum: [...CREATION_CONTEXTS] }),
  is_remote_configuration: bool('A remote-configuration flag (payload only).'),
  has_encrypted_payloads: bool('Payloads are encrypted at rest and served only to server SDKs.'),
  rollback_conditions: { description: 'Stored as given.' },
  performed_rollback: { type: ['boolean', 'null'] },
  analytics_dashboards: { type: 'array', items: { type: 'integer' } },
}, [], 'A feature flag. `key` is required on create; every field is optional on update.');

/** F1 query parameters. */
export const FLAG_LIST_QUERY: JsonSchema = object({
  ...LIMIT_OFFSET,
  active: str('`true`, `false` or `STALE`.'),
  type: str('`boolean`, `multivariant`, `experiment` or `remote_config`.'),
  search: str('Case-insensitive substring of key or name.'),
  tags: str('JSON list of tags; flags with any of them.'),
  excluded_properties: str('JSON list of flag keys to leave out.'),
  created_by_id: str('Creator user id(s), comma-separated.'),
  evaluation_runtime: str('`server`, `client`, `all` (`both` is `all`).'),
  has_evaluation_tags: str('`true` or `false`.'),
  order: str(`Sort field, \`-\` prefix for descending: ${ORDER_FIELDS.join(', ')}.`),
});

/** F6 / F12 query parameters. */
export const ACTIVITY_QUERY: JsonSchema = object({
  limit: int('Page size (default 10).', { minimum: 1 }),
  page: int('Page number (default 1).', { minimum: 1 }),
});

/** F15 query parameters. */
export const LOCAL_EVALUATION_QUERY: JsonSchema = object({
  send_cohorts: str('Present, `true`, `1` or `yes`: include the referenced cohorts.'),
  token: str('Project API key, when the path says `@current`.'),
});
