/**
 * Path parameters of the management routes.
 */
import { errors } from '../../errors.js';
import type { RequestContext } from './types.js';

/**
 * A numeric id path segment (`:id` unless `name` says otherwise): 1–15 decimal digits, else no
 * row can have it (PostHog routes ids by pattern). @throws ApiError 404 `Not found.`.
 */
export function numericIdParam(ctx: RequestContext, name = 'id'): number {
  const raw = ctx.params[name] ?? '';
  if (!/^\d{1,15}$/.test(raw)) throw errors.notFound();
  return Number(raw);
}
