/**
 * Field validation of experiment bodies (research/posthog-management-api.md §3.1–§3.3, §3.9,
 * §3.11; PostHog's ExperimentSerializer). Rules that need stored state (the flag, the holdout,
 * saved metrics, the lifecycle) are the service's (service.ts); everything here is one field at
 * a time, with PostHog's messages where research records them.
 */
import { type JsonObject, isJsonObject, pyType } from '../../json-shapes.js';
import { errors } from '../../errors.js';
import { validateMetricList } from './metrics.js';
import { CONCLUSIONS, EXPERIMENT_TYPES } from './types.js';

type Obj = JsonObject;

/** Most variants an experiment's flag may have (research §3.2 step 1: "less than 21"). */
export const MAX_VARIANTS = 20;
const NAME_MAX = 400;
const DESCRIPTION_MAX = 3000;
const ISO_DATETIME = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** A validated experiment body: only the fields that were sent. */
export interface ExperimentInput {
  name?: string;
  description?: string | null;
  start_date?: Date | null;
  end_date?: Date | null;
  feature_flag_key?: string;
  holdout_id?: number | null;
  parameters?: Obj | null;
  secondary_metrics?: unknown[];
  saved_metrics_ids?: { id: number; metadata: Obj }[];
  filters?: Obj;
  archived?: boolean;
  deleted?: boolean;
  type?: string;
  exposure_criteria?: Obj | null;
  metrics?: Obj[];
  metrics_secondary?: Obj[];
  stats_config?: Obj | null;
  only_count_matured_users?: boolean;
  create_in_folder?: string | null;
  conclusion?: string | null;
  conclusion_comment?: string | null;
  primary_metrics_ordered_uuids?: string[] | null;
  secondary_metrics_ordered_uuids?: string[] | null;
}

function text(v: unknown, attr: string, max: number, nullable: boolean): string | null {
  if (v === null) {
    if (nullable) return null;
    throw errors.validation('This field may not be null.', attr, 'null');
  }
  if (typeof v !== 'string' && typeof v !== 'number') throw errors.validation('Not a valid string.', attr, 'invalid');
  const s = String(v);
  if (s.length > max) throw errors.validation(`Ensure this field has no more than ${max} characters.`, attr, 'max_length');
  return s;
}

function bool(v: unknown, attr: string): boolean {
  if (v === true || v === 'true' || v === 1 || v === 'True') return true;
  if (v === false || v === 'false' || v === 0 || v === 'False') return false;
  throw errors.validation('Must be a valid boolean.', attr, 'invalid');
}

function date(v: unknown, attr: string): Date | null {
  if (v === null || v === '') return null;
  if (typeof v === 'string' && ISO_DATETIME.test(v.trim())) {
    const s = v.trim();
    const d = new Date(s.length === 10 ? `${s}T00:00:00Z` : /(Z|[+-]\d{2}:?\d{2})$/.test(s) ? s.replace(' ', 'T') : `${s.replace(' ', 'T')}Z`);
    if (!Number.isNaN(d.getTime())) return d;
  }
  throw errors.validation('Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].', attr, 'invalid');
}

function object(v: unknown, attr: string, nullable: boolean): Obj | null {
  if (v === null && nullable) return null;
  if (!isJsonObject(v)) throw errors.validation(`Expected a dictionary of items but got type "${pyType(v)}".`, attr, 'not_a_dict');
  return v;
}

function uuidList(v: unknown, attr: string): string[] | null {
  if (v === null) return null;
  if (!Array.isArray(v) || !v.every((u) => typeof u === 'string')) throw errors.validation('Expected a list of metric UUIDs.', attr, 'invalid');
  return v as string[];
}

