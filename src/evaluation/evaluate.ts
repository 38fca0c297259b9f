/**
 * `evaluateFlags`: one /flags request against a compiled project (research/posthog-flag-evaluation.md
 * §4 "Per request"; Rust `flags/flag_matching.rs` `evaluate_all_feature_flags`).
 *
 * Candidate set — a flag is answered only when all hold:
 * - active and not deleted (others are omitted from the response, not returned as false);
 * - with `only_evaluate_survey_feature_flags`, its key starts with `survey-targeting-`;
 * - runtime: `req.runtime` "client" keeps flags whose `evaluation_runtime` is client or all,
 *   "server" keeps server or all, null (undetermined) keeps only all; a missing or unknown
 *   runtime counts as all (spec/API.md §4.4 rule 3); `req.runtime: 'all'` (internal callers) keeps every flag;
 * - evaluation tags: a flag with tags is kept only if a tag equals one of
 *   `req.evaluation_environments`; a flag without tags is always kept (spec rule 2);
 * - `flag_keys_to_evaluate` (when not null): the requested keys plus, transitively, the candidates
 *   they depend on.
 * Flags are evaluated in dependency order; a dependency outside the candidate set reads `false`.
 *
 * Pure: no IO, no clock of its own (`nowMs` is the request's "now", used by relative-date
 * operators; the optional budget brings the caller's clock). A flag that throws unexpectedly
 * becomes a failed entry (`internal_error`); the others are kept. With a budget (budget.ts), the
 * clock is read before each flag: once it has run out, that flag and every later one are failed
 * entries `timeout:evaluation_budget`, as is a flag during which a regex or `icontains` step found
 * it spent (its answer was cut short); flags answered before keep their results.
 */
import { beginBudget, budgetSpent, endBudget, outOfBudget, type EvaluationBudget } from './budget.js';
import type { CompiledFlag, CompiledProject } from './compiled.js';
import { RequestScope } from './context.js';
import { failedResult, matchFlag } from './match-flag.js';
import { ERROR_CODES } from './reasons.js';
import type { EvaluationRequest, EvaluationResult, FlagResult, StoredContext } from './types.js';

const SURVEY_PREFIX = 'survey-targeting-';
const BUDGET_CODE = 'timeout:evaluation_budget';

/**
 * Per project: how many flags are live and, when usable, a function that builds the response's
 * `flags` object from the live flags' results in slot order.
 *
 * Why generated code: a clone of a template with every key, then one keyed store per flag,
 * would send all those stores through one megamorphic site (50 different names), each a
 * stub-cache lookup. An object literal with constant names is created from its
 * boilerplate in one step. Microbench (50 workload keys): clone + 50 stores 1.3–1.5 µs, literal
 * 0.15–0.19 µs per request. Built once per compiled project; names are JSON-escaped string
 * literals (valid JS), so no flag key can inject code. Property order is the literal's, which is
 * what the clone gave (integer-like keys first, then slot order). Not used with a `__proto__`
 * key (a literal would set the prototype) or above {@link MAX_LITERAL_FLAGS} live flags.
 */
interface Template {
  count: number;
  build: ((results: readonly FlagResult[]) => Record<string, FlagResult>) | null;
  /** The built object enumerates its keys in slot order (no integer-like key is hoisted first). */
  slotOrder: boolean;
}
/** Larger projects take the generic path (V8 keeps literals beyond ~1,000 properties in dictionary mode anyway). */
const MAX_LITERAL_FLAGS = 1_000;
const templates = new WeakMap<CompiledProject, Template>();
function templateOf(project: CompiledProject): Template {
  let t = templates.get(project);
  if (t === undefined) {
    const live = project.flags.filter((f) => f.live);
    let build: Template['build'] = null;
    if (live.length <= MAX_LITERAL_FLAGS && live.every((f) => f.key !== '__proto__')) {
      const members = live.map((f, i) => `${JSON.stringify(f.key)}:r[${i}]`).join(',');
      build = new Function('r', `return {${members}};`) as Template['build'];
    }
    t = { count: live.length, build, slotOrder: live.every((f) => !ARRAY_INDEX.test(f.key)) };
    templates.set(project, t);
  }
  return t;
}

/** Keys an object enumerates before its other keys (array indices: canonical integers below 2^32 - 1). */
const ARRAY_INDEX = /^(?:0|[1-9][0-9]{0,9})$/;

/** Results of the current request in slot order (reused: evaluateFlags is synchronous and not re-entrant). */
const slotResults: FlagResult[] = [];

/**
 * The last result whose `flags` object enumerates exactly `slotResults` in order, with no failed
 * entry (see {@link orderedResultsOf}).
 */
let lastOrdered: EvaluationResult | null = null;

/**
 * The entries of `result.flags` in enumeration order as a reused array, when `result` is the
 * latest result of {@link evaluateFlags}, answered every live flag of its project, has no failed
 * entry and its key order is slot order; else null (iterate `result.flags`). Valid only until the
 * next `evaluateFlags` call: serializers call it right after evaluating, so they need not walk the
 * object's keys (a megamorphic keyed load per flag). Never write to it.
 */
export function orderedResultsOf(result: EvaluationResult): readonly FlagResult[] | null {
  return result === lastOrdered ? slotResults : null;
}

function runtimeAllowed(flag: CompiledFlag, runtime: EvaluationRequest['runtime']): boolean {
  if (flag.runtime === 'all' || runtime === 'all') return true;
  return runtime === flag.runtime;
}

function tagsAllowed(flag: CompiledFlag, envs: readonly string[] | null | undefined): boolean {
  const tags = flag.tags;
  if (tags === null) return true;
  if (!envs || envs.length === 0) return false;
  for (let i = 0; i < tags.length; i++) if (envs.includes(tags[i]!)) return true;
  return false;
}

