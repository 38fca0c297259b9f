/**
 * Cohorts (research/posthog-flag-evaluation.md §3.4; Rust `cohorts/cohort_operations.rs`).
 *
 * A cohort definition is `{type: "AND"|"OR", values: [...]}` (or Django's `{properties: {...}}`
 * wrapper). Each value is a nested group (legacy type `"property"` means AND) or a leaf property
 * filter that may carry `negation: true`; a leaf of `type: "cohort"` references another cohort
 * (operator `not_in` inverts it). AND needs every entry, OR at least one; an empty group matches.
 * Leaves always read **person** properties; a missing key follows the operator's own rule
 * (PROPS module, research §3.2) and negation flips the leaf afterwards.
 *
 * Choices, documented where PostHog's sources leave room:
 * - A cohort with `is_static: true`, or one absent from `cohorts` (the local feed omits static
 *   cohorts, research §6.1), is static: membership is `StoredContext.static_cohort_ids`.
 * - Behavioral / realtime leaves (`type` other than person, cohort, or a plain property type) have
 *   no membership provider here: they are false before negation, as in Rust without a provider.
 * - A cohort whose leaves cannot be compiled (unknown operator, malformed value) or whose
 *   references form a cycle is an error: every flag using it fails with
 *   `cohort_filters_parsing_error`.
 *
 * Compiled once per project; results are memoised per request in an Int8Array (0 = not yet,
 * 1 = member, 2 = not a member), so a cohort shared by many flags is evaluated once.
 */
import { compilePropertyFilter, type CompiledPropertyFilter } from './properties/index.js';
import type { CohortDefinition } from './types.js';

type CohortNode =
  | { readonly kind: 'and' | 'or'; readonly children: readonly CohortNode[] }
  | { readonly kind: 'leaf'; readonly filter: CompiledPropertyFilter; readonly negate: boolean }
  | { readonly kind: 'ref'; readonly cohortId: number; readonly negate: boolean }
  | { readonly kind: 'const'; readonly value: boolean };

/** One compiled cohort. */
export interface CompiledCohort {
  readonly id: number;
  /** Index into the per-request memo. */
  readonly slot: number;
  readonly isStatic: boolean;
  readonly root: CohortNode | null;
  /** Why the cohort cannot be evaluated (includes a cycle or a bad referenced cohort), or null. */
  readonly error: string | null;
}

/** All cohorts a project's flags reference, compiled on first reference. */
export class CohortTable {
  private readonly byId = new Map<number, CompiledCohort>();
  private readonly inProgress = new Set<number>();

  constructor(private readonly defs: Readonly<Record<string, CohortDefinition>>, private readonly timezone: string, private readonly matchingVersion = 1) {}

  /** Number of memo slots a request needs. */
  get size(): number {
    return this.byId.size;
  }

  /** The compiled cohort `id`, compiling it (and what it references) if needed. */
  resolve(id: number): CompiledCohort {
    const known = this.byId.get(id);
    if (known) return known;
    if (this.inProgress.has(id)) {
      // Only reached through a reference cycle; the caller records the error.
      return { id, slot: -1, isStatic: false, root: null, error: `cohort ${id} references itself through a cycle` };
    }
    this.inProgress.add(id);
    let compiled: CompiledCohort;
    const def = Object.prototype.hasOwnProperty.call(this.defs, String(id)) ? this.defs[String(id)] : undefined;
    if (def === undefined || (isObj(def) && def.is_static === true)) {
      compiled = { id, slot: this.byId.size, isStatic: true, root: null, error: null };
    } else {
      const errors: string[] = [];
      const group = isObj(def) && isObj(def.properties) && !('values' in def) ? def.properties : def;
      const root = this.compileNode(group, `cohorts.${id}`, errors);
      compiled = { id, slot: this.byId.size, isStatic: false, root, error: errors.length ? errors[0]! : null };
    }
    this.inProgress.delete(id);
    this.byId.set(id, compiled);
    return compiled;
  }

