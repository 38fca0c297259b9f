/**
 * `compileProject`: turns a project's definitions (the local-evaluation feed shape, research
 * §6.1) into the read-only {@link CompiledProject} that `evaluateFlags` reads, once per
 * definitions change. All parsing happens here: property operators (regexes, dates, semvers) by
 * the PROPS module, cohort trees (cohorts.ts), variant boundary tables (variants.ts), holdouts
 * (holdout.ts), and the dependency order (dependencies.ts).
 *
 * One bad flag never spoils the others: a flag whose definition cannot be read is compiled as
 * *failed* (every request answers it with a failed entry, code `flag_data_parsing_error`, or
 * `cohort_filters_parsing_error` for a bad cohort) and listed in `problems`. Rust's serde rejects
 * such a flag as a whole, so this mirrors that per flag (research §3.3 "Unknown operator").
 * A `filters.version` other than absent/1 is the new rule format, which the Rust service only
 * parses: failed with description "Failed to parse flag data: unsupported feature flag
 * configuration format" (docs/internal/feature-flags/flag-evaluation-engine.md).
 *
 * Source of the field rules: research/posthog-flag-evaluation.md §1; Rust `flags/flag_models.rs`.
 * `early_exit` is ignored, as in the Rust `/flags` service (research §1).
 */
import { compilePropertyFilter } from './properties/index.js';
import type {
  CohortCheck, CompiledCondition, ConditionReasons, CompiledFlag, CompiledProject, EnrollmentGate, FlagCheck, FlagFailure, FlagRuntime,
  PropertyCheck,
} from './compiled.js';
import { isFullRollout, rolloutThreshold } from './bucketing.js';
import { CohortTable, cohortIdOf } from './cohorts.js';
import { planDependencies } from './dependencies.js';
import { hashPrefix } from './hash.js';
import { compileHoldout, HoldoutDefinitionError, type CompiledHoldout } from './holdout.js';
import {
  conditionMatchDescription, ERROR_CODES, NO_CONDITION_MATCH_GROUPS_NOT_EVALUATED, REASONS, type ReasonCode,
} from './reasons.js';
import {
  DefinitionError, type CompileProblem, type FlagReason, type FlagResultMetadata, type ProjectDefinitions,
} from './types.js';
import { buildVariantTable, type VariantTable } from './variants.js';

/** Options of {@link compileProject}. */
export interface CompileOptions {
  /** IANA time zone for naive dates and relative dates (the team's timezone). Default `UTC`. */
  timezone?: string;
}

/** A problem in one flag's definition; `field` is a dotted path inside the flag. */
class FlagDefinitionError extends Error {
  constructor(readonly field: string, message: string, readonly code: string = 'flag_data_parsing_error') {
    super(message);
  }
}

/**
 * The internalized (unique) copy of `s`. Flag keys arrive as JSON string *values*, which V8 does
 * not internalize; every `result.flags[key] = …` with such a key pays a string-table lookup.
 * A computed property name is internalized once here instead.
 */
