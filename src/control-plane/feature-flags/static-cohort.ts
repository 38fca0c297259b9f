/**
 * F7 `create_static_cohort_for_flag` (research/posthog-management-api.md §2.2): a static cohort
 * named `Users with feature flag <key> enabled at <YYYY-MM-DD HH:MM:SS>` (UTC), created at once
 * with `is_calculating: true` and filled afterwards with the persons for whom the flag is enabled
 * (or, with `variant`, serves that variant) — the evaluation core over each stored person, as a
 * node would answer for the person's first distinct id. Persons are read in pages; each page's
 * members are written in one transaction with their person entities on the change log, so nodes
 * match the cohort as it fills.
 *
 * The matching runs in the scan pool as a background scan (scan-pool/, plans.ts `flag-static`):
 * it waits for one of the project's scan slots and stops at SWITCHYARD_COHORT_CALCULATION_TIMEOUT_MS,
 * which counts in the cohort's `errors_calculating` (the members added so far stay).
 */
import type { Sql } from '../db/connect.js';
import type { Logger } from '../../log.js';
import { errors } from '../../errors.js';
import { CohortService, serializeCohort } from '../cohorts/service.js';
import { addPersonMembers } from '../cohorts/store.js';
import { ChangeSet } from '../ingestion/changes.js';
import { scanPoolFor, type Scan } from '../scan-pool/index.js';
import { loadProjectFlags } from './evaluate-stored.js';

/** Persons evaluated per page. */
export const STATIC_COHORT_PAGE = 1000;

/** Creates the cohort (returned at once) and fills it in the background. @throws ApiError 404, 400. */
export async function createStaticCohortForFlag(sql: Sql, log: Logger, projectId: number, userId: number, flagId: number, body: unknown): Promise<Record<string, unknown>> {
  const variant = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as { variant?: unknown }).variant : undefined;
  if (variant !== undefined && variant !== null && typeof variant !== 'string') throw errors.validation('variant must be a string.', 'variant');
  const [flag] = await sql<{ key: string }[]>`SELECT key FROM feature_flags WHERE project_id = ${projectId} AND id = ${flagId} AND NOT deleted`;
  if (!flag) throw errors.notFound();
  const stamp = new Date().toISOString().slice(0, 19).replace('T', ' ');
  const cohorts = new CohortService(sql, log);
  const cohort = await sql.begin((tx) => cohorts.createIn(tx, projectId, userId, {
    name: `Users with feature flag ${flag.key} enabled at ${stamp}`, is_static: true,
  }, { calculating: true }));
  const v = typeof variant === 'string' ? variant : null;
  scanPoolFor(sql).background(projectId, `static-cohort:${cohort.id}`, (scan) => fill(sql, log, scan, projectId, cohort.id, flag.key, v))
    .catch((e: unknown) => log.warn({ err: e, cohort_id: cohort.id }, 'static cohort for flag not filled'));
  return { cohort: serializeCohort({ ...cohort, is_calculating: true }) };
}

/** Evaluates the flag for every person of the project and adds the matches to the cohort. */
async function fill(sql: Sql, log: Logger, scan: Scan, projectId: number, cohortId: number, key: string, variant: string | null): Promise<void> {
  try {
    const { definitions, timezone } = await loadProjectFlags(sql, projectId);
    const plan = scan.plan({ kind: 'flag-static', definitions, timezone, flagKey: key, variant, nowMs: Date.now() });
    // One JSON text per person (scan-pool/protocol.ts), and its id for the members written.
    const cursor = sql<{ id: number; r: string }[]>`
      SELECT p.id::int AS id, json_build_array(d.distinct_id, p.properties,
        ARRAY(SELECT cp.cohort_id::int FROM cohort_people cp WHERE cp.person_id = p.id),
        (SELECT jsonb_object_agg(o.feature_flag_key, o.hash_key) FROM feature_flag_hash_key_overrides o WHERE o.person_id = p.id))::text AS r
      FROM persons p JOIN LATERAL (SELECT min(distinct_id) AS distinct_id FROM person_distinct_ids WHERE person_id = p.id) d ON d.distinct_id IS NOT NULL
      WHERE p.project_id = ${projectId} ORDER BY p.id`.cursor(STATIC_COHORT_PAGE);
    for await (const page of cursor) {
      const members = (await scan.match(plan, page.map((p) => p.r))).map((i) => page[i]!.id);
      if (members.length === 0) continue;
      await sql.begin(async (tx) => {
        const added = await addPersonMembers(tx, cohortId, members);
        const changes = new ChangeSet();
        for (const id of added) changes.personChanged(id);
        await changes.flush(tx);
      });
    }
    await sql`UPDATE cohorts SET is_calculating = false, last_calculation = now() WHERE id = ${cohortId}`;
  } catch (e) {
    log.warn({ err: e, cohort_id: cohortId }, 'static cohort for flag failed');
    await sql`UPDATE cohorts SET is_calculating = false, errors_calculating = errors_calculating + 1 WHERE id = ${cohortId}`.catch(() => undefined);
  }
}
