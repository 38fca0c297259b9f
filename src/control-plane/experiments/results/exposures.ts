/**
 * Who is in an experiment (research/experiments.md §2): the exposed entities with their variant
 * and first exposure time, materialised as the temporary table `exp_exposed` (dropped
 * at commit) for the metric queries of the same transaction.
 *
 * 1. Window `[start, end]` (inclusive), end = the experiment's end date, else `as_of`.
 * 2. Entity: the person (the event's person, through person_overrides after merges, so merged
 *    persons count once), or `$group_<i>` when the flag aggregates by group type i. Personless
 *    events (no person) are not in experiments.
 * 3. Exposure event: `$feature_flag_called` with `$feature_flag` = the flag key, variant
 *    `$feature_flag_response`; a custom `exposure_config {event, properties}` replaces it, the
 *    variant then being `$feature/<flag key>`.
 * 4. Only configured variant keys count (the holdout, `false` and unknown keys do not).
 * 5. `multiple_variant_handling`: `exclude` (default) drops entities that saw more than one
 *    variant; `first_seen` keeps the variant of their earliest exposure.
 * Fast path: with the default exposure event, persons, and every exposure inside the window,
 * the rows come from ingestion's pre-aggregate `experiment_exposures` (~one per person) rather
 * than from the exposure events; the answer is the same (tests run both paths).
 * Switchyard projects have no test-account filters, so `filterTestAccounts` changes nothing.
 */
import type { Tx } from '../../db/connect.js';
import { eventFiltersSql } from '../../events/property-filters.js';
import { entitySql, personJoinSql } from '../../events/person-merges.js';

type Obj = Record<string, unknown>;

/** What defines the exposed population. */
export interface ExposureSpec {
  projectId: number;
  flagKey: string;
  variants: string[];
  start: Date;
  end: Date;
  /** Group type index of the flag's aggregation, or null for persons. */
  groupIndex: number | null;
  exposureConfig: Obj | null;
  multipleHandling: 'exclude' | 'first_seen';
  /** Whether the project has person merges to apply (person_overrides rows); without, no join. */
  merges: boolean;
  /** This transaction's share of the entities ({@link partitionSql}). */
  partition?: { index: number; count: number };
}

/**
 * The first uuid of share `i` of `count` equal ranges of the uuid space (`i` = count: none).
 * Person uuids are random (v4), so the ranges hold equal shares of the persons.
 */
export function uuidRangeStart(i: number, count: number): string | null {
  if (i <= 0) return '00000000-0000-0000-0000-000000000000';
  if (i >= count) return null;
  return `${Math.floor((i * 2 ** 32) / count).toString(16).padStart(8, '0')}-0000-0000-0000-000000000000`;
}

/**
 * The condition that `column` (a person uuid) lies in partition `p`'s range of the uuid space.
 */
function uuidRangeSql(tx: Tx, column: ReturnType<Tx>, p: { index: number; count: number }) {
  const lo = uuidRangeStart(p.index, p.count)!;
  const hi = uuidRangeStart(p.index + 1, p.count);
  return hi === null ? tx`${column} >= ${lo}::uuid` : tx`${column} >= ${lo}::uuid AND ${column} < ${hi}::uuid`;
}

/**
 * The WHERE clause of one partition's entities (alias `r`): persons by uuid range, so each
 * transaction reads only its part of the pre-aggregate's (flag, person) index and probes the
 * events index in ascending order; groups (text keys) by hash.
 */
function partitionSql(tx: Tx, groupIndex: number | null, p: { index: number; count: number }) {
  if (groupIndex !== null) return tx`WHERE abs(hashtext(r.entity)) % ${p.count} = ${p.index}`;
  return tx`WHERE ${uuidRangeSql(tx, tx`r.entity`, p)}`;
}

/**
 * True when ingestion's pre-aggregated exposures give exactly the windowed answer for this
 * partition's persons: every configured-variant exposure of the flag by a person of the
 * partition lies inside `[start, end]` (so no event the window would drop is folded into a
 * row). Each partition decides for its own persons and reads only its share of the rows (both
 * paths give the same rows, so partitions may take different ones); with person merges a
 * partition's entity may come from any row, so every row is checked.
 */