function internalized(s: string): string {
  return Object.keys({ [s]: 0 })[0] ?? s;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const PROPERTY_TYPES = new Set(['person', 'group', 'cohort', 'flag', 'event', 'person_metadata']);
const SURVEY_PREFIX = 'survey-targeting-';

/**
 * Compiles `defs`. Never throws for one bad flag (see module doc); throws {@link DefinitionError}
 * only when `defs` is not an object with a `flags` array and object-valued `group_type_mapping`
 * and `cohorts` (both may be absent: treated as empty).
 */
export function compileProject(defs: ProjectDefinitions, opts: CompileOptions = {}): CompiledProject {
  if (!isObj(defs)) throw new DefinitionError('definitions', 'must be a JSON object');
  if (!Array.isArray(defs.flags)) throw new DefinitionError('flags', 'must be an array');
  const gtm = defs.group_type_mapping ?? {};
  if (!isObj(gtm)) throw new DefinitionError('group_type_mapping', 'must be an object');
  const cohortDefs = defs.cohorts ?? {};
  if (!isObj(cohortDefs)) throw new DefinitionError('cohorts', 'must be an object');
  const timezone = opts.timezone ?? 'UTC';

  const groupTypeNames = new Map<number, string>();
  for (const [k, v] of Object.entries(gtm)) {
    if (typeof v === 'string' && /^\d+$/.test(k)) groupTypeNames.set(Number(k), v);
  }
  const matchingVersion = defs.property_matching_version === 2 ? 2 : 1;
  const cohorts = new CohortTable(cohortDefs as ProjectDefinitions['cohorts'], timezone, matchingVersion);
  const problems: CompileProblem[] = [];

  // Pass 1: identity fields; entries without a usable key are skipped (they cannot be answered).
  interface Entry { raw: Record<string, unknown>; key: string; live: boolean }
  const entries: Entry[] = [];
  const seen = new Set<string>();
  defs.flags.forEach((raw: unknown, i: number) => {
    if (!isObj(raw) || typeof raw.key !== 'string' || raw.key === '') {
      problems.push({ flagKey: `flags[${i}]`, field: 'key', message: 'flag must be an object with a non-empty string key; skipped' });
      return;
    }
    if (seen.has(raw.key)) {
      problems.push({ flagKey: raw.key, field: 'key', message: `duplicate flag key (flags[${i}]); skipped` });
      return;
    }
    seen.add(raw.key);
    entries.push({ raw, key: raw.key, live: raw.active === true && raw.deleted !== true });
  });

  const plan = planDependencies(entries.map((e) => ({ id: e.raw.id, key: e.key, live: e.live, filters: e.raw.filters })));
  const slotOf = new Int32Array(entries.length);
  plan.order.forEach((entryIndex, slot) => { slotOf[entryIndex] = slot; });

  const filterIds = new Map<string, number>();
  const sharedFilter = (signature: string): number => {
    let id = filterIds.get(signature);
    if (id === undefined) filterIds.set(signature, (id = filterIds.size));
    return id;
  };
  const flags: CompiledFlag[] = plan.order.map((entryIndex, slot) => {
    const e = entries[entryIndex]!;
    const refs = plan.refs[entryIndex]!;
    const ctx: FlagCompileContext = {
      groupTypeNames, cohorts, timezone, matchingVersion, sharedFilter,
      dependencySlot: (filter) => {
        const target = refs.get(filter) ?? -1;
        return target < 0 ? -1 : slotOf[target]!;
      },
    };
    try {
      return compileFlag(e.raw, slot, e.live, plan.broken[entryIndex]!, ctx);
    } catch (err) {
      const fe = err instanceof FlagDefinitionError ? err : new FlagDefinitionError('filters', err instanceof Error ? err.message : String(err));
      if (e.live) problems.push({ flagKey: e.key, field: fe.field, message: fe.message });
      const description = fe.code === 'flag_data_parsing_error'
        ? `${ERROR_CODES.flag_data_parsing_error}: ${fe.message}`
        : `${ERROR_CODES.cohort_filters_parsing_error}: ${fe.message}`;
      return failedFlag(e.raw, slot, e.live, { code: fe.code, description });
    }
  });
  return Object.freeze({
    flags: Object.freeze(flags),
    byKey: new Map(flags.map((f) => [f.key, f])),
    cohorts,
    problems: Object.freeze(problems),
    timezone,
    usesRegex: mentionsRegex(defs.flags) || mentionsRegex(cohortDefs),
    sharedFilters: filterIds.size,
    readsFlagValues: flags.some((f) => f.dependencySlots.length > 0),
  });
}

const REGEX_OPERATORS: ReadonlySet<unknown> = new Set(['regex', 'not_regex']);

/**
 * Whether any object inside `value` has `operator` `regex` or `not_regex` (a property filter of a
 * flag or cohort). Iterative, so deep definitions cannot overflow the stack.
 */
function mentionsRegex(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) { for (const c of v) stack.push(c); continue; }
    const o = v as Record<string, unknown>;
    if (REGEX_OPERATORS.has(o.operator)) return true;
    for (const k in o) stack.push(o[k]);
  }
  return false;
}

