/**
 * Validation of a create (POST) or update (PATCH/PUT) body into a {@link FlagInput}
 * (research/posthog-management-api.md §1.1–1.2; PostHog `FeatureFlagSerializer`).
 *
 * Fields are checked one by one in PostHog's declared order (name, key, filters, deleted, active,
 * created_at, version, …), each with Django REST framework's message and code, so the first
 * error reported is the one PostHog would report; then the cross-field rule
 * (evaluation_tags ⊆ tags, attr null as a DRF non-field error). Unknown and read-only fields are
 * ignored. Database facts (key uniqueness, cohorts, other flags) come from injected lookups.
 */
import { pyType } from '../../json-shapes.js';
import { errors } from '../../errors.js';
import { boolField, charField, listField, tagify } from '../http/drf-fields.js';
export { tagify } from '../http/drf-fields.js';
import { validateFilters, type FilterLookups } from './validate-filters.js';
import {
  BUCKETING_IDENTIFIERS, CREATION_CONTEXTS, EVALUATION_RUNTIMES, KEY_MAX_LENGTH,
  type FlagInput, type FlagRow,
} from './types.js';

/** Lookups validation needs, bound to the write's transaction. */
export interface FlagLookups extends FilterLookups {
  /** True when another live flag of the project (not `excludeId`) has `key`. */
  keyTaken(key: string, excludeId: number | null): Promise<boolean>;
  /** True when `id` is a live dashboard of the project. */
  dashboardExists(id: number): Promise<boolean>;
}

/** What validation needs to know about the write. */
export interface ValidateContext {
  mode: 'create' | 'update';
  /** The stored flag on update, null on create. */
  current: FlagRow | null;
  lookups: FlagLookups;
}

/** PostHog's key format (research §1.2). */
const KEY_PATTERN = /^[a-zA-Z0-9_-]+$/;
const DATETIME_FORMAT_HINT = 'Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].';
/** ISO 8601 date-time as DRF's DateTimeField parses it (a bare date is accepted as midnight UTC). */
const ISO_DATETIME = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

type Obj = Record<string, unknown>;

function choiceField<T extends string>(v: unknown, attr: string, choices: readonly T[], nullable = false): T | null {
  if (v === null && nullable) return null;
  if (typeof v === 'string' && (choices as readonly string[]).includes(v)) return v as T;
  throw errors.validation(`"${v === null ? '' : String(v)}" is not a valid choice.`, attr, 'invalid_choice');
}

function dateTimeField(v: unknown, attr: string, nullable: boolean): Date | null {
  if (v === null) {
    if (nullable) return null;
    throw errors.validation('This field may not be null.', attr, 'null');
  }
  if (typeof v === 'string' && ISO_DATETIME.test(v.trim())) {
    const s = v.trim();
    const d = new Date(s.length === 10 ? `${s}T00:00:00Z` : /(Z|[+-]\d{2}:?\d{2})$/.test(s) ? s.replace(' ', 'T') : `${s.replace(' ', 'T')}Z`);
    if (!Number.isNaN(d.getTime())) return d;
  }
  throw errors.validation(DATETIME_FORMAT_HINT, attr);
}

/**
 * Validates `body` for a create or update and returns the normalised fields it sets.
 * @throws ApiError 400 (validation_error) naming the first offending field in `attr`.
 */
