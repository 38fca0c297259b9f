/**
 * Flag dependencies: a condition property `{type: "flag", key: "<flag id>", operator:
 * "flag_evaluates_to"}` makes one flag depend on another. Checks run on every write that sends
 * filters (research/posthog-management-api.md §1.2 "Flag dependencies"; PostHog
 * `posthog/api/feature_flag.py` `_check_flag_circular_dependencies`):
 *
 * 1. every reference is an integer id → else "must reference flag IDs";
 * 2. it names a live (non-deleted) flag of the project → else "non-existent flag";
 * 3. that flag is active → else "Cannot create dependency on disabled flag";
 * 4. the flag does not reference itself;
 * 5. a depth-first walk over the stored dependencies finds no path back to a flag already on the
 *    path → else "Circular dependency detected: a → b → a" (keys along the cycle).
 *
 * Each node is expanded once (memoised), so the walk is linear in the size of the dependency
 * graph even when many paths share nodes.
 */
import { errors } from '../../errors.js';
import type { Filters } from './types.js';

/** A live flag as the dependency checks need it. */
export interface DependencyFlag { id: number; key: string; active: boolean; filters: Filters }

/** Looks up a live (non-deleted) flag of the project by id, or null. */
export type LiveFlagLookup = (id: number) => Promise<DependencyFlag | null>;

/** Raw `key` values of every `type: "flag"` property in `filters.groups[*].properties`. */
export function flagDependencyRefs(filters: Filters | null | undefined): unknown[] {
  const out: unknown[] = [];
  const groups = filters?.groups;
  if (!Array.isArray(groups)) return out;
  for (const g of groups) {
    const props = (g as { properties?: unknown } | null)?.properties;
    if (!Array.isArray(props)) continue;
    for (const p of props) {
      if (p !== null && typeof p === 'object' && (p as Record<string, unknown>).type === 'flag') out.push((p as Record<string, unknown>).key);
    }
  }
  return out;
}

/** Python `int(x)` on a reference: integers and integer strings (surrounding spaces allowed); else null. */
export function parseFlagId(ref: unknown): number | null {
  if (typeof ref === 'number') return Number.isInteger(ref) ? ref : null;
  if (typeof ref === 'string' && /^\s*[+-]?\d+\s*$/.test(ref)) {
    const n = Number(ref.trim());
    return Number.isSafeInteger(n) ? n : null;
  }
  return null;
}

/** Ids of the well-formed dependency references of `filters` (malformed ones skipped). */
export function flagDependencyIds(filters: Filters | null | undefined): number[] {
  const ids = new Set<number>();
  for (const ref of flagDependencyRefs(filters)) {
    const id = parseFlagId(ref);
    if (id !== null) ids.add(id);
  }
  return [...ids];
}

function filtersError(detail: string) {
  return errors.validation(detail, 'filters');
}

/**
 * Runs checks 1–5 on `filters` of the flag being written (`flagId` null on create; `flagKey` its
 * key after the write). Empty-key references are ignored, as upstream.
 * @throws ApiError 400 validation_error, attr `filters`.
 */
export async function checkFlagDependencies(filters: Filters, flag: { id: number | null; key: string }, lookup: LiveFlagLookup): Promise<void> {
  const deps: DependencyFlag[] = [];
  for (const ref of flagDependencyRefs(filters)) {
    if (ref === undefined || ref === null || ref === '' || ref === 0) continue;
    const id = parseFlagId(ref);
    if (id === null) {
      throw filtersError(`Flag dependencies must reference flag IDs (integers), not flag keys. Invalid reference: '${String(ref)}'`);
    }
    if (flag.id !== null && id === flag.id) {
      throw filtersError(`Feature flag '${flag.key}' cannot depend on itself`);
    }
    const dep = await lookup(id);
    if (!dep) throw filtersError(`Flag dependency references non-existent flag with ID ${id}`);
    if (!dep.active) {
      throw filtersError(`Cannot create dependency on disabled flag '${dep.key}' (ID: ${id}). Flag dependencies must reference active flags only.`);
    }
    if (!deps.some((d) => d.id === dep.id)) deps.push(dep);
  }
  if (deps.length === 0) return;

  // DFS over stored dependencies. The path starts at the flag being written, whose stored
  // filters are replaced by the new ones: reaching its id again is a cycle through it.
  const done = new Set<number>();
  const pathIds: number[] = [flag.id ?? -1];
  const pathKeys: string[] = [flag.key];
  const visit = async (node: DependencyFlag): Promise<void> => {
    const at = pathIds.indexOf(node.id);
    if (at !== -1) {
      throw filtersError(`Circular dependency detected: ${[...pathKeys.slice(at), node.key].join(' → ')}`);
    }
    if (done.has(node.id)) return;
    pathIds.push(node.id);
    pathKeys.push(node.key);
    for (const id of flagDependencyIds(node.filters)) {
      const next = flag.id !== null && id === flag.id ? { id, key: flag.key, active: true, filters } : await lookup(id);
      if (next) await visit(next);
    }
    pathIds.pop();
    pathKeys.pop();
    done.add(node.id);
  };
  for (const dep of deps) await visit(dep);
}