  private compileNode(node: unknown, path: string, errors: string[]): CohortNode {
    if (!isObj(node)) {
      errors.push(`${path}: must be an object`);
      return { kind: 'const', value: false };
    }
    if (Array.isArray(node.values)) {
      const t = typeof node.type === 'string' ? node.type.toUpperCase() : 'AND';
      if (t !== 'AND' && t !== 'OR' && t !== 'PROPERTY') {
        errors.push(`${path}.type: must be AND or OR, got ${JSON.stringify(node.type)}`);
      }
      const children = node.values.map((v, i) => this.compileNode(v, `${path}.values[${i}]`, errors));
      return { kind: t === 'OR' ? 'or' : 'and', children };
    }
    return this.compileLeaf(node, path, errors);
  }

  private compileLeaf(leaf: Record<string, unknown>, path: string, errors: string[]): CohortNode {
    const negation = leaf.negation === true;
    const type = typeof leaf.type === 'string' ? leaf.type : 'person';
    if (type === 'cohort') {
      const ref = cohortIdOf(leaf.value);
      if (ref === null) {
        errors.push(`${path}.value: cohort id must be an integer, got ${JSON.stringify(leaf.value)}`);
        return { kind: 'const', value: false };
      }
      const target = this.resolve(ref);
      if (target.error) errors.push(`${path}: cohort ${ref}: ${target.error}`);
      return { kind: 'ref', cohortId: ref, negate: (leaf.operator === 'not_in') !== negation };
    }
    if (type !== 'person' && type !== 'event' && type !== 'person_metadata') {
      // Behavioral / realtime leaves: no membership provider (see module doc).
      return { kind: 'const', value: negation };
    }
    if (typeof leaf.key !== 'string') {
      errors.push(`${path}.key: must be a string`);
      return { kind: 'const', value: false };
    }
    try {
      const { negation: _n, ...plain } = leaf;
      const filter = compilePropertyFilter(plain as unknown as Parameters<typeof compilePropertyFilter>[0], { timezone: this.timezone, matchingVersion: this.matchingVersion });
      return { kind: 'leaf', filter, negate: negation };
    } catch (e) {
      const field = isObj(e) && typeof e.field === 'string' ? `.${e.field}` : '';
      errors.push(`${path}${field}: ${e instanceof Error ? e.message : String(e)}`);
      return { kind: 'const', value: false };
    }
  }
}

/** Per-request inputs of cohort evaluation. */
export interface CohortScope {
  readonly table: CohortTable;
  readonly person: Readonly<Record<string, unknown>>;
  readonly staticIds: ReadonlySet<number> | null | undefined;
  readonly nowMs: number;
  /** 0 = unknown, 1 = member, 2 = not a member; sized `table.size`. */
  readonly memo: Int8Array;
}

/** Whether the person is in cohort `id`. Never throws for a compiled table (errors were found at compile time). */
export function inCohort(scope: CohortScope, id: number): boolean {
  const c = scope.table.resolve(id);
  if (c.slot >= 0 && c.slot < scope.memo.length) {
    const m = scope.memo[c.slot];
    if (m === 1) return true;
    if (m === 2) return false;
  }
  let member: boolean;
  if (c.error !== null) member = false;
  else if (c.isStatic) member = scope.staticIds?.has(id) ?? false;
  else member = evalNode(scope, c.root!);
  if (c.slot >= 0 && c.slot < scope.memo.length) scope.memo[c.slot] = member ? 1 : 2;
  return member;
}

function evalNode(scope: CohortScope, node: CohortNode): boolean {
  switch (node.kind) {
    case 'and':
      for (let i = 0; i < node.children.length; i++) if (!evalNode(scope, node.children[i]!)) return false;
      return true;
    case 'or':
      if (node.children.length === 0) return true;
      for (let i = 0; i < node.children.length; i++) if (evalNode(scope, node.children[i]!)) return true;
      return false;
    case 'leaf': {
      let r: boolean;
      try {
        r = node.filter.test(scope.person, scope.nowMs);
      } catch {
        r = false; // an operator error counts as false before negation (research §3.4)
      }
      return r !== node.negate;
    }
    case 'ref':
      return inCohort(scope, node.cohortId) !== node.negate;
    case 'const':
      return node.value;
  }
}

/** Cohort id of a filter value: an integer or a decimal-integer string; null otherwise. */
export function cohortIdOf(v: unknown): number | null {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) return Number(v.trim());
  return null;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