export async function validateFlagBody(body: unknown, ctx: ValidateContext): Promise<FlagInput> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw errors.validation(`Invalid data. Expected a dictionary, but got ${pyType(body)}.`, null);
  }
  const b = body as Obj;
  const has = (f: string) => Object.prototype.hasOwnProperty.call(b, f) && b[f] !== undefined;
  const out: FlagInput = {};

  if (has('name')) out.name = charField(b.name, 'name', { allowBlank: true });

  if (has('key')) {
    const key = charField(b.key, 'key', { allowBlank: false, maxLength: KEY_MAX_LENGTH });
    if (await ctx.lookups.keyTaken(key, ctx.current?.id ?? null)) {
      throw errors.validation('There is already a feature flag with this key.', 'key', 'unique');
    }
    if (!KEY_PATTERN.test(key)) throw errors.validation('Only letters, numbers, hyphens (-) & underscores (_) are allowed.', 'key', 'invalid_key');
    out.key = key;
  } else if (ctx.mode === 'create') {
    throw errors.required('key');
  }

  if (has('filters')) {
    const filters = await validateFilters(b.filters, {
      mode: ctx.mode,
      flag: { id: ctx.current?.id ?? null, key: out.key ?? ctx.current?.key ?? '' },
      lookups: ctx.lookups,
    });
    if (filters !== undefined) out.filters = filters;
  }

  if (has('deleted')) out.deleted = boolField(b.deleted, 'deleted')!;
  if (has('active')) out.active = boolField(b.active, 'active')!;
  if (has('created_at')) out.created_at = dateTimeField(b.created_at, 'created_at', false)!;
  if (has('version')) {
    const v = b.version;
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*-?\d+\s*$/.test(v) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n)) throw errors.validation('A valid integer is required.', 'version');
    out.version = n;
  }
  if (has('ensure_experience_continuity')) out.ensure_experience_continuity = boolField(b.ensure_experience_continuity, 'ensure_experience_continuity', true);
  if (has('rollback_conditions')) out.rollback_conditions = b.rollback_conditions;
  if (has('performed_rollback')) out.performed_rollback = boolField(b.performed_rollback, 'performed_rollback', true);
  if (has('tags')) out.tags = tagify(listField(b.tags, 'tags'), 'tags');
  if (has('evaluation_tags')) out.evaluation_tags = tagify(listField(b.evaluation_tags, 'evaluation_tags'), 'evaluation_tags');
  if (has('analytics_dashboards')) {
    // DRF PrimaryKeyRelatedField: live dashboards of the project, by id.
    const ids: number[] = [];
    for (const d of listField(b.analytics_dashboards, 'analytics_dashboards')) {
      if (typeof d === 'boolean' || (typeof d !== 'number' && typeof d !== 'string')) {
        throw errors.validation(`Incorrect type. Expected pk value, received ${pyType(d)}.`, 'analytics_dashboards', 'incorrect_type');
      }
      const n = Number(d);
      if (!Number.isSafeInteger(n) || !(await ctx.lookups.dashboardExists(n))) {
        throw errors.validation(`Invalid pk "${String(d)}" - object does not exist.`, 'analytics_dashboards', 'does_not_exist');
      }
      if (!ids.includes(n)) ids.push(n);
    }
    out.analytics_dashboards = ids;
  }
  if (has('has_enriched_analytics')) out.has_enriched_analytics = boolField(b.has_enriched_analytics, 'has_enriched_analytics', true);
  if (has('creation_context')) out.creation_context = choiceField(b.creation_context, 'creation_context', CREATION_CONTEXTS)!;
  if (has('is_remote_configuration')) out.is_remote_configuration = boolField(b.is_remote_configuration, 'is_remote_configuration')!;
  if (has('has_encrypted_payloads')) out.has_encrypted_payloads = boolField(b.has_encrypted_payloads, 'has_encrypted_payloads')!;
  if (has('evaluation_runtime')) out.evaluation_runtime = choiceField(b.evaluation_runtime, 'evaluation_runtime', EVALUATION_RUNTIMES)!;
  if (has('bucketing_identifier')) out.bucketing_identifier = choiceField(b.bucketing_identifier, 'bucketing_identifier', BUCKETING_IDENTIFIERS, true);
  if (has('last_called_at')) out.last_called_at = dateTimeField(b.last_called_at, 'last_called_at', true);
  if (has('_create_in_folder')) out.create_in_folder = charField(b._create_in_folder, '_create_in_folder', { allowBlank: true });
  if (has('_should_create_usage_dashboard')) out.should_create_usage_dashboard = boolField(b._should_create_usage_dashboard, '_should_create_usage_dashboard')!;

  // Cross-field rule (a DRF non-field error, so attr null). Checked against the tags the flag
  // will have after the write: PostHog compares with the request's `tags` only, which rejects a
  // PATCH that sends evaluation_tags alone; comparing with the effective tags fixes that.
  if (out.evaluation_tags !== undefined && out.evaluation_tags.length > 0) {
    const tags = new Set(out.tags ?? ctx.current?.tags ?? []);
    const invalid = out.evaluation_tags.filter((t) => !tags.has(t)).sort();
    if (invalid.length > 0) {
      throw errors.validation(`Evaluation tags must be a subset of tags. Invalid evaluation tags: ${invalid.join(', ')}`, null);
    }
  }

  if (has('original_flag') && b.original_flag !== null && typeof b.original_flag === 'object' && !Array.isArray(b.original_flag)) {
    out.original_flag = b.original_flag as Obj;
  }
  return out;
}