async function preAggregatedFits(tx: Tx, s: ExposureSpec): Promise<boolean> {
  const part = s.partition && s.partition.count > 1 && !s.merges ? tx`AND ${uuidRangeSql(tx, tx`person_uuid`, s.partition)}` : tx``;
  const [r] = await tx<{ lo: Date | null; hi: Date | null }[]>`SELECT min(first_ts) AS lo, max(last_ts) AS hi FROM experiment_exposures
    WHERE project_id = ${s.projectId} AND flag_key = ${s.flagKey} AND variant = ANY(${tx.array(s.variants)}::text[]) ${part}`;
  return r!.lo === null || (r!.lo >= s.start && r!.hi! <= s.end);
}

/**
 * Creates `exp_exposed(entity, variant, first_exposure)` in one statement: under
 * `exclude`, entities that saw several variants are left out right in the aggregate.
 */
export async function materializeExposures(tx: Tx, s: ExposureSpec): Promise<void> {
  const custom = s.exposureConfig && s.exposureConfig.kind === 'ExperimentEventExposureConfig' ? s.exposureConfig : null;
  const variantExpr = custom ? tx`(e.properties->>${`$feature/${s.flagKey}`})` : tx`(e.properties->>'$feature_flag_response')`;
  const eventFilter = custom
    ? tx`e.event = ${String(custom.event)} AND ${eventFiltersSql(tx, custom.properties, 'exposure_criteria')}`
    : tx`e.event = '$feature_flag_called' AND left(e.properties->>'$feature_flag', 400) = ${s.flagKey}`;
  const exclude = s.multipleHandling !== 'first_seen';
  const variantPick = exclude ? tx`min(variant)` : tx`(array_agg(variant ORDER BY ts))[1]`;
  // One variant seen: min = max (hashable, unlike count(DISTINCT), which forces a sort).
  const having = exclude ? tx`HAVING min(variant) = max(variant)` : tx``;
  let rows;
  if (!custom && s.groupIndex === null && await preAggregatedFits(tx, s)) {
    // Ingestion's pre-aggregate (ingestion/exposures.ts): one row per person and response.
    rows = s.merges
      ? tx`SELECT COALESCE(o.override_person_uuid, x.person_uuid) AS entity, x.variant, x.first_ts AS ts
          FROM experiment_exposures x LEFT JOIN person_overrides o ON o.project_id = x.project_id AND o.old_person_uuid = x.person_uuid
          WHERE x.project_id = ${s.projectId} AND x.flag_key = ${s.flagKey} AND x.variant = ANY(${tx.array(s.variants)}::text[])`
      : tx`SELECT x.person_uuid AS entity, x.variant, x.first_ts AS ts FROM experiment_exposures x
          WHERE x.project_id = ${s.projectId} AND x.flag_key = ${s.flagKey} AND x.variant = ANY(${tx.array(s.variants)}::text[])`;
  } else {
    rows = tx`SELECT entity, variant, ts
      FROM (SELECT ${entitySql(tx, s.groupIndex, s.merges)} AS entity, e.timestamp AS ts, ${variantExpr} AS variant
            FROM events e ${personJoinSql(tx, s.groupIndex, s.merges)}
            WHERE e.project_id = ${s.projectId} AND ${eventFilter} AND e.timestamp >= ${s.start} AND e.timestamp <= ${s.end}) r
      WHERE entity IS NOT NULL AND variant = ANY(${tx.array(s.variants)}::text[])`;
  }
  const part = s.partition && s.partition.count > 1 ? partitionSql(tx, s.groupIndex, s.partition) : tx``;
  await tx`CREATE TEMP TABLE exp_exposed ON COMMIT DROP AS
    SELECT entity, ${variantPick} AS variant, min(ts) AS first_exposure
    FROM (${rows}) r ${part} GROUP BY entity ${having}`;
  await tx`ANALYZE exp_exposed`;
}

/**
 * PostHog's `only_count_matured_users` for every metric but retention: removes from
 * `exp_exposed` the entities whose conversion window (`windowSeconds`, after their first
 * exposure: PostHog anchors maturity there, so a re-exposure does not make a matured user
 * immature again) has not fully elapsed by `now`. A metric without a conversion window keeps
 * everyone (PostHog: a maturity window of 0 filters nothing).
 */
export async function dropImmature(tx: Tx, windowSeconds: number, now: Date): Promise<void> {
  if (windowSeconds <= 0) return;
  await tx`DELETE FROM exp_exposed WHERE first_exposure + make_interval(secs => ${windowSeconds}) > ${now}`;
}
