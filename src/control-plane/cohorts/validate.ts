/**
 * Validation of cohort bodies (PostHog's CohortSerializer, DRF field rules).
 * Structural checks only; what needs the database (referenced cohorts exist, no reference loop,
 * the filters compile for evaluation) is the service's (service.ts).
 *
 * Filters are `{properties: {type: "AND"|"OR", values: [...]}}`; a value is a nested group or a
 * leaf: `{type: "person", key, value, operator}`, `{type: "cohort", key: "id", value: <id>}`, or
 * `{type: "behavioral", value: "performed_event", key: <event>, event_type: "events",
 * time_value, time_interval | explicit_datetime}`.
 */
import { type JsonObject, isJsonObject, pyType } from '../../json-shapes.js';
import { errors } from '../../errors.js';
import { describeRegexProblem } from '../../evaluation/properties/regex.js';
import { distinctIdsFromCsv } from './csv.js';
import type { CohortInput } from './types.js';

/** Longest cohort name (PostHog CharField max_length). */
export const NAME_MAX_LENGTH = 400;
/** Longest description. */
export const DESCRIPTION_MAX_LENGTH = 1000;
/** Behavioural leaf values supported when calculating membership from stored events. */
export const BEHAVIORAL_VALUES: readonly string[] = ['performed_event', 'performed_event_multiple'];

type Obj = JsonObject;

/** DRF BooleanField (multipart bodies send booleans as text). */
function bool(v: unknown, attr: string): boolean {
  if (v === true || v === 'true' || v === 'True' || v === 1 || v === '1') return true;
  if (v === false || v === 'false' || v === 'False' || v === 0 || v === '0') return false;
  throw errors.validation('Must be a valid boolean.', attr, 'invalid');
}

function text(v: unknown, attr: string, max: number): string {
  if (v === null) return '';
  if (typeof v !== 'string' && typeof v !== 'number') throw errors.validation('Not a valid string.', attr, 'invalid');
  const s = String(v).trim();
  if (s.length > max) throw errors.validation(`Ensure this field has no more than ${max} characters.`, attr, 'max_length');
  return s;
}

/**
 * Walks a filter group, checking each node's shape and that `regex` / `not_regex` patterns
 * compile for evaluation (src/evaluation/properties/regex.ts: syntax and program size).
 * @throws ApiError 400 attr `filters` (code `invalid_regex` for a pattern).
 */
function checkGroup(node: unknown, depth: number): void {
  if (depth > 32) throw errors.validation('Cohort filters are nested too deeply.', 'filters');
  if (!isJsonObject(node)) throw errors.validation('Each filter must be an object.', 'filters');
  if (Array.isArray(node.values)) {
    if (node.type !== 'AND' && node.type !== 'OR') throw errors.validation('A filter group\'s type must be "AND" or "OR".', 'filters');
    for (const v of node.values) checkGroup(v, depth + 1);
    return;
  }
  const type = node.type;
  if (type === 'behavioral') {
    if (!BEHAVIORAL_VALUES.includes(String(node.value))) {
      throw errors.validation(`Behavioral filters support ${BEHAVIORAL_VALUES.join(', ')}; got "${String(node.value)}".`, 'filters');
    }
    if (typeof node.key !== 'string' && typeof node.key !== 'number') throw errors.validation('A behavioral filter needs the event name in `key`.', 'filters');
    if (node.event_type !== undefined && node.event_type !== 'events') throw errors.validation('Behavioral filters support event_type "events".', 'filters');
    return;
  }
  if (type === 'cohort') {
    const id = Number(node.value);
    if (!Number.isSafeInteger(id) || id <= 0) throw errors.validation('A cohort filter\'s value must be a cohort id.', 'filters');
    return;
  }
  if (type !== 'person') throw errors.validation(`Filter type "${String(type)}" is not supported in cohorts (person, cohort, behavioral).`, 'filters');
  if (typeof node.key !== 'string' || node.key === '') throw errors.validation('A person filter needs a property `key`.', 'filters');
  if ((node.operator === 'regex' || node.operator === 'not_regex') && typeof node.value === 'string') {
    // A pattern the evaluation engines refuse (bad syntax, oversized program) would never match.
    const problem = describeRegexProblem(node.value);
    if (problem !== null) throw errors.validation(`Invalid regex pattern ${node.value} (person property "${node.key}"): ${problem}.`, 'filters', 'invalid_regex');
  }
}

/**
 * Validates `body` (JSON or multipart fields) for a create (`mode` create) or update.
 * @throws ApiError 400 naming the field.
 */
export function validateCohortBody(body: unknown, mode: 'create' | 'update'): CohortInput {
  if (body === undefined) body = {};
  if (!isJsonObject(body)) throw errors.validation(`Invalid data. Expected a dictionary, but got ${pyType(body)}.`, null);
  const b = body;
  const out: CohortInput = {};
  if ('name' in b) out.name = text(b.name, 'name', NAME_MAX_LENGTH);
  if ('description' in b) out.description = text(b.description, 'description', DESCRIPTION_MAX_LENGTH);
  if ('is_static' in b) out.is_static = bool(b.is_static, 'is_static');
  if ('deleted' in b) out.deleted = bool(b.deleted, 'deleted');
  if ('_create_in_folder' in b) out.create_in_folder = b._create_in_folder === null ? null : text(b._create_in_folder, '_create_in_folder', 400);
  if ('query' in b) out.query = b.query;
  if ('groups' in b) {
    if (!Array.isArray(b.groups)) throw errors.validation(`Expected a list of items but got type "${pyType(b.groups)}".`, 'groups', 'not_a_list');
    out.groups = b.groups;
  }
  if ('filters' in b) {
    let f = b.filters;
    if (typeof f === 'string') { // multipart sends JSON as text
      try { f = JSON.parse(f); } catch { throw errors.validation('Value must be valid JSON.', 'filters', 'invalid'); }
    }
    if (!isJsonObject(f)) throw errors.validation(`Expected a dictionary of items but got type "${pyType(f)}".`, 'filters', 'not_a_dict');
    if (f.properties !== undefined) checkGroup(f.properties, 0);
    out.filters = f;
  }
  if ('csv' in b && b.csv !== undefined && b.csv !== null) {
    if (typeof b.csv !== 'string' && !Buffer.isBuffer(b.csv)) throw errors.validation('Upload the CSV as a file field named "csv".', 'csv');
    out.csvDistinctIds = distinctIdsFromCsv(b.csv);
  }
  if (mode === 'create' && out.csvDistinctIds && out.is_static === false) {
    throw errors.validation('A CSV can only be uploaded to a static cohort.', 'csv');
  }
  return out;
}

/** Cohort ids a filter tree references (`type: "cohort"` leaves). */
export function referencedCohortIds(filters: unknown, out: Set<number> = new Set()): Set<number> {
  if (Array.isArray(filters)) for (const v of filters) referencedCohortIds(v, out);
  else if (isJsonObject(filters)) {
    if (filters.type === 'cohort') {
      const id = Number(filters.value);
      if (Number.isSafeInteger(id)) out.add(id);
    }
    for (const k of ['properties', 'values']) if (k in filters) referencedCohortIds(filters[k], out);
  }
  return out;
}

/** True when the filter tree holds a behavioural leaf. */
export function hasBehavioralLeaf(filters: unknown): boolean {
  if (Array.isArray(filters)) return filters.some(hasBehavioralLeaf);
  if (!isJsonObject(filters)) return false;
  if (filters.type === 'behavioral') return true;
  return hasBehavioralLeaf(filters.properties) || hasBehavioralLeaf(filters.values);
}
