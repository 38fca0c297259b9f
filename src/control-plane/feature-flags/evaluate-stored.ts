/**
 * Flag evaluation on the control plane, for the helpers that answer "what would this person get"
 * (F14 evaluation_reasons, F16 my_flags, F7 static cohort for a flag): the project's definitions
 * as the local-evaluation feed carries them (the nodes' input, shared builder) and the person's
 * stored context from Postgres — properties, static cohorts, group properties and hash-key
 * overrides — handed to the same evaluation core the nodes run, so the answers equal `/flags`.
 */
import type { Sql } from '../db/connect.js';
import {
  compileProject, evaluateFlags, requestFromBody, type CompiledProject, type EvaluationResult, type ProjectDefinitions, type StoredContext,
} from '../../evaluation/index.js';
import { localEvaluationBody } from './local-evaluation-routes.js';

/** A project's compiled definitions, with its time zone. */
export interface CompiledFlags { compiled: CompiledProject; definitions: ProjectDefinitions; timezone: string }

/** Compiles the project's flags (the feed with cohorts, as nodes hold them). */
export async function compileProjectFlags(sql: Sql, projectId: number): Promise<CompiledFlags> {
  const [project] = await sql<{ timezone: string; property_matching_version: number }[]>`
    SELECT timezone, property_matching_version FROM projects WHERE id = ${projectId}`;
  const definitions = JSON.parse(await localEvaluationBody(sql, projectId, true, project?.property_matching_version ?? 1)) as ProjectDefinitions;
  const timezone = project?.timezone ?? 'UTC';
  return { compiled: compileProject(definitions, { timezone }), definitions, timezone };
}

/** What Postgres holds for `distinctId` and its `groups` (type name → key). */
export async function storedContext(sql: Sql, projectId: number, distinctId: string, groups: Record<string, string>, typeIndex: Record<string, string>): Promise<StoredContext> {
  const [person] = await sql<{ properties: Record<string, unknown>; cohort_ids: number[]; overrides: Record<string, string> | null }[]>`
    SELECT p.properties,
      ARRAY(SELECT cp.cohort_id::int FROM cohort_people cp WHERE cp.person_id = p.id) AS cohort_ids,
      (SELECT jsonb_object_agg(o.feature_flag_key, o.hash_key) FROM feature_flag_hash_key_overrides o WHERE o.person_id = p.id) AS overrides
    FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
    WHERE d.project_id = ${projectId} AND d.distinct_id = ${distinctId}`;
  const groupProperties: Record<string, Record<string, unknown>> = {};
  for (const [index, type] of Object.entries(typeIndex)) {
    const key = groups[type];
    if (key === undefined) continue;
    const [g] = await sql<{ properties: Record<string, unknown> }[]>`SELECT properties FROM groups
      WHERE project_id = ${projectId} AND group_type_index = ${Number(index)} AND group_key = ${String(key)}`;
    if (g) groupProperties[type] = g.properties;
  }
  return {
    person_properties: person?.properties ?? null,
    static_cohort_ids: person && person.cohort_ids.length > 0 ? new Set(person.cohort_ids) : null,
    group_properties: Object.keys(groupProperties).length > 0 ? groupProperties : null,
    hash_key_overrides: person?.overrides ?? null,
  };
}

/** Evaluates every flag of the project for `distinctId` (and `groups`) as a node would. */
export async function evaluateStored(sql: Sql, projectId: number, distinctId: string, groups: Record<string, string> = {}, flags?: CompiledFlags): Promise<EvaluationResult> {
  const f = flags ?? await compileProjectFlags(sql, projectId);
  const stored = await storedContext(sql, projectId, distinctId, groups, f.definitions.group_type_mapping);
  return evaluateFlags(f.compiled, requestFromBody({ distinct_id: distinctId, groups }), stored, Date.now());
}
