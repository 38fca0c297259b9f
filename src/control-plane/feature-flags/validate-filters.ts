/**
 * Validation and normalisation of a flag's `filters` on create and update
 * (research/posthog-management-api.md §1.2 "filters", §1.3 shape; PostHog
 * `posthog/api/feature_flag.py` `validate_filters`). Every failure is a 400 validation error with
 * attr `filters`; the first failing rule wins, in PostHog's order:
 *
 * 0. shape (newer PostHog): `early_exit` a boolean, groups a list of objects, properties lists of objects with a key,
 *    group `rollout_percentage` a number 0–100 or null, `variant` a string or null, variants
 *    objects with a string key and a percentage 0–100, `aggregation_group_type_index` int or null;
 * 1. create needs at least one condition set;
 * 2. property types fit the aggregation (person/cohort/flag, or group of the same index);
 *    flag properties use `flag_evaluates_to`; flag dependencies (dependencies.ts);
 * 3. variant percentages sum to 100;
 * 4. per group: variant override exists; per property: ≤1000 list values, cohort exists and is
 *    not behavioural (transitively), dates parse, string-only operators, `in`/`not_in` only on
 *    cohorts;
 * 5. payloads: an object of JSON texts; non-string values are normalised to Python-style JSON
 *    text; keys are variant keys (multivariate) or only `"true"` (boolean);
 * 6. (beyond PostHog) what the evaluator would fail on: every person/group/event
 *    property compiles with the evaluator's own `compilePropertyFilter` in strict mode (unknown
 *    operator, bad semver, date or between bounds…), and every group type index the flag uses
 *    exists in the project's group type mapping. A flag the API accepts never makes /flags
 *    answer `errorsWhileComputingFlags` nor `switchyard evaluate` exit 2.
 *
 * IO happens only through the injected lookups, so the rules are testable without a database.
 */
import { pyType } from '../../json-shapes.js';
import { errors } from '../../errors.js';
import { isValidFilterDate } from './dates.js';
import { checkFlagDependencies, type LiveFlagLookup } from './dependencies.js';
import { pythonJsonDumps } from './json-text.js';
import { pyStr } from './py-text.js';
import { MAX_PROPERTY_VALUES, type Filters } from './types.js';
import { MAX_JSON_DEPTH, tooDeep } from '../../limits.js';
import { describeRegexProblem } from '../../evaluation/properties/regex.js';
import { compilePropertyFilter, PropertyFilterError, type PropertyFilter } from '../../evaluation/properties/index.js';

/** A cohort as the checks need it (any cohort of the project, deleted included, as upstream). */
export interface CohortInfo { id: number; name: string; filters: Record<string, unknown> }

/** Database lookups used by the filter rules (bound to the write's transaction). */
export interface FilterLookups {
  cohort(id: number): Promise<CohortInfo | null>;
  liveFlag: LiveFlagLookup;
  /** The project's group type indexes (group_type_mappings). */
  groupTypeIndexes(): Promise<ReadonlySet<number>>;
}

/** What the rules need to know about the write. */
export interface FilterContext {
  mode: 'create' | 'update';
  /** The flag's id (null on create) and its key after the write. */
  flag: { id: number | null; key: string };
  lookups: FilterLookups;
}

/** Operators whose value must be a string. */
const STRING_OPERATORS = new Set(['regex', 'icontains', 'not_regex', 'not_icontains', 'gt', 'gte', 'lt', 'lte']);
const PERSON_FLAG_PROPERTY_TYPES = new Set(['person', 'cohort', 'flag']);

type Obj = Record<string, unknown>;

function fail(detail: string, code = 'invalid_input'): never {
  throw errors.validation(detail, 'filters', code);
}

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Python truthiness of a JSON value (`{}`, `[]`, `""`, `0`, null are false). */
function truthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isObj(v)) return Object.keys(v).length > 0;
  return true;
}


function isPercentage(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 100;
}