interface FlagCompileContext {
  readonly groupTypeNames: ReadonlyMap<number, string>;
  readonly cohorts: CohortTable;
  readonly timezone: string;
  /** The project's property_matching_version (1 legacy, 2 explicit booleans). */
  readonly matchingVersion: number;
  /** Slot of the flag a dependency filter (by object identity) resolves to, or -1. */
  dependencySlot(filter: object): number;
  /** The project-wide index of a condition set's filters, by their signature (same signature, same index). */
  sharedFilter(signature: string): number;
}

function identity(raw: Record<string, unknown>): { id: number; version: number; description: string | null } {
  return {
    id: typeof raw.id === 'number' ? raw.id : Number(raw.id) || 0,
    version: typeof raw.version === 'number' ? raw.version : 0,
    description: typeof raw.name === 'string' ? raw.name : null,
  };
}

function selectors(raw: Record<string, unknown>): { runtime: FlagRuntime; tags: readonly string[] | null } {
  const r = raw.evaluation_runtime;
  const runtime: FlagRuntime = r === 'client' || r === 'server' ? r : 'all';
  const t = Array.isArray(raw.evaluation_tags) ? raw.evaluation_tags : Array.isArray(raw.evaluation_contexts) ? raw.evaluation_contexts : null;
  const tags = t ? Object.freeze(t.filter((x): x is string => typeof x === 'string')) : null;
  return { runtime, tags: tags && tags.length > 0 ? tags : null };
}

const NO_METADATA: ReadonlyMap<string, FlagResultMetadata> = new Map();

function metadata(raw: Record<string, unknown>, payload: string | null): FlagResultMetadata {
  const { id, version, description } = identity(raw);
  return Object.freeze({ id, version, payload, description });
}

function conditionReasons(index: number): ConditionReasons {
  const r = (code: ReasonCode, description: string): FlagReason => Object.freeze({ code, condition_index: index, description });
  return Object.freeze({
    match: r('condition_match', conditionMatchDescription(index)),
    outOfRollout: r('out_of_rollout_bound', REASONS.out_of_rollout_bound.description),
    noMatch: r('no_condition_match', REASONS.no_condition_match.description),
    noMatchGroupsSkipped: r('no_condition_match', NO_CONDITION_MATCH_GROUPS_NOT_EVALUATED),
    noGroup: r('no_group_type', REASONS.no_group_type.description),
  });
}

function failedFlag(raw: Record<string, unknown>, slot: number, live: boolean, failure: FlagFailure): CompiledFlag {
  const key = internalized(raw.key as string);
  return Object.freeze({
    slot, key, ...identity(raw), live, ...selectors(raw),
    metadataByPayloadKey: NO_METADATA, metadataNoPayload: metadata(raw, null),
    surveyTargeting: key.startsWith(SURVEY_PREFIX),
    failure, missingDependency: false, dependencySlots: [], continuity: false, bucketByDevice: false, earlyExit: false,
    aggregation: null, groupTypeName: null, hashPrefix: hashPrefix(`${key}.`), conditions: [], variants: null,
    enrollment: null, holdout: null, results: [],
  });
}

function optionalNumber(v: unknown, field: string): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new FlagDefinitionError(field, `must be a number or null, got ${JSON.stringify(v)}`);
  return v;
}

function optionalGroupIndex(v: unknown, field: string): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new FlagDefinitionError(field, `must be an integer or null, got ${JSON.stringify(v)}`);
  return v;
}

