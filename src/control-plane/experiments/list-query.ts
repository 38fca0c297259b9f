/**
 * The experiment list's query string (spec/API.md §4.1 E1): status, search, creator, archived and
 * order, as PostHog's ExperimentViewSet reads them.
 */
import { errors } from '../../errors.js';
import type { ExperimentListQuery } from './store.js';

/** E1 query string → {@link ExperimentListQuery}. @throws ApiError 400 attr `order`. */
export function parseExperimentListQuery(q: URLSearchParams): ExperimentListQuery {
  const out: ExperimentListQuery = { archived: q.get('archived') === 'true', order: { field: 'created_at', desc: true } };
  const status = q.get('status');
  if (status === 'draft' || status === 'running' || status === 'paused') out.status = status;
  else if (status === 'complete' || status === 'stopped') out.status = 'complete';
  const search = q.get('search');
  if (search && search.trim() !== '') out.search = search.trim();
  const by = q.get('created_by_id');
  if (by !== null && /^\d{1,15}$/.test(by.trim())) out.createdById = Number(by.trim());
  const order = q.get('order');
  if (order) {
    const desc = order.startsWith('-');
    const field = desc ? order.slice(1) : order;
    if (!['created_at', 'created_by', 'updated_at', 'name', 'start_date', 'end_date', 'duration', 'status'].includes(field)) {
      throw errors.validation(`Invalid order field: '${field}'`, 'order');
    }
    out.order = { field, desc };
  }
  return out;
}
