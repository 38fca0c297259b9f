/**
 * Flag evaluation on the control plane, for the helpers that answer "what would this person get"
 * (F14 evaluation_reasons, F16 my_flags, F7 static cohort for a flag): the project's definitions
 * as the local-evaluation feed carries them (the nodes' input, shared builder) and the person's
 * stored context from Postgres — properties, static cohorts, group properties and hash-key
 * overrides — handed to the same evaluation core the nodes run, so the answers equal `/flags`.
 * Compilation and evaluation run in the scan pool (scan-pool/): a pathological pattern costs a
 * worker until the request's deadline (504 past it), never the event loop; each call takes one
 * of the project's scan slots (429 past them).
 */
import type { Sql } from '../db/connect.js';
import type { EvaluationResult, ProjectDefinitions, StoredContext } from '../../evaluation/index.js';
import { scanPoolFor } from '../scan-pool/index.js';
import { localEvaluationBody } from './local-evaluation-routes.js';

/** A project's definitions, with its time zone. */
export interface ProjectFlags { definitions: ProjectDefinitions; timezone: string }

/** The project's flags as nodes hold them (the local-evaluation feed with cohorts), uncompiled. */
export async function loadProjectFlags(sql: Sql, projectId: number): Promise<ProjectFlags> {
  const [project] = await sql<{ timezone: string; property_matching_version: number }[]>`
    SELECT timezone, property_matching_version FROM projects WHERE id = ${projectId}`;
  const definitions = JSON.parse(await localEvaluationBody(sql, projectId, true, project?.property_matching_version ?? 1)) as ProjectDefinitions;
  return { definitions, timezone: project?.timezone ?? 'UTC' };
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

/**
 * Evaluates every flag of the project for `distinctId` (and `groups`) as a node would, in the
 * scan pool. @throws ApiError 429 when the project's scan slots are taken, 504 past the deadline.
 */
export async function evaluateStored(sql: Sql, projectId: number, distinctId: string, groups: Record<string, string> = {}, flags?: ProjectFlags): Promise<EvaluationResult> {
  const scan = scanPoolFor(sql).begin(projectId);
  try {
    const f = flags ?? await loadProjectFlags(sql, projectId);
    const stored = await storedContext(sql, projectId, distinctId, groups, f.definitions.group_type_mapping);
    const plan = scan.plan({ kind: 'evaluate', definitions: f.definitions, timezone: f.timezone });
    return await scan.evaluate(plan, { distinct_id: distinctId, groups }, stored);
  } finally {
    scan.end();
  }
}
