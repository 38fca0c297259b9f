/**
 * Request schemas of the event-definition routes (D1–D5) for the OpenAPI document. The service
 * validates bodies and query strings itself (DRF coercions and PostHog's messages, research
 * posthog-management-api.md §4), so these routes are `validatedBy: 'service'`.
 */
import { bool, LIMIT_OFFSET, object, projectParams, str, strings } from '../http/schema-parts.js';
import type { JsonSchema } from '../http/types.js';
import { ORDERING_FIELDS } from './list-query.js';

/** `/event_definitions` path parameters. */
export const DEFINITIONS_PARAMS: JsonSchema = projectParams();
/** `/event_definitions/:id` path parameters. */
export const DEFINITION_PARAMS: JsonSchema = projectParams({ id: str('Event definition id (UUID).') });

/** D1 query parameters. */
export const DEFINITION_LIST_QUERY: JsonSchema = object({
  ...LIMIT_OFFSET,
  search: str('Whitespace-separated terms; every one must be in the name.'),
  event_type: str('`event` (default), `event_custom`, `event_posthog` or `action_event`.'),
  names: str('Exact names to keep, comma-separated or repeated.'),
  excluded_properties: str('JSON list of names to leave out.'),
  tags: str('JSON list of tags; definitions with any of them.'),
  verified: str('`true` or `false`.'),
  exclude_hidden: str('`true` to leave hidden definitions out.'),
  exclude_stale: str('`true` to leave stale definitions out.'),
  ordering: str(`Sort fields, comma-separated, \`-\` prefix for descending: ${ORDERING_FIELDS.join(', ')}.`),
});

/** `by_name` query. */
export const BY_NAME_QUERY: JsonSchema = object({ name: str('The event name.') }, ['name']);

/** D3 body. */
export const DEFINITION_BODY: JsonSchema = object({
  description: str('Free text.'),
  tags: strings('Tags (trimmed, de-duplicated).'),
  owner: { type: ['integer', 'null'], description: 'Owner user id.' },
  verified: bool('Mark as verified (not together with hidden).'),
  hidden: bool('Hide from pickers (not together with verified).'),
  post_to_slack: bool('Stored as given.'),
  default_columns: strings('Columns shown for the event.'),
});
