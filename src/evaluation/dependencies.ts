/**
 * Flag-on-flag dependencies (research/posthog-flag-evaluation.md §3.5; Rust
 * `utils/graph_utils.rs` fallback path, docs/internal/feature-flags/flag-evaluation-engine.md).
 *
 * A dependency filter is `{type: "flag", key, operator: "flag_evaluates_to", value}`. Its `key` is
 * the dependency's flag **id** as a string in the stored form, or the dependency's flag **key** in
 * the local-feed form (which also carries `dependency_chain`). Both are accepted: with a
 * `dependency_chain` the key is read as a flag key first; without one, as an id first; either way
 * the other reading is the fallback.
 *
 * Ordering: Tarjan's strongly-connected components over live flags, which emits components
 * dependencies-first, so the output is an evaluation order in which every flag follows its
 * dependencies (flags without dependencies keep their stored order). A flag is **broken**
 * (evaluates to false with reason `missing_dependency`) when a dependency does not exist, when
 * it sits on a cycle (including a self-reference), or when a live dependency is broken.
 * Dependencies on inactive or deleted flags are not broken: they read as `false`.
 */

/** The parts of a flag this module reads. */
export interface DependencyInput {
  readonly id: unknown;
  readonly key: string;
  readonly live: boolean;
  readonly filters: unknown;
}

/** Result of {@link planDependencies}, indexed by the input position. */
export interface DependencyPlan {
  /** Input positions in evaluation order (every input appears once). */
  readonly order: readonly number[];
  /** Per input: the resolved input position of each dependency filter, in filter order; -1 = missing. */
  readonly refs: ReadonlyArray<ReadonlyMap<object, number>>;
  /** Per input: true when the flag must answer `missing_dependency`. */
  readonly broken: readonly boolean[];
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every `type: "flag"` filter object in `filters.groups[*].properties`. */
export function flagFiltersOf(filters: unknown): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (!isObj(filters) || !Array.isArray(filters.groups)) return out;
  for (const g of filters.groups) {
    if (!isObj(g) || !Array.isArray(g.properties)) continue;
    for (const p of g.properties) if (isObj(p) && p.type === 'flag') out.push(p);
  }
  return out;
}

/** Resolves every dependency filter and computes the evaluation order and broken flags. */
export function planDependencies(flags: readonly DependencyInput[]): DependencyPlan {
  const byId = new Map<string, number>();
  const byKey = new Map<string, number>();
  flags.forEach((f, i) => {
    if ((typeof f.id === 'number' || typeof f.id === 'string') && !byId.has(String(f.id))) byId.set(String(f.id), i);
    if (!byKey.has(f.key)) byKey.set(f.key, i);
  });
  const refs: Map<object, number>[] = [];
  const edges: number[][] = [];
  const missing: boolean[] = [];
  flags.forEach((f) => {
    const m = new Map<object, number>();
    const e: number[] = [];
    let miss = false;
    for (const filter of flagFiltersOf(f.filters)) {
      const key = typeof filter.key === 'string' ? filter.key : typeof filter.key === 'number' ? String(filter.key) : null;
      let target = -1;
      if (key !== null) {
        const feedForm = Array.isArray(filter.dependency_chain);
        const first = feedForm ? byKey.get(key) : byId.get(key);
        const second = feedForm ? byId.get(key) : byKey.get(key);
        target = first ?? second ?? -1;
      }
      m.set(filter, target);
      if (target < 0) miss = true;
      else e.push(target);
    }
    refs.push(m);
    edges.push(e);
    missing.push(miss);
  });

  // Tarjan's SCC, recursive (flag counts per project are small).
  const n = flags.length;
  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const stack: number[] = [];
  const order: number[] = [];
  const cyclic = new Array<boolean>(n).fill(false);
  let counter = 0;
  const strong = (v: number): void => {
    index[v] = low[v] = counter++;
    stack.push(v);
    onStack[v] = 1;
    if (flags[v]!.live) {
      for (const w of edges[v]!) {
        if (!flags[w]!.live) continue; // pre-seeded false; not followed
        if (w === v) cyclic[v] = true;
        if (index[w] === -1) {
          strong(w);
          low[v] = Math.min(low[v]!, low[w]!);
        } else if (onStack[w]) {
          low[v] = Math.min(low[v]!, index[w]!);
        }
      }
    }
    if (low[v] === index[v]) {
      const component: number[] = [];
      let w: number;
      do {
        w = stack.pop()!;
        onStack[w] = 0;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) for (const c of component) cyclic[c] = true;
      component.sort((a, b) => a - b);
      order.push(...component);
    }
  };
  for (let v = 0; v < n; v++) if (index[v] === -1) strong(v);

  const broken = new Array<boolean>(n).fill(false);
  for (const v of order) {
    if (!flags[v]!.live) continue;
    let b = missing[v]! || cyclic[v]!;
    for (const w of edges[v]!) if (flags[w]!.live && broken[w]) b = true;
    broken[v] = b;
  }
  // A cycle member may be visited before the member it depends on is marked; repeat to a fixpoint.
  let changed = true;
  while (changed) {
    changed = false;
    for (const v of order) {
      if (!flags[v]!.live || broken[v]) continue;
      for (const w of edges[v]!) {
        if (flags[w]!.live && broken[w]) { broken[v] = true; changed = true; break; }
      }
    }
  }
  return { order, refs, broken };
}