/** Rule 0: shape checks that keep the later rules (and the evaluator) from meeting garbage. */
function checkShape(filters: Obj): void {
  const agg = filters.aggregation_group_type_index;
  if (agg !== undefined && agg !== null && !(typeof agg === 'number' && Number.isInteger(agg))) {
    fail('aggregation_group_type_index must be an integer or null');
  }
  if (filters.early_exit !== undefined && filters.early_exit !== null && typeof filters.early_exit !== 'boolean') {
    fail('early_exit must be a boolean');
  }
  const groups = filters.groups;
  if (groups !== undefined && !Array.isArray(groups)) fail('groups must be a list');
  for (const [i, g] of ((groups as unknown[] | undefined) ?? []).entries()) {
    if (!isObj(g)) fail(`groups[${i}] must be an object`);
    const rp = g.rollout_percentage;
    if (rp !== undefined && rp !== null) {
      if (typeof rp !== 'number' || !Number.isFinite(rp)) fail(`groups[${i}].rollout_percentage must be a number or null`);
      if (rp < 0 || rp > 100) fail(`groups[${i}].rollout_percentage must be between 0 and 100, got ${rp}`);
    }
    if (g.variant !== undefined && g.variant !== null && typeof g.variant !== 'string') fail(`groups[${i}].variant must be a string or null`);
    const gi = g.aggregation_group_type_index;
    if (gi !== undefined && gi !== null && !(typeof gi === 'number' && Number.isInteger(gi))) {
      fail(`groups[${i}].aggregation_group_type_index must be an integer or null`);
    }
    if (g.properties !== undefined && g.properties !== null && !Array.isArray(g.properties)) fail(`groups[${i}].properties must be a list`);
    for (const [j, p] of ((g.properties as unknown[] | null | undefined) ?? []).entries()) {
      if (!isObj(p)) fail(`groups[${i}].properties[${j}] must be an object`);
      if (p.key === undefined || p.key === null) fail(`groups[${i}].properties[${j}].key is required`);
    }
  }
  const mv = filters.multivariate;
  if (mv !== undefined && mv !== null) {
    if (!isObj(mv)) fail('multivariate must be an object or null');
    if (mv.variants !== undefined && mv.variants !== null && !Array.isArray(mv.variants)) fail('multivariate.variants must be a list');
    for (const [i, v] of ((mv.variants as unknown[] | null | undefined) ?? []).entries()) {
      if (!isObj(v) || typeof v.key !== 'string' || v.key === '') fail(`multivariate.variants[${i}].key must be a non-empty string`);
      if (!isPercentage(v.rollout_percentage)) {
        fail(`multivariate.variants[${i}].rollout_percentage must be a number between 0 and 100, got ${pyStr(v.rollout_percentage ?? null)}`);
      }
    }
  }
}

function groupsOf(filters: Obj): Obj[] {
  return (Array.isArray(filters.groups) ? filters.groups : []) as Obj[];
}

function propertiesOf(group: Obj): Obj[] {
  return (Array.isArray(group.properties) ? group.properties : []) as Obj[];
}

/** Property type as PostHog's `Property` class defaults it. */
function propType(p: Obj): unknown {
  return p.type ?? 'event';
}

/** Leaves of a cohort definition (new `{properties: {type, values}}` and legacy `{groups: [...]}` shapes). */
function cohortLeaves(node: unknown, out: Obj[] = []): Obj[] {
  if (Array.isArray(node)) {
    for (const n of node) cohortLeaves(n, out);
  } else if (isObj(node)) {
    if (Array.isArray(node.values)) cohortLeaves(node.values, out);
    else if (isObj(node.properties) || Array.isArray(node.properties) || Array.isArray(node.groups)) {
      cohortLeaves(node.properties, out);
      cohortLeaves(node.groups, out);
      // Legacy behavioural groups match on an action or event.
      if (node.action_id !== undefined || node.event_id !== undefined) out.push({ type: 'behavioral' });
    } else {
      if (node.action_id !== undefined || node.event_id !== undefined) out.push({ type: 'behavioral' });
      else out.push(node);
    }
  }
  return out;
}