/** `parameters` (research §3.2 step 1). */
function parameters(v: unknown): Obj | null {
  const p = object(v, 'parameters', true);
  if (p === null) return null;
  const variants = p.feature_flag_variants;
  if (variants !== undefined && variants !== null) {
    if (!Array.isArray(variants)) throw errors.validation('feature_flag_variants must be a list.', 'parameters');
    if (variants.length > MAX_VARIANTS) throw errors.validation('Feature flag variants must be less than 21', 'parameters');
    if (variants.length > 0) {
      if (!variants.every((x) => isJsonObject(x) && typeof x.key === 'string' && x.key !== '')) throw errors.validation('Each variant needs a string "key".', 'parameters');
      if (!variants.some((x) => (x as Obj).key === 'control')) throw errors.validation('Feature flag variants must contain a control variant', 'parameters');
      const keys = new Set(variants.map((x) => (x as Obj).key));
      if (keys.size !== variants.length) throw errors.validation('Variant keys must be unique.', 'parameters');
      for (const x of variants as Obj[]) {
        const pct = x.rollout_percentage;
        if (pct !== undefined && (typeof pct !== 'number' || pct < 0 || pct > 100)) throw errors.validation('Variant rollout_percentage must be a number from 0 to 100.', 'parameters');
      }
    }
  }
  const agg = p.aggregation_group_type_index;
  if (agg !== undefined && agg !== null && (!Number.isInteger(agg) || (agg as number) < 0 || (agg as number) > 4)) {
    throw errors.validation('aggregation_group_type_index must be an integer from 0 to 4.', 'parameters');
  }
  return p;
}

/** `exposure_criteria` (research §3.9). */
function exposureCriteria(v: unknown): Obj | null {
  const e = object(v, 'exposure_criteria', true);
  if (e === null) return null;
  if (e.filterTestAccounts !== undefined && typeof e.filterTestAccounts !== 'boolean') throw errors.validation('filterTestAccounts must be a boolean', 'exposure_criteria');
  const c = e.exposure_config;
  if (c !== undefined && c !== null) {
    const ok = isJsonObject(c) && ((c.kind === 'ExperimentEventExposureConfig' && typeof c.event === 'string' && c.event !== ''
      && (c.properties === undefined || Array.isArray(c.properties))) || (c.kind === 'ActionsNode' && Number.isInteger(c.id)));
    if (!ok) throw errors.validation('Invalid exposure criteria', 'exposure_criteria');
  }
  const mvh = e.multiple_variant_handling;
  if (mvh !== undefined && mvh !== null && mvh !== 'exclude' && mvh !== 'first_seen') {
    throw errors.validation('multiple_variant_handling must be "exclude" or "first_seen".', 'exposure_criteria');
  }
  return e;
}

/** `stats_config` (research §3.9). */
function statsConfig(v: unknown): Obj | null {
  const s = object(v, 'stats_config', true);
  if (s === null) return null;
  if (s.method !== undefined && s.method !== 'bayesian' && s.method !== 'frequentist') throw errors.validation('"method" must be "bayesian" or "frequentist".', 'stats_config');
  return s;
}

/** `saved_metrics_ids` (research §3.11 "Links"). */
function savedMetricIds(v: unknown): { id: number; metadata: Obj }[] {
  if (v === null) return [];
  if (!Array.isArray(v)) throw errors.validation('Saved metrics must be a list', 'saved_metrics_ids');
  return v.map((m) => {
    if (!isJsonObject(m)) throw errors.validation('Saved metric must be an object', 'saved_metrics_ids');
    if (m.id === undefined || m.id === null) throw errors.validation('Saved metric must have an id', 'saved_metrics_ids');
    const id = Number(m.id);
    if (!Number.isSafeInteger(id)) throw errors.validation('Saved metric does not exist or does not belong to this project', 'saved_metrics_ids');
    let metadata: Obj = {};
    if (m.metadata !== undefined && m.metadata !== null) {
      if (!isJsonObject(m.metadata)) throw errors.validation('Metadata must be an object', 'saved_metrics_ids');
      if (!('type' in m.metadata)) throw errors.validation('Metadata must have a type key', 'saved_metrics_ids');
      metadata = m.metadata;
    }
    return { id, metadata };
  });
}

/**
 * Validates the fields of `body` one by one. @throws ApiError 400 naming the field (or null
 * for a rule across fields).
 */
