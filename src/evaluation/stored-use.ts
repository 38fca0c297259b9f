/**
 * Which STORED properties can change a project's answers, so that a node can skip reading a
 * person or a group when the request already supplies every property the filters read.
 *
 * Request properties override stored ones key by key (context.ts; research §3.1), and filters
 * read only their own key (`lookupKey`), so when every person key any filter can read is an own
 * key of the request's `person_properties`, the stored person cannot change an answer; the same
 * holds per group type, where `$group_key` always comes from the request's `groups`. PostHog does
 * the same (Python `flag_matching.py`: no DB query when the overrides hold every property the
 * flags need). Anything this walk does not understand makes the answer "unknown" (null): read.
 *
 * Why: the person and group lookups were ~5 % of a node's CPU per /flags request on the peer
 * workload (cpu-prof of bench/flags.ts: LMDB get + key encoding), and posthog-node callers
 * usually send the properties their flags use.
 */
import type { CompiledCondition, CompiledProject } from './compiled.js';
import type { CompiledCohort } from './cohorts.js';
import type { EvaluationRequest } from './types.js';

/** Property keys a project's filters read. */
export interface StoredPropertyUse {
  /** Person property keys (lookup keys) read by any flag or cohort; null = unknown (always read the person). */
  readonly personKeys: readonly string[] | null;
  /** Group type name → group property keys read (`$group_key` excluded); null = unknown (always read groups). */
  readonly groupKeys: ReadonlyMap<string, readonly string[]> | null;
}

const UNKNOWN: StoredPropertyUse = Object.freeze({ personKeys: null, groupKeys: null });
const memo = new WeakMap<CompiledProject, StoredPropertyUse>();
const hasOwn = Object.prototype.hasOwnProperty;

/** The property keys `project` reads (computed once per compiled project). */
export function storedPropertyUse(project: CompiledProject): StoredPropertyUse {
  let use = memo.get(project);
  if (use === undefined) {
    use = walk(project);
    memo.set(project, use);
  }
  return use;
}

function walk(project: CompiledProject): StoredPropertyUse {
  const person = new Set<string>();
  const groups = new Map<string, Set<string>>();
  const seenCohorts = new Set<number>();
  let unknown = false;

  const cohort = (id: number): void => {
    if (seenCohorts.has(id)) return;
    seenCohorts.add(id);
    const c: CompiledCohort = project.cohorts.resolve(id);
    if (c.isStatic) unknown = true; // membership is stored with the person, never in the request
    else if (c.root !== null) node(c.root);
  };
  const node = (n: NonNullable<CompiledCohort['root']>): void => {
    switch (n.kind) {
      case 'and': case 'or': for (const child of n.children) node(child); return;
      case 'leaf': person.add(n.filter.lookupKey); return; // cohorts read the merged person map
      case 'ref': cohort(n.cohortId); return;
      case 'const': return;
      default: unknown = true;
    }
  };
  const condition = (cond: CompiledCondition): void => {
    for (const pc of cond.propertyChecks) {
      if (!pc.group) { person.add(pc.filter.lookupKey); continue; }
      if (pc.groupTypeName === null) continue; // fails closed without reading anything
      let keys = groups.get(pc.groupTypeName);
      if (keys === undefined) groups.set(pc.groupTypeName, (keys = new Set()));
      if (pc.filter.lookupKey !== '$group_key') keys.add(pc.filter.lookupKey);
    }
    for (const cc of cond.cohortChecks) cohort(cc.cohortId);
  };

  for (const f of project.flags) {
    const gate = f.enrollment;
    if (gate !== null) {
      if (gate.kind === 'feature_enrollment') person.add(gate.propertyKey);
      else if (gate.kind === 'super_group') { for (const k of gate.propertyKeys) person.add(k); condition(gate.condition); }
      else unknown = true;
    }
    for (const c of f.conditions) condition(c);
  }
  if (unknown) return UNKNOWN;
  return Object.freeze({
    personKeys: Object.freeze([...person]),
    groupKeys: new Map([...groups].map(([t, keys]) => [t, Object.freeze([...keys])])),
  });
}

function supplies(props: Readonly<Record<string, unknown>> | null | undefined, keys: readonly string[]): boolean {
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    // `distinct_id` is always the request's (context.ts sets it before the overrides).
    if (k === 'distinct_id') continue;
    if (!props || !hasOwn.call(props, k) || props[k] === undefined) return false;
  }
  return true;
}

/** True when the stored person's properties cannot change any answer for `req` (hash-key overrides aside). */
export function requestCoversPerson(use: StoredPropertyUse, req: EvaluationRequest): boolean {
  return use.personKeys !== null && supplies(req.person_properties, use.personKeys);
}

/** True when group type `typeName`'s stored properties cannot change any answer for `req`. */
export function requestCoversGroup(use: StoredPropertyUse, req: EvaluationRequest, typeName: string): boolean {
  if (use.groupKeys === null) return false;
  const keys = use.groupKeys.get(typeName);
  if (keys === undefined) return true; // no filter reads this group type's properties
  return supplies(req.group_properties?.[typeName], keys);
}