/** Cohort rule: exists in the project; neither it nor any cohort it references is behavioural. */
async function checkCohort(value: unknown, lookups: FilterLookups): Promise<void> {
  const id = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  const root = Number.isSafeInteger(id) ? await lookups.cohort(id) : null;
  if (!root) fail(`Cohort with id ${pyStr(value)} does not exist`, 'cohort_does_not_exist');
  const seen = new Set<number>([root.id]);
  const queue = [root];
  while (queue.length > 0) {
    const c = queue.shift()!;
    for (const leaf of cohortLeaves(c.filters)) {
      if (leaf.type === 'behavioral') fail(`Cohort '${c.name}' with filters on events cannot be used in feature flags.`, 'behavioral_cohort_found');
      if (leaf.type === 'cohort') {
        const depId = typeof leaf.value === 'number' ? leaf.value : Number(leaf.value);
        if (!Number.isSafeInteger(depId) || seen.has(depId)) continue;
        seen.add(depId);
        const dep = await lookups.cohort(depId);
        if (dep) queue.push(dep);
      }
    }
  }
}

/**
 * Validates `raw` filters for a create or update and returns the normalised filters to store,
 * or `undefined` when a PATCH sent filters without `groups` (PostHog then keeps the stored
 * filters, research §1.2).
 * @throws ApiError 400 validation_error, attr `filters`.
 */
