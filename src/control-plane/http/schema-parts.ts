/**
 * JSON Schema pieces shared by the route declarations (OpenAPI document and validation):
 * path parameters, LimitOffset pagination (research
 * posthog-management-api.md §5.5), and small builders so a resource's schemas read as a table.
 */
import type { JsonSchema } from './types.js';

/** `project_id` path parameter: a numeric id or PostHog's `@current` alias. */
export const PROJECT_ID: JsonSchema = {
  type: 'string', pattern: '^(\\d{1,15}|@current)$',
  description: 'Project id, or `@current`: the project of `?token=<project API key>`, else the first project the key may see.',
};

/** A numeric id path segment. */
export const NUMERIC_ID: JsonSchema = { type: 'string', pattern: '^\\d{1,15}$', description: 'Numeric id.' };

/** An object schema with `properties`, of which `required` must be present. */
export function object(properties: Record<string, JsonSchema>, required: readonly string[] = [], description?: string): JsonSchema {
  return { type: 'object', properties, ...(required.length > 0 ? { required: [...required] } : {}), ...(description ? { description } : {}) };
}

/** Path parameters of a project resource: `project_id` plus `extra`. */
export function projectParams(extra: Record<string, JsonSchema> = {}): JsonSchema {
  return object({ project_id: PROJECT_ID, ...extra }, ['project_id', ...Object.keys(extra)]);
}

/** `limit` / `offset` of LimitOffset pagination (invalid values fall back to the defaults). */
export const LIMIT_OFFSET: Record<string, JsonSchema> = {
  limit: { type: 'integer', minimum: 1, description: 'Page size (default 100).' },
  offset: { type: 'integer', minimum: 0, description: 'Rows to skip (default 0).' },
};

/** A string, with a description. */
export function str(description: string, extra: JsonSchema = {}): JsonSchema {
  return { type: 'string', description, ...extra };
}

/** A boolean, with a description. */
export function bool(description: string): JsonSchema {
  return { type: 'boolean', description };
}

/** An integer, with a description. */
export function int(description: string, extra: JsonSchema = {}): JsonSchema {
  return { type: 'integer', description, ...extra };
}

/** A list of strings, with a description. */
export function strings(description: string): JsonSchema {
  return { type: 'array', items: { type: 'string' }, description };
}