export function validateExperimentBody(body: unknown): ExperimentInput {
  if (body === undefined) body = {};
  if (!isJsonObject(body)) throw errors.validation(`Invalid data. Expected a dictionary, but got ${pyType(body)}.`, null);
  const b = body;
  const out: ExperimentInput = {};
  const has = (k: string) => Object.prototype.hasOwnProperty.call(b, k) && b[k] !== undefined;
  if (has('name')) {
    out.name = text(b.name, 'name', NAME_MAX, false)!;
    if (out.name.trim() === '') throw errors.validation('This field may not be blank.', 'name', 'blank');
  }
  if (has('description')) out.description = text(b.description, 'description', DESCRIPTION_MAX, true);
  if (has('start_date')) out.start_date = date(b.start_date, 'start_date');
  if (has('end_date')) out.end_date = date(b.end_date, 'end_date');
  if (has('feature_flag_key')) {
    out.feature_flag_key = text(b.feature_flag_key, 'feature_flag_key', 400, false)!.trim();
    if (out.feature_flag_key === '') throw errors.validation('This field may not be blank.', 'feature_flag_key', 'blank');
  }
  if (has('holdout_id')) {
    if (b.holdout_id === null) out.holdout_id = null;
    else {
      const id = Number(b.holdout_id);
      if (!Number.isSafeInteger(id) || typeof b.holdout_id === 'boolean') throw errors.validation('Incorrect type. Expected pk value, received ' + pyType(b.holdout_id) + '.', 'holdout_id', 'incorrect_type');
      out.holdout_id = id;
    }
  }
  if (has('parameters')) out.parameters = parameters(b.parameters);
  if (has('secondary_metrics')) {
    if (b.secondary_metrics !== null && !Array.isArray(b.secondary_metrics)) throw errors.validation(`Expected a list of items but got type "${pyType(b.secondary_metrics)}".`, 'secondary_metrics', 'not_a_list');
    out.secondary_metrics = (b.secondary_metrics as unknown[] | null) ?? [];
  }
  if (has('saved_metrics_ids')) out.saved_metrics_ids = savedMetricIds(b.saved_metrics_ids);
  if (has('filters')) {
    const f = object(b.filters, 'filters', true) ?? {};
    const props = f.properties;
    if (props !== undefined && props !== null && !(Array.isArray(props) && props.length === 0) && !(isJsonObject(props) && Object.keys(props).length === 0)) {
      throw errors.validation('Experiments do not support global filter properties', 'filters');
    }
    out.filters = f;
  }
  if (has('archived')) out.archived = bool(b.archived, 'archived');
  if (has('deleted')) out.deleted = bool(b.deleted, 'deleted');
  if (has('type')) {
    if (b.type === null || !(EXPERIMENT_TYPES as readonly unknown[]).includes(b.type)) throw errors.validation(`"${String(b.type ?? '')}" is not a valid choice.`, 'type', 'invalid_choice');
    out.type = b.type as string;
  }
  if (has('exposure_criteria')) out.exposure_criteria = exposureCriteria(b.exposure_criteria);
  if (has('metrics')) out.metrics = validateMetricList(b.metrics, 'metrics');
  if (has('metrics_secondary')) out.metrics_secondary = validateMetricList(b.metrics_secondary, 'metrics_secondary');
  if (has('stats_config')) out.stats_config = statsConfig(b.stats_config);
  // PostHog's serializer field is a non-null boolean; on create a null means the default (false).
  if (has('only_count_matured_users') && b.only_count_matured_users !== null) out.only_count_matured_users = bool(b.only_count_matured_users, 'only_count_matured_users');
  if (has('_create_in_folder')) out.create_in_folder = text(b._create_in_folder, '_create_in_folder', 400, true);
  if (has('conclusion')) {
    if (b.conclusion !== null && !(CONCLUSIONS as readonly unknown[]).includes(b.conclusion)) throw errors.validation(`"${String(b.conclusion)}" is not a valid choice.`, 'conclusion', 'invalid_choice');
    out.conclusion = b.conclusion as string | null;
  }
  if (has('conclusion_comment')) out.conclusion_comment = text(b.conclusion_comment, 'conclusion_comment', 10_000, true);
  if (has('primary_metrics_ordered_uuids')) out.primary_metrics_ordered_uuids = uuidList(b.primary_metrics_ordered_uuids, 'primary_metrics_ordered_uuids');
  if (has('secondary_metrics_ordered_uuids')) out.secondary_metrics_ordered_uuids = uuidList(b.secondary_metrics_ordered_uuids, 'secondary_metrics_ordered_uuids');
  return out;
}