export async function validateFilters(raw: unknown, ctx: FilterContext): Promise<Filters | undefined> {
  if (!isObj(raw)) {
    throw errors.validation(`Expected a dictionary of items but got type "${pyType(raw)}".`, 'filters', 'not_a_dict');
  }
  // Nothing deeper than the shared bound may reach the change log and the nodes.
  if (tooDeep(raw, MAX_JSON_DEPTH)) {
    throw errors.validation(`Filters may not nest deeper than ${MAX_JSON_DEPTH} levels.`, 'filters', 'invalid_input');
  }
  if (!('groups' in raw) && ctx.mode === 'update') return undefined;
  const filters: Obj = structuredClone(raw);
  checkShape(filters);
  const groups = groupsOf(filters);

  // 1. Condition sets.
  if (ctx.mode === 'create' && groups.length === 0) fail('Feature flags must have at least one condition set (group).');

  // 2. Property types per aggregation, flag operators, flag dependencies.
  const agg = filters.aggregation_group_type_index ?? null;
  const allProps = groups.flatMap(propertiesOf);
  if (agg === null) {
    if (!allProps.every((p) => PERSON_FLAG_PROPERTY_TYPES.has(propType(p) as string))) {
      fail('Filters are not valid (can only use person, cohort, and flag properties)');
    }
    if (!allProps.every((p) => propType(p) !== 'flag' || p.operator === 'flag_evaluates_to')) {
      fail("Flag properties must use the 'flag_evaluates_to' operator");
    }
    await checkFlagDependencies(filters, ctx.flag, ctx.lookups.liveFlag);
  } else if (!allProps.every((p) => propType(p) === 'group' && p.group_type_index === agg)) {
    fail('Filters are not valid (can only use group properties)');
  }

  // 3. Variants.
  const variantList = (((filters.multivariate as Obj | null | undefined)?.variants as Obj[] | null | undefined) ?? []);
  const variants = new Set(variantList.map((v) => v.key as string));
  if (variantList.length > 0) {
    const sum = variantList.reduce((s, v) => s + (v.rollout_percentage as number), 0);
    if (Math.abs(sum - 100) > 1e-9) fail('Invalid variant definitions: Variant rollout percentages must sum to 100.');
  }

  // 4. Per group and property.
  for (const g of groups) {
    if (truthy(g.variant) && !variants.has(g.variant as string)) fail('Filters are not valid (variant override does not exist)');
    for (const p of propertiesOf(g)) {
      const type = propType(p);
      const op = p.operator ?? 'exact';
      if (Array.isArray(p.value) && p.value.length > MAX_PROPERTY_VALUES) {
        fail(`Property group expressions of type ${pyStr(p.key)} cannot contain more than ${MAX_PROPERTY_VALUES} values.`);
      }
      if (type === 'cohort') await checkCohort(p.value, ctx.lookups);
      if ((op === 'is_date_before' || op === 'is_date_after') && !isValidFilterDate(p.value)) {
        fail(`Invalid date value: ${pyStr(p.value ?? null)}`, 'invalid_date');
      }
      if (STRING_OPERATORS.has(op as string) && typeof p.value !== 'string') {
        fail(`Invalid value for operator ${String(op)}: ${pyStr(p.value ?? null)}`, 'invalid_value');
      }
      // A pattern the evaluation engines cannot run would silently never match.
      if ((op === 'regex' || op === 'not_regex') && typeof p.value === 'string') {
        const problem = describeRegexProblem(p.value);
        if (problem !== null) fail(`Invalid regex pattern ${pyStr(p.value)}: ${problem}.`, 'invalid_regex');
      }
      if ((op === 'in' || op === 'not_in') && type !== 'cohort') {
        fail(`The '${op}' operator is only valid for cohort properties, not '${pyStr(type)}' properties.`, 'invalid_operator');
      }
    }
  }

  // 5. Payloads.
  const payloads = 'payloads' in filters ? filters.payloads : {};
  if (!isObj(payloads)) fail('Payloads must be passed as a dictionary');
  for (const [k, v] of Object.entries(payloads)) {
    if (typeof v === 'string') {
      try { JSON.parse(v); } catch { fail('Payload value is not valid JSON'); }
    } else if (v !== null) {
      try { payloads[k] = pythonJsonDumps(v); } catch { fail('Payload value is not valid JSON'); }
    }
  }
  if (truthy(filters.multivariate)) {
    if (!Object.keys(payloads).every((k) => variants.has(k))) fail('Payload keys must match a variant key for multivariate flags');
  } else if (Object.keys(payloads).length > 1 || Object.keys(payloads).some((k) => k !== 'true')) {
    fail("Payload keys must be 'true' for boolean flags");
  }

  // 6. What the evaluator would fail on.
  await checkEvaluable(filters, groups, ctx.lookups);
  return filters;
}

/** Rule 6 of the module doc. */
async function checkEvaluable(filters: Obj, groups: Obj[], lookups: FilterLookups): Promise<void> {
  const indexes = new Set<number>();
  if (typeof filters.aggregation_group_type_index === 'number') indexes.add(filters.aggregation_group_type_index);
  for (const g of groups) {
    if (typeof g.aggregation_group_type_index === 'number') indexes.add(g.aggregation_group_type_index);
    for (const p of propertiesOf(g)) {
      const type = propType(p);
      if (type === 'flag' || type === 'cohort') continue;
      if (type === 'group' && typeof p.group_type_index === 'number') indexes.add(p.group_type_index);
      try {
        compilePropertyFilter(p as unknown as PropertyFilter, { timezone: 'UTC', strict: true });
      } catch (e) {
        if (!(e instanceof PropertyFilterError)) throw e;
        fail(`Invalid property filter ${JSON.stringify(p.key ?? null)} (${e.field}): ${e.message}.`, e.field === 'operator' ? 'invalid_operator' : 'invalid_input');
      }
    }
  }
  if (indexes.size > 0) {
    const known = await lookups.groupTypeIndexes();
    for (const i of [...indexes].sort((a, b) => a - b)) {
      if (!known.has(i)) fail(`Invalid group type index ${i}: this project has no group type with that index.`, 'invalid_group_type');
    }
  }
}
