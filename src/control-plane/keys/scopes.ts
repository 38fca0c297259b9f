/**
 * Personal-API-key scopes: `<object>:read|write` or `*` (research/posthog-management-api.md
 * §5.2). Holding `X:write` satisfies `X:read`; `*` satisfies every scope.
 */
import { errors } from '../../errors.js';

/** Scope objects this service knows (a subset of PostHog's catalogue, plus those it serves). */
export const SCOPE_OBJECTS: readonly string[] = Object.freeze([
  'action', 'activity_log', 'annotation', 'cohort', 'dashboard', 'early_access_feature', 'event_definition',
  'experiment', 'experiment_holdout', 'experiment_saved_metric', 'feature_flag', 'group', 'insight', 'organization',
  'person', 'project', 'property_definition', 'query', 'survey', 'user',
]);

/** True when `granted` satisfies `required` (`feature_flag:read` is satisfied by `feature_flag:write`). */
export function hasScope(granted: ReadonlySet<string>, required: string): boolean {
  if (granted.has('*') || granted.has(required)) return true;
  const [object, action] = required.split(':');
  return action === 'read' && granted.has(`${object}:write`);
}

/**
 * Parses a comma-separated or array scope list.
 * @throws ApiError 400 `Invalid scope: x` (attr `scopes`) for an unknown object or action.
 */
export function parseScopes(input: string | readonly string[]): string[] {
  const list = (typeof input === 'string' ? input.split(',') : [...input]).map((s) => s.trim()).filter(Boolean);
  if (list.length === 0) throw errors.validation('At least one scope is required.', 'scopes');
  for (const s of list) {
    if (s === '*') continue;
    const [object, action, extra] = s.split(':');
    if (extra !== undefined || !object || !SCOPE_OBJECTS.includes(object) || (action !== 'read' && action !== 'write')) {
      throw errors.validation(`Invalid scope: ${s}`, 'scopes');
    }
  }
  return [...new Set(list)];
}
