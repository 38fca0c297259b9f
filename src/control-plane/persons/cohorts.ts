/**
 * The cohorts one person belongs to (PostHog `GET /persons/cohorts/?person_id=`, PersonViewSet
 * `cohorts`; PostHog reads precomputed membership from ClickHouse, here it is decided when asked):
 *
 * - a static cohort: the person's stored rows (cohort_people);
 * - a dynamic cohort: its filters matched against the person's stored properties by the
 *   evaluation core the nodes run, exactly as a flag whose one condition is "in cohort <id>"
 *   would match this person — nested cohorts, negation and the project's property matching
 *   version included. Behavioural leaves are answered first in SQL over the person's events (its
 *   own and those of persons merged into it) and handed to the core as synthetic person
 *   properties, as the cohort count does (cohorts/calculate.ts). A leaf whose window cannot be
 *   read makes its cohort, and every cohort referencing it, count nobody;
 * - deleted cohorts are never listed. A dynamic cohort without filters has no member.
 *
 * The matching runs in the scan pool (scan-pool/): one of the project's scan slots (429 past
 * them) under the request deadline (SWITCHYARD_SCAN_TIMEOUT_MS). A regex search stops at its own
 * limit (a non-match, as on the nodes); past the deadline the answer is 504, never a partial list.
 */
import type { Sql } from '../db/connect.js';
import { ApiError, errors } from '../../errors.js';
import { type JsonObject } from '../../json-shapes.js';
import type { CohortDefinition, FlagDefinition, ProjectDefinitions } from '../../evaluation/index.js';
import { LEAF_KEY, leafMembers, rewrite, type BehavioralLeaf } from '../cohorts/calculate.js';
import { scanPoolFor } from '../scan-pool/index.js';
import { eventPersonUuids, type PersonRow } from './lookup.js';

/** Reason-code prefix of a flag cut short by the evaluation budget (evaluation/evaluate.ts). */
const TIMEOUT_CODE = 'timeout:';

/** Key of the synthetic flag asking "is the person in cohort `id`". */
const flagKey = (id: number) => `cohort-${id}`;

interface CohortFilterRow { id: number; filters: JsonObject; is_static: boolean }

/**
 * Ids of the live cohorts of `projectId` the person belongs to, ascending, as of `now`.
 * @throws ApiError 429 when the project's scan slots are taken; 504 past the scan deadline.
 */
export async function personCohortIds(sql: Sql, projectId: number, person: PersonRow, now = new Date()): Promise<number[]> {
  const cohorts = await sql<CohortFilterRow[]>`
    SELECT id::int AS id, filters, is_static FROM cohorts WHERE project_id = ${projectId} AND NOT deleted ORDER BY id`;
  const stored = new Set((await sql<{ id: number }[]>`
    SELECT cohort_id::int AS id FROM cohort_people WHERE person_id = ${person.id}`).map((r) => r.id));
  const members = new Set(cohorts.filter((c) => c.is_static && stored.has(c.id)).map((c) => c.id));
  const dynamic = cohorts.filter((c) => !c.is_static && c.filters.properties !== undefined);
  if (dynamic.length > 0) {
    for (const id of await dynamicMembers(sql, projectId, person, cohorts, dynamic, stored, now)) members.add(id);
  }
  return [...members].sort((a, b) => a - b);
}

/** The dynamic cohorts of `dynamic` the person is in, matched in the scan pool. */
async function dynamicMembers(sql: Sql, projectId: number, person: PersonRow, cohorts: readonly CohortFilterRow[],
  dynamic: readonly CohortFilterRow[], stored: ReadonlySet<number>, now: Date): Promise<number[]> {
  const [project] = await sql<{ timezone: string; property_matching_version: number }[]>`
    SELECT timezone, property_matching_version FROM projects WHERE id = ${projectId}`;
  const properties: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(person.properties)) if (!k.startsWith(LEAF_KEY)) properties[k] = v;
  const defs: Record<string, CohortDefinition | null> = {};
  const leaves: BehavioralLeaf[] = [];
  let eventPersons: string[] | null = null;
  for (const c of cohorts) {
    if (c.is_static) { defs[String(c.id)] = { ...c.filters, is_static: true } as CohortDefinition; continue; }
    const first = leaves.length;
    const rewritten = rewrite(c.filters, leaves) as JsonObject;
    let readable = true;
    for (const l of leaves.slice(first)) {
      eventPersons ??= await eventPersonUuids(sql, projectId, person.uuid);
      let hit: boolean;
      try {
        hit = (await leafMembers(sql, projectId, l.leaf, now, eventPersons)).has(Number(person.id));
      } catch (e) {
        if (!(e instanceof ApiError)) throw e; // an unreadable leaf (window, event filters), not a failing database
        readable = false;
        break;
      }
      if (hit) properties[`${LEAF_KEY}${l.index}`] = 'true';
    }
    // A non-object definition is one the core cannot compile: the cohort and its referrers match nobody.
    defs[String(c.id)] = readable ? { ...rewritten, is_static: false } as CohortDefinition : null;
  }
  const flags: FlagDefinition[] = dynamic.map((c) => ({
    id: c.id, key: flagKey(c.id), active: true, deleted: false, ensure_experience_continuity: false,
    filters: { groups: [{ properties: [{ type: 'cohort', key: 'id', value: c.id }], rollout_percentage: 100 }] },
  } as FlagDefinition));
  const definitions: ProjectDefinitions = {
    flags, group_type_mapping: {}, cohorts: defs as Record<string, CohortDefinition>,
    property_matching_version: project?.property_matching_version ?? 1,
  };
  const scan = scanPoolFor(sql).begin(projectId);
  try {
    const plan = scan.plan({ kind: 'evaluate', definitions, timezone: project?.timezone ?? 'UTC' });
    const result = await scan.evaluate(plan, { distinct_id: person.uuid }, {
      person_properties: properties, static_cohort_ids: stored.size > 0 ? new Set(stored) : null,
    });
    const out: number[] = [];
    for (const c of dynamic) {
      const r = result.flags[flagKey(c.id)];
      if (r?.failed && r.reason.code.startsWith(TIMEOUT_CODE)) throw errors.queryTimeout();
      if (r !== undefined && r.enabled && !r.failed) out.push(c.id);
    }
    return out;
  } finally {
    scan.end();
  }
}
