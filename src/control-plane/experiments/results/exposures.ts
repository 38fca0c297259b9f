/**
 * Who is in an experiment (research/experiments.md §2): the exposed entities with their variant
 * and first and last exposure times, materialised as the temporary table `exp_exposed` (dropped
 * at commit) for the metric queries of the same transaction.
 *
 * 1. Window `[start, end]` (inclusive), end = the experiment's end date, else `as_of`.
 * 2. Entity: the person (through person_distinct_ids, so merged persons count once), or
 *    `$group_<i>` when the flag aggregates by group type i.
 * 3. Exposure event: `$feature_flag_called` with `$feature_flag` = the flag key, variant
 *    `$feature_flag_response`; a custom `exposure_config {event, properties}` replaces it, the
 *    variant then being `$feature/<flag key>`.
 * 4. Only configured variant keys count (the holdout, `false` and unknown keys do not).
 * 5. `multiple_variant_handling`: `exclude` (default) drops entities that saw more than one
 *    variant; `first_seen` keeps the variant of their earliest exposure.
 * Switchyard projects have no test-account filters, so `filterTestAccounts` changes nothing.
 */
import type { Tx } from '../../db/connect.js';
import { eventFiltersSql } from './event-filters.js';

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
}

/** SQL of the entity an event belongs to (alias `e`, person_distinct_ids alias `d`). */
export function entitySql(tx: Tx, groupIndex: number | null) {
  return groupIndex === null
    ? tx`COALESCE(d.person_id::text, 'd:' || e.distinct_id)`
    : tx`(e.properties->>${`$group_${groupIndex}`})`;
}

/** The join that resolves an event's person (a no-op for groups). */
export function personJoinSql(tx: Tx, groupIndex: number | null) {
  return groupIndex === null ? tx`LEFT JOIN person_distinct_ids d ON d.project_id = e.project_id AND d.distinct_id = e.distinct_id` : tx``;
}

/** Creates `exp_exposed(entity, variant, first_exposure, last_exposure)`; returns the exposures per variant, `$multiple` included. */
export async function materializeExposures(tx: Tx, s: ExposureSpec): Promise<Map<string, number>> {
  const custom = s.exposureConfig && s.exposureConfig.kind === 'ExperimentEventExposureConfig' ? s.exposureConfig : null;
  const variantExpr = custom ? tx`(e.properties->>${`$feature/${s.flagKey}`})` : tx`(e.properties->>'$feature_flag_response')`;
  const eventFilter = custom
    ? tx`e.event = ${String(custom.event)} AND ${eventFiltersSql(tx, custom.properties, 'exposure_criteria')}`
    : tx`e.event = '$feature_flag_called' AND left(e.properties->>'$feature_flag', 400) = ${s.flagKey}`;
  const variantPick = s.multipleHandling === 'first_seen'
    ? tx`(array_agg(variant ORDER BY ts))[1]`
    : tx`CASE WHEN count(DISTINCT variant) > 1 THEN '$multiple' ELSE min(variant) END`;
  await tx`CREATE TEMP TABLE exp_all_exposed ON COMMIT DROP AS
    SELECT entity, ${variantPick} AS variant, min(ts) AS first_exposure, max(ts) AS last_exposure
    FROM (SELECT ${entitySql(tx, s.groupIndex)} AS entity, e.timestamp AS ts, ${variantExpr} AS variant
          FROM events e ${personJoinSql(tx, s.groupIndex)}
          WHERE e.project_id = ${s.projectId} AND ${eventFilter} AND e.timestamp >= ${s.start} AND e.timestamp <= ${s.end}) x
    WHERE entity IS NOT NULL AND variant = ANY(${tx.array(s.variants)}::text[])
    GROUP BY entity`;
  await tx`CREATE TEMP TABLE exp_exposed ON COMMIT DROP AS SELECT * FROM exp_all_exposed WHERE variant <> '$multiple'`;
  await tx`CREATE INDEX ON exp_exposed (entity)`;
  await tx`ANALYZE exp_exposed`;
  const rows = await tx<{ variant: string; n: number }[]>`SELECT variant, count(*)::int AS n FROM exp_all_exposed GROUP BY variant`;
  return new Map(rows.map((r) => [r.variant, r.n]));
}
