/**
 * Per-request evaluation state: which property map a filter reads, which identifier a condition
 * hashes, and the memo tables shared by every flag of one request. Built lazily, so a request
 * whose flags read no properties never builds a property map.
 *
 * Property maps (research/posthog-flag-evaluation.md §3.1, Rust `handler/properties.rs`):
 * - person: stored (DB) properties, plus `distinct_id`, overlaid by the request's
 *   `person_properties` (request wins), then missing `$initial_X` filled from `X` for the
 *   {@link INITIAL_PROPERTY_SOURCES} list. GeoIP is the HTTP layer's job (fill only keys the
 *   request did not supply) before calling the core.
 * - group (by type name): stored group properties overlaid by the request's
 *   `group_properties[type]`, plus `$group_key = groups[type]` when the request names that group.
 *
 * Identifiers (research §2.4; Rust `flags/flag_matching.rs` `hashed_identifier`):
 * - `distinct_id` truncated to 200 Unicode scalar values (Rust truncates at request parsing);
 * - group key: a string as is, a JSON number as its decimal string, anything else "" (missing);
 * - `$device_id`: `req.device_id`, else the request's `person_properties.$device_id`;
 * - person conditions: the stored hash-key override for the flag key if the store returned one
 *   (Rust applies it whatever the flag's continuity setting; the service only writes overrides
 *   for continuity flags), else `anon_distinct_id` for continuity flags, else `distinct_id`
 *   (Rust `flags/flag_matching.rs` `hashed_identifier`).
 */
import type { CohortScope } from './cohorts.js';
import type { CompiledProject } from './compiled.js';
import { truncateScalars, utf8Id, type Utf8Id } from './hash.js';
import type { EvaluationRequest, StoredContext } from './types.js';
import { setOwn } from '../own-property.js';

/**
 * Event properties copied to `$initial_X` when the person lacks it: the list PostHog uses for
 * person initial properties (plugin-server `personInitialAndUTMProperties`: browser/device/URL
 * properties plus campaign parameters and ad click ids).
 */
export const INITIAL_PROPERTY_SOURCES: readonly string[] = Object.freeze([
  '$browser', '$browser_version', '$device_type', '$current_url', '$pathname', '$os', '$os_version',
  '$referring_domain', '$referrer', '$screen_height', '$screen_width', '$viewport_height', '$viewport_width',
  '$raw_user_agent',
  'utm_source', 'utm_medium', 'utm_campaign', 'utm_content', 'utm_term', 'utm_name',
  'gclid', 'gad_source', 'gclsrc', 'dclid', 'gbraid', 'wbraid', 'fbclid', 'msclkid', 'twclid', 'li_fat_id',
  'mc_cid', 'igshid', 'ttclid', 'rdt_cid', 'epik', 'qclid', 'sccid', 'irclid', '_kx',
]);

/** Source key → `$initial_` key, for the back-fill loop (walks the person's keys, not the list). */
const INITIAL_TARGET: ReadonlyMap<string, string> = new Map(
  INITIAL_PROPERTY_SOURCES.map((src) => [src, `$initial_${src.startsWith('$') ? src.slice(1) : src}`]),
);

const EMPTY_PROPS: Readonly<Record<string, unknown>> = Object.freeze({});
/** `values` of projects where no flag depends on another (never written: evaluate.ts checks `readsFlagValues`). */
const NO_VALUES: Array<boolean | string> = Object.freeze([]) as unknown as Array<boolean | string>;

/** Shared-filter outcomes by filter index, valid where the stamp is the current scope's generation. */
let sharedStamps = new Int32Array(64);
let sharedValues = new Uint8Array(64);
let generation = 0;

/** A new generation for a scope of a project with `size` shared filter lists (tables grown to fit). */
function nextGeneration(size: number): number {
  if (size > sharedStamps.length) {
    const n = Math.max(size, sharedStamps.length * 2);
    sharedStamps = new Int32Array(n);
    sharedValues = new Uint8Array(n);
  }
  if (generation === 0x7fffffff) { sharedStamps.fill(0); generation = 0; }
  return ++generation;
}
const hasOwn = Object.prototype.hasOwnProperty;


/** Group key as Rust reads it: string as is, number → decimal string, else "" (research §2.4). */
export function groupKeyString(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return '';
}

/** Mutable per-request state; one instance per `evaluateFlags` call. */
export class RequestScope {
  readonly distinctId: Utf8Id;
  /**
   * Flag value by slot (false | true | variant key); unevaluated flags read false (research §3.5).
   * Empty (and frozen) when no flag of the project depends on another.
   */
  readonly values: Array<boolean | string>;
  private person: Readonly<Record<string, unknown>> | null = null;
  // Group property maps and keys by type name; the last one asked for is kept beside the map, so a
  // request that uses one group type (the usual case) never builds the maps.
  private groupProps: Map<string, Readonly<Record<string, unknown>>> | null = null;
  private groupIds: Map<string, Utf8Id | null> | null = null;
  private lastPropsType: string | null = null;
  private lastProps: Readonly<Record<string, unknown>> | null = null;
  private lastIdType: string | null = null;
  private lastId: Utf8Id | null = null;
  private deviceId: Utf8Id | null | undefined;
  private anonId: Utf8Id | null | undefined;
  private cohortScope: CohortScope | null = null;
  /** This scope's stamp in the shared-filter outcome table ({@link sharedOutcome}). */
  private readonly generation: number;

  constructor(
    readonly project: CompiledProject,
    readonly req: EvaluationRequest,
    readonly stored: StoredContext,
    readonly nowMs: number,
  ) {
    this.distinctId = utf8Id(truncateScalars(typeof req.distinct_id === 'string' ? req.distinct_id : String(req.distinct_id ?? '')));
    this.values = project.readsFlagValues ? new Array<boolean | string>(project.flags.length).fill(false) : NO_VALUES;
    this.generation = project.sharedFilters === 0 ? 0 : nextGeneration(project.sharedFilters);
  }

