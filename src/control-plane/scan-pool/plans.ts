/**
 * The scan worker's side of the protocol (protocol.ts), pure: compiles a plan with the evaluation
 * core — the same compiler and matcher the nodes run, so a person counts exactly when a node
 * would match them — and matches rows against it. No IO and no clock of its own: the worker
 * passes the time in.
 */
import { type JsonObject, isJsonObject } from '../../json-shapes.js';
import {
  compileProject, evaluateFlags, requestFromBody, storedPropertyUse, type CompiledProject, type EvaluationBudget, type EvaluationResult, type StoredContext,
} from '../../evaluation/index.js';
import { compilePropertyFilter, type CompiledPropertyFilter } from '../../evaluation/properties/index.js';
import { CohortTable, inCohort } from '../../evaluation/cohorts.js';
import type { MatchAnswer, PrepareAnswer, ScanPlan } from './protocol.js';

type Obj = JsonObject;

/** A compiled plan: what prepare answers, a row matcher, and (evaluate plans) the project. */
export interface CompiledPlan {
  readonly prepared: PrepareAnswer;
  /** Whether one row (protocol.ts: JSON text, or a tuple holding it) matches; null for evaluate plans and plans with a problem. */
  readonly match: ((row: unknown) => boolean) | null;
  readonly project: CompiledProject | null;
}

/** A value encoded as `<jsonb_typeof>:<->> text>` back to JSON (blast radius's typed columns). */
export function decodeTyped(v: string): unknown {
  const at = v.indexOf(':');
  const type = v.slice(0, at);
  const text = v.slice(at + 1);
  switch (type) {
    case 'string': return text;
    case 'number': return Number(text);
    case 'boolean': return text === 'true';
    case 'null': return null;
    default: return JSON.parse(text); // object, array
  }
}

const failed = (problem: string): CompiledPlan => ({ prepared: { problem, personKeys: null }, match: null, project: null });

/** Compiles `plan`. Never throws: an uncompilable plan answers its problem. */
export function compilePlan(plan: ScanPlan): CompiledPlan {
  try {
    switch (plan.kind) {
      case 'flag-persons': return flagPersons(plan);
      case 'flag-groups': {
        const project = compileProject(plan.definitions, { timezone: plan.timezone });
        if (project.problems.length > 0) return failed(project.problems[0]!.message);
        const { flagKey, groupType, nowMs } = plan;
        return {
          prepared: { problem: null, personKeys: null }, project,
          match: (row) => {
            const [key, properties] = JSON.parse(row as string) as [string, Obj];
            return evaluateFlags(project, requestFromBody({ distinct_id: 'blast-radius', groups: { [groupType]: key } }),
              { group_properties: { [groupType]: properties } }, nowMs).flags[flagKey]?.enabled === true;
          },
        };
      }
      case 'cohort': {
        const table = new CohortTable(plan.cohorts, plan.timezone);
        const resolved = table.resolve(plan.cohortId);
        if (resolved.error !== null) return failed(resolved.error);
        const { cohortId, leafKey, nowMs } = plan;
        return {
          prepared: { problem: null, personKeys: null }, project: null,
          match: (row) => {
            const [json, leaves] = row as [string, number[]];
            const [person, ids] = JSON.parse(json) as [Obj, number[]];
            for (const i of leaves) person[`${leafKey}${i}`] = 'true';
            const staticIds = ids.length > 0 ? new Set(ids) : null;
            return inCohort({ table, person, staticIds, nowMs, memo: new Int8Array(table.size) }, cohortId);
          },
        };
      }
      case 'flag-static': {
        const project = compileProject(plan.definitions, { timezone: plan.timezone });
        const { flagKey, variant, nowMs } = plan;
        return {
          prepared: { problem: null, personKeys: null }, project,
          match: (row) => {
            const [distinctId, properties, ids, overrides] = JSON.parse(row as string) as [string, Obj, number[], Record<string, string> | null];
            const r = evaluateFlags(project, requestFromBody({ distinct_id: distinctId, flag_keys_to_evaluate: [flagKey] }), {
              person_properties: properties, static_cohort_ids: ids.length > 0 ? new Set(ids) : null, hash_key_overrides: overrides,
            }, nowMs).flags[flagKey];
            return r !== undefined && r.enabled && !r.failed && (variant === null || r.variant === variant);
          },
        };
      }
      case 'evaluate': return { prepared: { problem: null, personKeys: null }, match: null, project: compileProject(plan.definitions, { timezone: plan.timezone }) };
    }
  } catch (e) {
    return failed(e instanceof Error ? e.message : String(e));
  }
}