/**
 * Candidate sets of requests that filter by runtime only (no environments, no flag keys, not
 * survey-only: the usual SDK call), per project and runtime. Shared: never mutate them.
 */
const plainSelections = new WeakMap<CompiledProject, Map<string, Uint8Array>>();

/**
 * Which flags of `project` this request answers, by slot (1 = answered). The array may be shared
 * between requests: read it, never write it.
 */
export function selectCandidates(project: CompiledProject, req: EvaluationRequest): Uint8Array {
  const surveyOnly = req.only_evaluate_survey_feature_flags === true;
  const envs = req.evaluation_environments;
  const keys = req.flag_keys_to_evaluate;
  if (!surveyOnly && (envs === null || envs === undefined || envs.length === 0) && (keys === null || keys === undefined)) {
    let byRuntime = plainSelections.get(project);
    if (byRuntime === undefined) plainSelections.set(project, (byRuntime = new Map()));
    const rk = String(req.runtime ?? null);
    let sel = byRuntime.get(rk);
    if (sel === undefined) byRuntime.set(rk, (sel = computeSelection(project, req, false, envs)));
    return sel;
  }
  const selected = computeSelection(project, req, surveyOnly, envs);
  return keys === null || keys === undefined ? selected : narrowToKeys(project, selected, keys);
}

function computeSelection(project: CompiledProject, req: EvaluationRequest, surveyOnly: boolean, envs: readonly string[] | null | undefined): Uint8Array {
  const flags = project.flags;
  const selected = new Uint8Array(flags.length);
  for (let i = 0; i < flags.length; i++) {
    const f = flags[i]!;
    if (!f.live) continue;
    if (surveyOnly && !f.key.startsWith(SURVEY_PREFIX)) continue;
    if (!runtimeAllowed(f, req.runtime ?? null)) continue;
    if (!tagsAllowed(f, envs)) continue;
    selected[i] = 1;
  }
  return selected;
}

/** `flag_keys_to_evaluate`: the requested candidates plus, transitively, their candidate dependencies. */
function narrowToKeys(project: CompiledProject, selected: Uint8Array, keys: readonly string[]): Uint8Array {
  const flags = project.flags;
  const wanted = new Uint8Array(flags.length);
  for (const k of keys) {
    const f = project.byKey.get(k);
    if (f && selected[f.slot]) wanted[f.slot] = 1;
  }
  // Dependents come after their dependencies, so one backward pass closes over dependencies.
  for (let i = flags.length - 1; i >= 0; i--) {
    if (!wanted[i]) continue;
    for (const d of flags[i]!.dependencySlots) if (selected[d]) wanted[d] = 1;
  }
  return wanted;
}

/**
 * Evaluates every candidate flag for `req`. `stored` is what the node holds for this person and
 * its groups; `nowMs` is the evaluation time in Unix milliseconds; `budget` (optional) bounds the
 * evaluation time of the whole call (module doc). Never throws for one flag.
 */
export function evaluateFlags(project: CompiledProject, req: EvaluationRequest, stored: StoredContext, nowMs: number, budget?: EvaluationBudget | null): EvaluationResult {
  lastOrdered = null;
  beginBudget(budget);
  try {
    return evaluateSelected(project, req, stored, nowMs);
  } finally {
    endBudget();
  }
}

function evaluateSelected(project: CompiledProject, req: EvaluationRequest, stored: StoredContext, nowMs: number): EvaluationResult {
  const selected = selectCandidates(project, req);
  const scope = new RequestScope(project, req, stored ?? {}, nowMs);
  // Answering every live flag (the usual case): collect the results in slot order and build the
  // object with the project's literal (templateOf); otherwise store key by key.
  let count = 0;
  for (let i = 0; i < selected.length; i++) count += selected[i]!;
  const template = templateOf(project);
  const slots = template.build !== null && count === template.count ? slotResults : null;
  const out: Record<string, FlagResult> = slots === null ? {} : (EMPTY_OUT as Record<string, FlagResult>);
  let n = 0;
  let errors = false;
  const flags = project.flags;
  for (let i = 0; i < flags.length; i++) {
    if (!selected[i]) continue;
    const flag = flags[i]!;
    let r: FlagResult;
    if (outOfBudget()) {
      r = failedResult(flag, BUDGET_CODE, ERROR_CODES[BUDGET_CODE]);
    } else {
      try {
        r = matchFlag(flag, scope);
      } catch (e) {
        r = failedResult(flag, 'internal_error', `${ERROR_CODES.internal_error}: ${e instanceof Error ? e.message : String(e)}`);
      }
      if (budgetSpent()) r = failedResult(flag, BUDGET_CODE, ERROR_CODES[BUDGET_CODE]);
    }
    if (r.failed) errors = true;
    else if (r.enabled && project.readsFlagValues) scope.values[i] = r.variant ?? true;
    if (slots !== null) slots[n++] = r;
    else if (flag.key === '__proto__') Object.defineProperty(out, flag.key, { value: r, enumerable: true, writable: true, configurable: true });
    else out[flag.key] = r;
  }
  if (slots !== null) {
    const flagsObject = template.build!(slots);
    // Do not keep this request's failed (per-request) results alive through the scratch array.
    if (errors) slots.length = 0;
    const res: EvaluationResult = { flags: flagsObject, errorsWhileComputingFlags: errors };
    if (!errors && template.slotOrder) {
      if (slots.length !== n) slots.length = n; // a larger project evaluated before left entries behind
      lastOrdered = res;
    }
    return res;
  }
  return { flags: out, errorsWhileComputingFlags: errors };
}

/** Placeholder for `out` on the literal path (never written). */
const EMPTY_OUT = Object.freeze({});