function compileFlag(raw: Record<string, unknown>, slot: number, live: boolean, broken: boolean, ctx: FlagCompileContext): CompiledFlag {
  const key = internalized(raw.key as string);
  if (typeof raw.id !== 'number' || !Number.isInteger(raw.id)) throw new FlagDefinitionError('id', 'must be an integer');
  const filters = raw.filters;
  if (!isObj(filters)) throw new FlagDefinitionError('filters', 'must be an object');
  if (filters.version !== undefined && filters.version !== null && filters.version !== 1) {
    throw new FlagDefinitionError('filters.version', 'unsupported feature flag configuration format');
  }

  const aggregation = optionalGroupIndex(filters.aggregation_group_type_index, 'filters.aggregation_group_type_index');

  // Variants first: condition overrides are validated against them.
  let variants: VariantTable | null = null;
  const mv = filters.multivariate;
  if (mv !== undefined && mv !== null) {
    if (!isObj(mv)) throw new FlagDefinitionError('filters.multivariate', 'must be an object or null');
    const list = mv.variants ?? [];
    if (!Array.isArray(list)) throw new FlagDefinitionError('filters.multivariate.variants', 'must be an array');
    const parsed = list.map((v, i) => {
      if (!isObj(v) || typeof v.key !== 'string') throw new FlagDefinitionError(`filters.multivariate.variants[${i}].key`, 'must be a string');
      if (typeof v.rollout_percentage !== 'number' || !Number.isFinite(v.rollout_percentage)) {
        throw new FlagDefinitionError(`filters.multivariate.variants[${i}].rollout_percentage`, 'must be a number');
      }
      return { key: v.key, rollout_percentage: v.rollout_percentage };
    });
    if (parsed.length > 0) variants = buildVariantTable(parsed);
  }
  const variantKeys = new Set(variants?.keys ?? []);

  const payloads = new Map<string, string>();
  if (filters.payloads !== undefined && filters.payloads !== null) {
    if (!isObj(filters.payloads)) throw new FlagDefinitionError('filters.payloads', 'must be an object');
    for (const [k, v] of Object.entries(filters.payloads)) {
      // Stored payloads are JSON-encoded strings, returned verbatim (research §1). A non-string
      // JSON value is sent as its JSON text so that metadata.payload stays a string.
      if (v === null || v === undefined) continue;
      payloads.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    }
  }

  const dependencySlots: number[] = [];
  const compileCondition = (c: unknown, field: string, index: number): CompiledCondition => {
    if (!isObj(c)) throw new FlagDefinitionError(field, 'must be an object');
    const condAggregation = Object.prototype.hasOwnProperty.call(c, 'aggregation_group_type_index')
      ? optionalGroupIndex(c.aggregation_group_type_index, `${field}.aggregation_group_type_index`)
      : aggregation;
    const rollout = optionalNumber(c.rollout_percentage, `${field}.rollout_percentage`);
    if (c.variant !== undefined && c.variant !== null && typeof c.variant !== 'string') {
      throw new FlagDefinitionError(`${field}.variant`, 'must be a string or null');
    }
    const props = c.properties ?? [];
    if (!Array.isArray(props)) throw new FlagDefinitionError(`${field}.properties`, 'must be an array or null');
    const flagChecks: FlagCheck[] = [];
    const propertyChecks: PropertyCheck[] = [];
    const cohortChecks: CohortCheck[] = [];
    props.forEach((p, j) => {
      const pf = `${field}.properties[${j}]`;
      if (!isObj(p)) throw new FlagDefinitionError(pf, 'must be an object');
      const type = p.type === undefined || p.type === null ? 'person' : p.type;
      if (typeof type !== 'string' || !PROPERTY_TYPES.has(type)) {
        throw new FlagDefinitionError(`${pf}.type`, `unknown property type ${JSON.stringify(p.type)}`);
      }
      if (type === 'flag') {
        const depSlot = ctx.dependencySlot(p);
        if (depSlot >= 0) dependencySlots.push(depSlot);
        const v = p.value;
        const expected = p.operator === 'flag_evaluates_to' && (typeof v === 'boolean' || typeof v === 'string') ? v : null;
        flagChecks.push({ slot: depSlot, expected });
        return;
      }
      if (type === 'cohort') {
        const id = cohortIdOf(p.value);
        if (id === null) throw new FlagDefinitionError(`${pf}.value`, `cohort id must be an integer, got ${JSON.stringify(p.value)}`);
        const cohort = ctx.cohorts.resolve(id);
        if (cohort.error) throw new FlagDefinitionError(`${pf}.value`, `cohort ${id}: ${cohort.error}`, 'cohort_filters_parsing_error');
        cohortChecks.push({ cohortId: id, negate: p.operator === 'not_in' });
        return;
      }
      if (typeof p.key !== 'string') throw new FlagDefinitionError(`${pf}.key`, 'must be a string');
      let groupTypeName: string | null = null;
      const group = type === 'group';
      if (group) {
        const idx = typeof p.group_type_index === 'number' ? p.group_type_index : condAggregation;
        groupTypeName = idx === null ? null : ctx.groupTypeNames.get(idx) ?? null;
      }
      try {
        const filter = compilePropertyFilter(p as unknown as Parameters<typeof compilePropertyFilter>[0], { timezone: ctx.timezone, matchingVersion: ctx.matchingVersion });
        propertyChecks.push({ group, groupTypeName, filter });
      } catch (err) {
        const sub = isObj(err) && typeof err.field === 'string' && err.field !== '' ? `.${err.field}` : '';
        throw new FlagDefinitionError(`${pf}${sub}`, err instanceof Error ? err.message : String(err));
      }
    });
    const variantOverride = typeof c.variant === 'string' && variantKeys.has(c.variant) ? c.variant : null;
    const pct = rollout ?? 100;
    // Same filters JSON and aggregation compile to the same checks in one project (the compile
    // context is the project's), so their outcome for one request is the same.
    const shared = flagChecks.length === 0 && propertyChecks.length + cohortChecks.length > 0
      ? ctx.sharedFilter(JSON.stringify([condAggregation, props])) : -1;
    return Object.freeze({
      index,
      aggregation: condAggregation,
      groupTypeName: condAggregation === null ? null : ctx.groupTypeNames.get(condAggregation) ?? null,
      flagChecks: Object.freeze(flagChecks),
      propertyChecks: Object.freeze(propertyChecks),
      cohortChecks: Object.freeze(cohortChecks),
      fullRollout: isFullRollout(pct),
      threshold: rolloutThreshold(pct),
      variantOverride,
      reasons: conditionReasons(index),
      sharedFilter: shared,
      results: [],
    });
  };

  const groups = filters.groups ?? [];
  if (!Array.isArray(groups)) throw new FlagDefinitionError('filters.groups', 'must be an array');
  const conditions = groups.map((g, i) => compileCondition(g, `filters.groups[${i}]`, i));

  let enrollment: EnrollmentGate | null = null;
  if (filters.feature_enrollment === true) {
    enrollment = { kind: 'feature_enrollment', propertyKey: `$feature_enrollment/${key}` };
  } else if (Array.isArray(filters.super_groups) && filters.super_groups.length > 0) {
    const sg = filters.super_groups[0];
    if (isObj(sg) && Array.isArray(sg.properties) && sg.properties.length > 0) {
      const condition = compileCondition(sg, 'filters.super_groups[0]', 0);
      const propertyKeys = sg.properties.filter(isObj).map((p) => p.key).filter((k): k is string => typeof k === 'string');
      enrollment = { kind: 'super_group', propertyKeys, condition };
    }
  }

  let holdout: CompiledHoldout | null;
  try {
    holdout = compileHoldout(filters);
  } catch (err) {
    if (err instanceof HoldoutDefinitionError) throw new FlagDefinitionError(err.field, err.message);
    throw err;
  }

  const { runtime, tags } = selectors(raw);
  return Object.freeze({
    slot, key, ...identity(raw), live, runtime, tags,
    surveyTargeting: key.startsWith(SURVEY_PREFIX),
    failure: null,
    missingDependency: broken,
    dependencySlots: Object.freeze([...new Set(dependencySlots)]),
    continuity: raw.ensure_experience_continuity === true,
    bucketByDevice: raw.bucketing_identifier === 'device_id',
    earlyExit: filters.early_exit === true,
    aggregation,
    groupTypeName: aggregation === null ? null : ctx.groupTypeNames.get(aggregation) ?? null,
    hashPrefix: hashPrefix(`${key}.`),
    conditions: Object.freeze(conditions),
    variants,
    metadataByPayloadKey: new Map([...payloads].map(([k, v]) => [k, metadata(raw, v)])),
    metadataNoPayload: metadata(raw, null),
    enrollment,
    holdout,
    results: [],
  });
}
