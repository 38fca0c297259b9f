/**
 * Query parameters of `GET /feature_flags` (F1; spec/API.md §4.2, research/posthog-management-api.md
 * §1.6) parsed into a {@link FlagListQuery} the store turns into SQL.
 *
 * Lenient like PostHog: unknown values of `type`, and invalid JSON in `tags` /
 * `excluded_properties`, are ignored. Strict where PostHog fails with a 500: `order` must be an
 * allow-listed field (optionally `-`-prefixed), else 400 with attr `order`.
 */
import { errors } from '../../errors.js';

/** Sortable fields (`order=<field>` or `order=-<field>`). */
export const ORDER_FIELDS = ['created_at', 'updated_at', 'key', 'name', 'id', 'active', 'version', 'last_called_at', 'created_by_id', 'evaluation_runtime'] as const;
/** One of {@link ORDER_FIELDS}. */
export type OrderField = typeof ORDER_FIELDS[number];

/** The parsed filters of a flag list. */
export interface FlagListQuery {
  /** `true`/`false` on `active`, or `stale` for `active=STALE`. */
  active?: boolean | 'stale';
  /** `boolean` / `multivariant` / `experiment` / `remote_config`. */
  type?: 'boolean' | 'multivariant' | 'experiment' | 'remote_config';
  /** Case-insensitive substring of key or name. */
  search?: string;
  /** Match flags carrying any of these tags. */
  tags?: string[];
  /** Exclude flags with these keys. */
  excludedKeys?: string[];
  /** Creator user ids (any). */
  createdByIds?: number[];
  /** Exact `evaluation_runtime` (`both` already mapped to `all`). */
  evaluationRuntime?: string;
  /** `has_evaluation_tags`: true → at least one, false → none. */
  hasEvaluationTags?: boolean;
  order: { field: OrderField; desc: boolean };
  /** Only flags an experiment may use (E10): multivariate, ≥ 2 variants, the first `control`. */
  eligibleForExperiments?: boolean;
}

/**
 * A JSON-list query parameter (`tags=["a","b"]`). PostHog `json.loads` it and fails with a 500
 * on anything else (`tags=checkout`); here that is a 400 naming the parameter.
 * @throws ApiError 400 with `attr` = `name`.
 */
function jsonList(q: URLSearchParams, name: string): unknown[] | undefined {
  const raw = q.get(name);
  if (raw === null || raw === '') return undefined;
  let v: unknown;
  try { v = JSON.parse(raw); } catch { v = undefined; }
  if (!Array.isArray(v)) throw errors.validation(`${name} must be a JSON list, e.g. ${name}=["checkout"].`, name, 'invalid_input');
  return v;
}

/**
 * Parses F1's query string.
 *
 * - `active`: `STALE` → stale; `true` → active; any other value → inactive (PostHog compares
 *   with `"true"`).
 * - `evaluation_runtime`: the list enum says `both` where stored values say `all`; `both` is
 *   mapped to `all`, other values match exactly.
 * - `created_by_id`: one id or a comma-separated list; non-integers are ignored.
 * - `tags`, `excluded_properties`: JSON lists; anything else is 400 (PostHog: a 500).
 * - Other unknown values (`type=nope`, `active=maybe`, a bad `limit`) follow PostHog, as above:
 *   SDKs and scripts written against PostHog get the same pages here.
 * @throws ApiError 400 attr `order` for an order outside {@link ORDER_FIELDS}; attr `tags` /
 *   `excluded_properties` for a value that is not a JSON list.
 */
export function parseFlagListQuery(q: URLSearchParams): FlagListQuery {
  const out: FlagListQuery = { order: { field: 'created_at', desc: true } };
  const active = q.get('active');
  if (active !== null && active !== '') out.active = active === 'STALE' ? 'stale' : active === 'true';
  const type = q.get('type');
  if (type === 'boolean' || type === 'multivariant' || type === 'experiment' || type === 'remote_config') out.type = type;
  const search = q.get('search');
  if (search !== null && search.trim() !== '') out.search = search.trim();
  const tags = jsonList(q, 'tags');
  if (tags) out.tags = tags.filter((t): t is string | number => typeof t === 'string' || typeof t === 'number').map((t) => String(t).trim().toLowerCase());
  const excluded = jsonList(q, 'excluded_properties');
  if (excluded) out.excludedKeys = excluded.filter((k): k is string | number => typeof k === 'string' || typeof k === 'number').map(String);
  const createdBy = q.get('created_by_id');
  if (createdBy !== null && createdBy.trim() !== '') {
    out.createdByIds = createdBy.split(',').map((s) => s.trim()).filter((s) => /^\d+$/.test(s)).map(Number);
    if (out.createdByIds.length === 0) out.createdByIds = [-1];
  }
  const runtime = q.get('evaluation_runtime');
  if (runtime !== null && runtime !== '') out.evaluationRuntime = runtime === 'both' ? 'all' : runtime;
  const het = q.get('has_evaluation_tags');
  if (het !== null && het !== '') out.hasEvaluationTags = ['true', '1', 'yes'].includes(het.toLowerCase());
  const order = q.get('order');
  if (order !== null && order !== '') {
    const desc = order.startsWith('-');
    const field = desc ? order.slice(1) : order;
    if (!(ORDER_FIELDS as readonly string[]).includes(field)) {
      throw errors.validation(`Invalid order "${order}". Allowed: ${ORDER_FIELDS.join(', ')} (prefix with - for descending).`, 'order', 'invalid_input');
    }
    out.order = { field: field as OrderField, desc };
  }
  return out;
}