/**
 * user_blast_radius over persons: when the condition reads only person properties, its compiled
 * property filters are tested directly (the compiler and options the flag's condition uses, ANDed
 * as the condition ANDs them) instead of a whole flag evaluation per person.
 */
function flagPersons(plan: Extract<ScanPlan, { kind: 'flag-persons' }>): CompiledPlan {
  const { definitions: defs, flagKey, nowMs } = plan;
  const project = compileProject(defs, { timezone: plan.timezone });
  if (project.problems.length > 0) return failed(project.problems[0]!.message);
  const keys = storedPropertyUse(project).personKeys;
  const properties = plan.properties as Obj[];
  const direct: CompiledPropertyFilter[] | null = properties.every((p) => isJsonObject(p) && (p.type ?? 'person') === 'person')
    ? properties.map((p) => compilePropertyFilter(p as never, { timezone: plan.timezone, matchingVersion: defs.property_matching_version === 2 ? 2 : 1 }))
    : null;
  const request = requestFromBody({ distinct_id: 'blast-radius' });
  const match = (row: unknown): boolean => {
    const values = JSON.parse(row as string) as unknown[];
    let person: Obj;
    if (keys === null) person = (values[1] as Obj | null) ?? {};
    else {
      person = {};
      for (let i = 0; i < keys.length; i++) {
        const v = values[i + 1] as string | null;
        if (v !== null && v !== undefined) person[keys[i]!] = decodeTyped(v);
      }
    }
    if (direct) {
      for (let i = 0; i < direct.length; i++) if (!direct[i]!.test(person, nowMs)) return false;
      return true;
    }
    const cohorts = values[0] as number[] | null;
    return evaluateFlags(project, request, { person_properties: person, static_cohort_ids: cohorts && cohorts.length > 0 ? new Set(cohorts) : null }, nowMs)
      .flags[flagKey]?.enabled === true;
  };
  return { prepared: { problem: null, personKeys: keys === null ? null : [...keys] }, match, project };
}

/**
 * Matches `rows` in order until all are done, `sliceMs` have passed since the call (answer how
 * far it got; at least one row is always done) or `deadlineMs` (answer `expired`). The clock (epoch ms)
 * is read before each row, so a row that starts before the deadline finishes. A plan that failed
 * to compile matches nothing.
 */
export function matchRows(plan: CompiledPlan, rows: readonly unknown[], sliceMs: number, deadlineMs: number, now: () => number): MatchAnswer {
  const matched: number[] = [];
  const sliceEndMs = now() + sliceMs;
  const match = plan.match;
  if (match === null) return { matched, done: rows.length, expired: false };
  for (let i = 0; i < rows.length; i++) {
    const t = now();
    if (t >= deadlineMs) return { matched, done: i, expired: true };
    if (t >= sliceEndMs && i > 0) return { matched, done: i, expired: false }; // at least one row per task: progress
    if (match(rows[i]!)) matched.push(i);
  }
  return { matched, done: rows.length, expired: false };
}

/**
 * Evaluates every flag of an evaluate plan for one request `body` and `stored` context, within
 * `budget` (flags past its deadline answer as failed entries; evaluation/budget.ts).
 */
export function evaluateOne(plan: CompiledPlan, body: Record<string, unknown>, stored: StoredContext, nowMs: number, budget?: EvaluationBudget): EvaluationResult {
  if (plan.project === null) throw new Error('not an evaluate plan');
  return evaluateFlags(plan.project, requestFromBody(body), stored, nowMs, budget);
}
