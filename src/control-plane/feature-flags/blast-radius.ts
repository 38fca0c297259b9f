/**
 * F17 `user_blast_radius` (research/posthog-management-api.md §2.11): how many persons (or groups
 * of one type) a release condition's properties match, out of how many. The rollout percentage is
 * ignored (PostHog's frontend applies it).
 *
 * The condition is compiled by the evaluation core as a one-group flag (with the project's cohorts),
 * so a person counts exactly when a node would match the condition's properties for them; when it
 * reads only person properties, its compiled property filters are tested directly. Persons
 * are streamed in pages, and only the person properties the condition reads are fetched (the
 * core's `storedPropertyUse`), each as its own small column: the cost is one row scan plus a few
 * small JSON values per person.
 *
 * Compiling and matching run in the scan pool (scan-pool/, plans.ts `flag-persons` and
 * `flag-groups`), never on the event loop: past SWITCHYARD_SCAN_TIMEOUT_MS the request answers
 * 504 (PostHog's query timeout; no partial count, as PostHog's count query has none), and a
 * project already running SWITCHYARD_SCAN_PROJECT_CONCURRENCY scans gets 429 throttled.
 */
import { type JsonObject, isJsonObject } from '../../json-shapes.js';
import type { Sql } from '../db/connect.js';
import { errors } from '../../errors.js';
import type { FlagDefinition, ProjectDefinitions } from '../../evaluation/index.js';
import { scanPoolFor, type Scan } from '../scan-pool/index.js';
import { loadProjectFlags } from './evaluate-stored.js';

/** Rows per cursor page (the scan pool splits a page into worker-sized chunks). */
const PAGE = 5_000;
const KEY = '$blast_radius';

type Obj = JsonObject;

/**
 * Counts what `body.condition` matches. @throws ApiError 400 for a missing or invalid condition,
 * 429 when the project's scan slots are taken, 504 past the scan deadline.
 */
export async function blastRadius(sql: Sql, projectId: number, body: unknown): Promise<{ users_affected: number; total_users: number }> {
  const b = isJsonObject(body) ? body : {};
  const condition = b.condition;
  if (!isJsonObject(condition)) throw errors.validation('Missing condition for which to get blast radius', 'condition');
  const properties = Array.isArray(condition.properties) ? condition.properties as Obj[] : [];
  const groupIndex = b.group_type_index === undefined || b.group_type_index === null ? null : Number(b.group_type_index);
  if (groupIndex !== null && (!Number.isInteger(groupIndex) || groupIndex < 0 || groupIndex > 4)) throw errors.validation('group_type_index must be an integer from 0 to 4.', 'group_type_index');
  if (groupIndex !== null && properties.some((p) => p.key !== '$group_key' && Number(p.group_type_index) !== groupIndex)) {
    throw errors.validation('Invalid group type index for feature flag condition.', 'group_type_index');
  }

  const scan = scanPoolFor(sql).begin(projectId);
  try {
    return await count(sql, scan, projectId, properties, groupIndex);
  } finally {
    scan.end();
  }
}

async function count(sql: Sql, scan: Scan, projectId: number, properties: Obj[], groupIndex: number | null): Promise<{ users_affected: number; total_users: number }> {
  const base = await loadProjectFlags(sql, projectId);
  const flag: FlagDefinition = {
    id: 0, key: KEY, active: true,
    filters: { groups: [{ properties: properties as never, rollout_percentage: 100 }], aggregation_group_type_index: groupIndex } as never,
  };
  // Every live dynamic cohort (the feed carries only those flags reference); static ones are absent, so stored membership applies.
  const cohorts = { ...base.definitions.cohorts };
  for (const c of await sql<{ id: number; filters: Obj }[]>`SELECT id::int AS id, filters FROM cohorts WHERE project_id = ${projectId} AND NOT deleted AND NOT is_static`) {
    cohorts[String(c.id)] ??= c.filters as never;
  }
  const defs: ProjectDefinitions = { ...base.definitions, cohorts, flags: [flag] };
  const nowMs = Date.now();

  if (groupIndex !== null) {
    const type = defs.group_type_mapping[String(groupIndex)];
    const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM groups WHERE project_id = ${projectId} AND group_type_index = ${groupIndex}`;
    const plan = scan.plan({ kind: 'flag-groups', definitions: defs, timezone: base.timezone, flagKey: KEY, groupType: type ?? '', nowMs });
    const { problem } = await scan.prepare(plan);
    if (problem !== null) throw errors.validation(`Invalid condition: ${problem}`, 'condition');
    if (properties.length === 0 || type === undefined) return { users_affected: type === undefined ? 0 : n!, total_users: n! };
    let affected = 0;
    const cursor = sql<{ r: string }[]>`SELECT json_build_array(group_key, properties)::text AS r FROM groups
      WHERE project_id = ${projectId} AND group_type_index = ${groupIndex}`.cursor(PAGE);
    for await (const page of cursor) affected += (await scan.match(plan, page.map((x) => x.r))).length;
    return { users_affected: affected, total_users: n! };
  }

  const plan = scan.plan({ kind: 'flag-persons', definitions: defs, timezone: base.timezone, flagKey: KEY, properties, nowMs });
  const { problem, personKeys: keys } = await scan.prepare(plan);
  if (problem !== null) throw errors.validation(`Invalid condition: ${problem}`, 'condition');
  const [{ n: total }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM persons WHERE project_id = ${projectId}`;
  if (properties.length === 0) return { users_affected: total!, total_users: total! };
  const usesCohorts = properties.some((p) => p.type === 'cohort');
  const cohortIds = usesCohorts ? sql`ARRAY(SELECT cp.cohort_id::int FROM cohort_people cp WHERE cp.person_id = p.id)` : sql`NULL::int[]`;
  const values = keys === null ? sql`p.properties` : keys.length === 0 ? sql`NULL`
    // `<json type>:<text>` when the key is present (even as JSON null), SQL NULL when absent: the core
    // tells missing from null and strings from numbers. Text is ~2.5× cheaper to ship than jsonb.
    : keys.map((k) => sql`jsonb_typeof(p.properties->${k}) || ':' || COALESCE(p.properties->>${k}, '')`).reduce((a, c) => sql`${a}, ${c}`);
  // Two halves of the id range read concurrently: Postgres extracts the properties on two
  // backends while the scan pool tests the rows as they arrive.
  const [range] = await sql<{ lo: number | null; hi: number | null }[]>`SELECT min(id)::bigint AS lo, max(id)::bigint AS hi FROM persons WHERE project_id = ${projectId}`;
  if (range?.lo === null || range?.lo === undefined) return { users_affected: 0, total_users: total! };
  const mid = Math.floor((range.lo + range.hi!) / 2);
  const half = async (from: number, to: number): Promise<number> => {
    let n = 0;
    // One JSON text per row (scan-pool/protocol.ts): cheap to hand to a worker.
    const cursor = sql<{ r: string }[]>`SELECT json_build_array(${cohortIds}, ${values})::text AS r
      FROM persons p WHERE p.project_id = ${projectId} AND p.id BETWEEN ${from} AND ${to}`.cursor(PAGE);
    for await (const page of cursor) n += (await scan.match(plan, page.map((x) => x.r))).length;
    return n;
  };
  const affected = (await Promise.all([half(range.lo, mid), half(mid + 1, range.hi!)])).reduce((a, b) => a + b, 0);
  return { users_affected: Math.min(affected, total!), total_users: total! };
}
