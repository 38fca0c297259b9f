/**
 * What crosses between the control plane's event loop and its scan workers (`workers/scan.ts`):
 * a plan (what to match, compiled once per worker), then tasks that run it over a chunk of rows
 * or over one person. Plain structured-clone shapes only; the plan travels as UTF-8 JSON in a
 * SharedArrayBuffer so each task shares it instead of copying it.
 *
 * Rows are JSON text built by Postgres (`json_build_array(...)::text`), one string per row: the
 * event loop neither parses them into objects nor clones objects to the worker (cloning a string
 * costs a fifth of cloning the object it encodes), and the worker parses them.
 */
import type { CohortDefinition, ProjectDefinitions } from '../../evaluation/index.js';

/**
 * Counts persons for a one-group flag (user_blast_radius). Rows: `[cohort_ids, v0, …, vn]` with
 * the static cohort ids (or null) and, when the prepare answer named person keys, each key's
 * typed text (`<jsonb_typeof>:<text>`, null when absent); `[cohort_ids, properties]` otherwise.
 */
export interface FlagPersonsPlan {
  kind: 'flag-persons';
  definitions: ProjectDefinitions;
  timezone: string;
  flagKey: string;
  /** The condition's property filters, tested directly when every one reads person properties. */
  properties: unknown[];
  nowMs: number;
}

/** Counts groups of one type for a one-group flag. Rows: `[group_key, properties]`. */
export interface FlagGroupsPlan {
  kind: 'flag-groups';
  definitions: ProjectDefinitions;
  timezone: string;
  flagKey: string;
  groupType: string;
  nowMs: number;
}

/**
 * Members of a cohort (cohort calculation). Rows: `[json, leaves]`, `json` the text of
 * `[properties, cohort_ids]`, `leaves` the behavioural leaves (by index) the person satisfied,
 * answered in SQL; each becomes person property `<leafKey><index>` = `'true'`.
 */
export interface CohortPlan {
  kind: 'cohort';
  cohorts: Record<string, CohortDefinition>;
  timezone: string;
  cohortId: number;
  leafKey: string;
  nowMs: number;
}

/**
 * Persons a flag is enabled for (optionally: serves `variant`), as a node would answer for the
 * person's first distinct id. Rows: `[distinct_id, properties, cohort_ids, overrides]`.
 */
export interface FlagStaticPlan {
  kind: 'flag-static';
  definitions: ProjectDefinitions;
  timezone: string;
  flagKey: string;
  variant: string | null;
  nowMs: number;
}

/** Every flag of a project for one person (evaluation_reasons, my_flags). */
export interface EvaluatePlan {
  kind: 'evaluate';
  definitions: ProjectDefinitions;
  timezone: string;
}

/** Every kind of plan a scan worker compiles once and matches rows against. */
export type ScanPlan = FlagPersonsPlan | FlagGroupsPlan | CohortPlan | FlagStaticPlan | EvaluatePlan;

/** A plan as tasks carry it: `id` keys each worker's compiled cache; `json` is its UTF-8 JSON. */
export interface PlanRef {
  readonly id: number;
  readonly json: SharedArrayBuffer;
  readonly length: number;
}

/** Compile the plan and report what the caller needs before it reads rows. */
export interface PrepareTask { op: 'prepare'; plan: PlanRef }
/**
 * Match rows until done, or for `sliceMs` milliseconds from the task's start (then answer how
 * far it got, so other scans get the worker), or until `deadlineMs`, epoch milliseconds (then
 * answer `expired`).
 */
export interface MatchTask { op: 'match'; plan: PlanRef; rows: unknown[]; sliceMs: number; deadlineMs: number }
/**
 * Evaluates every flag of an evaluate plan for one request; past `deadlineMs` (epoch ms) the flags
 * not yet evaluated answer as failed entries (the evaluation core's budget), so one request's
 * pathological flags cannot hold a worker to its termination.
 */
export interface EvaluateTask { op: 'evaluate'; plan: PlanRef; body: Record<string, unknown>; stored: import('../../evaluation/index.js').StoredContext; deadlineMs: number }

/** Every task the pool sends a scan worker (workers/scan.ts). */
export type ScanTask = PrepareTask | MatchTask | EvaluateTask;

/** The prepare answer: the first compile problem (null when none) and the person keys rows need (null: all). */
export interface PrepareAnswer { problem: string | null; personKeys: string[] | null }

/** The match answer: indexes (into the task's rows) of the rows that matched, among the first `done`. */
export interface MatchAnswer { matched: number[]; done: number; expired: boolean }