  /**
   * The outcome of shared filter list `s` (`CompiledCondition.sharedFilter`) in this request:
   * 0 not tested yet, 1 pass, 2 fail (match-flag.ts). Kept in module tables stamped with the
   * scope's generation instead of a fresh array per request; only the latest scope may use them,
   * which holds as evaluation is synchronous and builds one scope at a time.
   */
  sharedOutcome(s: number): number {
    return sharedStamps[s] === this.generation ? sharedValues[s]! : 0;
  }

  /** Records the outcome of shared filter list `s` ({@link sharedOutcome}). */
  setSharedOutcome(s: number, pass: boolean): void {
    sharedStamps[s] = this.generation;
    sharedValues[s] = pass ? 1 : 2;
  }

  /** The merged person property map. */
  personProperties(): Readonly<Record<string, unknown>> {
    if (this.person !== null) return this.person;
    const stored = this.stored.person_properties;
    const overrides = this.req.person_properties;
    const merged: Record<string, unknown> = {};
    if (stored) for (const k in stored) if (hasOwn.call(stored, k)) setOwn(merged, k, stored[k]);
    merged.distinct_id = this.distinctId.text;
    if (overrides) for (const k in overrides) if (hasOwn.call(overrides, k)) setOwn(merged, k, overrides[k]);
    let fills: string[] | null = null;
    for (const k in merged) {
      const dst = INITIAL_TARGET.get(k);
      if (dst !== undefined && !hasOwn.call(merged, dst)) (fills ??= []).push(k);
    }
    if (fills !== null) for (const k of fills) merged[INITIAL_TARGET.get(k)!] = merged[k];
    this.person = merged;
    return merged;
  }

  /** The merged property map of group type `typeName`. */
  groupProperties(typeName: string): Readonly<Record<string, unknown>> {
    if (typeName === this.lastPropsType) return this.lastProps!;
    let merged = this.groupProps?.get(typeName);
    if (merged === undefined) {
      merged = this.mergedGroupProperties(typeName);
      if (this.lastPropsType !== null) {
        const cache = (this.groupProps ??= new Map());
        cache.set(this.lastPropsType, this.lastProps!);
        cache.set(typeName, merged);
      }
    }
    this.lastPropsType = typeName;
    this.lastProps = merged;
    return merged;
  }

  private mergedGroupProperties(typeName: string): Readonly<Record<string, unknown>> {
    const stored = this.stored.group_properties?.[typeName];
    const overrides = this.req.group_properties?.[typeName];
    const groups = this.req.groups;
    if (!stored && !overrides && !(groups && hasOwn.call(groups, typeName))) return EMPTY_PROPS;
    const m: Record<string, unknown> = {};
    if (stored) for (const k in stored) if (hasOwn.call(stored, k)) setOwn(m, k, stored[k]);
    if (overrides) for (const k in overrides) if (hasOwn.call(overrides, k)) setOwn(m, k, overrides[k]);
    if (groups && hasOwn.call(groups, typeName)) m.$group_key = groups[typeName];
    return m;
  }

  /** The request's key for group type `typeName`, or null when missing or empty. */
  groupId(typeName: string | null): Utf8Id | null {
    if (typeName === null) return null;
    if (typeName === this.lastIdType) return this.lastId;
    let id = this.groupIds?.get(typeName);
    if (id === undefined) {
      const groups = this.req.groups;
      const s = groups && hasOwn.call(groups, typeName) ? groupKeyString(groups[typeName]) : '';
      id = s === '' ? null : utf8Id(s);
      if (this.lastIdType !== null) {
        const cache = (this.groupIds ??= new Map());
        cache.set(this.lastIdType, this.lastId);
        cache.set(typeName, id);
      }
    }
    this.lastIdType = typeName;
    this.lastId = id;
    return id;
  }

  /** `$device_id` of the request, or null. */
  device(): Utf8Id | null {
    if (this.deviceId === undefined) {
      let d: unknown = this.req.device_id;
      if (typeof d !== 'string' || d === '') d = this.req.person_properties?.$device_id;
      this.deviceId = typeof d === 'string' && d !== '' ? utf8Id(d) : null;
    }
    return this.deviceId;
  }

  /** `$anon_distinct_id` of the request, or null. */
  anon(): Utf8Id | null {
    if (this.anonId === undefined) {
      const a = this.req.anon_distinct_id;
      this.anonId = typeof a === 'string' && a !== '' ? utf8Id(a) : null;
    }
    return this.anonId;
  }

  /**
   * Person identifier of flag `flagKey` (Rust `hashed_identifier`, person branch, after the
   * device-id check): the stored hash-key override (when `useOverride`), else — for continuity
   * flags — `$anon_distinct_id`, else `distinct_id`.
   */
  personId(flagKey: string, continuity: boolean, useOverride: boolean): Utf8Id {
    if (useOverride) {
      const o = this.stored.hash_key_overrides;
      if (o && hasOwn.call(o, flagKey) && typeof o[flagKey] === 'string') return utf8Id(o[flagKey]);
    }
    if (continuity) return this.anon() ?? this.distinctId;
    return this.distinctId;
  }

  /** Cohort evaluation scope (person properties, static ids, memo), built on first use. */
  cohorts(): CohortScope {
    if (this.cohortScope === null) {
      this.cohortScope = {
        table: this.project.cohorts,
        person: this.personProperties(),
        staticIds: this.stored.static_cohort_ids,
        nowMs: this.nowMs,
        memo: new Int8Array(this.project.cohorts.size),
      };
    }
    return this.cohortScope;
  }
}
