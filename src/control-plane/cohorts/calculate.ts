/**
 * Membership of dynamic cohorts computed from stored persons and events (PostHog calculates cohorts in ClickHouse, `cohortpeople`): the cohort's `count`.
 *
 * Property leaves and nested cohorts are matched by the evaluation core itself (CohortTable,
 * the same code the nodes run for flags), so a cohort counts exactly the persons a flag on it
 * would match. Behavioural leaves (`performed_event`, `performed_event_multiple`) are answered
 * first in SQL over the events table — the persons whose distinct ids performed the event in the
 * window (and, for `_multiple`, as often as the operator asks) — and handed to the core as a
 * synthetic person property per leaf, so negation and AND/OR nesting stay the core's.
 * Static cohorts referenced by the cohort use cohort_people.
 *
 * Persons are read through a cursor; memory is one page of persons plus one set of person ids
 * per behavioural leaf. The matching runs in the scan pool (scan-pool/, plans.ts `cohort`), off
 * the event loop, and stops at the scan's deadline.
 */
import { type JsonObject, isJsonObject } from '../../json-shapes.js';
import type { CohortDefinition } from '../../evaluation/types.js';
import { errors } from '../../errors.js';
import type { Sql } from '../db/connect.js';
import { eventFiltersSql } from '../events/property-filters.js';
import type { Scan } from '../scan-pool/index.js';

type Obj = JsonObject;

/** Persons read per cursor round trip. */
const PERSON_PAGE = 1000;
/** Prefix of the synthetic person property that carries a behavioural leaf's answer. */
export const LEAF_KEY = '$switchyard_behavioral_';

/** Units of `time_interval`, in PostgreSQL interval words. */
const INTERVALS: Readonly<Record<string, string>> = { hour: 'hours', day: 'days', week: 'weeks', month: 'months', year: 'years' };

/** A behavioural leaf of a cohort's filters and its index among the leaves collected. */
export interface BehavioralLeaf { index: number; leaf: Obj }

/** Start of a behavioural leaf's window. @throws ApiError 400 for an unreadable window. */
export function windowStart(leaf: Obj, now: Date): Date {
  const explicit = leaf.explicit_datetime;
  if (typeof explicit === 'string' && explicit !== '') {
    const rel = /^-(\d+)([hdwmy])$/.exec(explicit);
    if (rel) {
      const n = Number(rel[1]);
      const unit = { h: 'hour', d: 'day', w: 'week', m: 'month', y: 'year' }[rel[2] as 'h']!;
      return shift(now, n, unit);
    }
    const d = new Date(explicit);
    if (Number.isNaN(d.getTime())) throw errors.validation(`explicit_datetime "${explicit}" is not a date.`, 'filters');
    return d;
  }
  const value = Number(leaf.time_value ?? 30);
  const unit = String(leaf.time_interval ?? 'day');
  if (!Number.isFinite(value) || value < 0 || !(unit in INTERVALS)) throw errors.validation('time_value and time_interval must give a window such as 30 day.', 'filters');
  return shift(now, value, unit);
}

function shift(now: Date, n: number, unit: string): Date {
  const d = new Date(now);
  switch (unit) {
    case 'hour': d.setUTCHours(d.getUTCHours() - n); break;
    case 'day': d.setUTCDate(d.getUTCDate() - n); break;
    case 'week': d.setUTCDate(d.getUTCDate() - 7 * n); break;
    case 'month': d.setUTCMonth(d.getUTCMonth() - n); break;
    default: d.setUTCFullYear(d.getUTCFullYear() - n);
  }
  return d;
}

/**
 * Replaces behavioural leaves of `node` (cohort filters) with synthetic person leaves on
 * `<LEAF_KEY><index>` = `'true'` (negation kept), appending each to `leaves`.
 */
export function rewrite(node: unknown, leaves: BehavioralLeaf[]): unknown {
  if (Array.isArray(node)) return node.map((n) => rewrite(n, leaves));
  if (!isJsonObject(node)) return node;
  if (node.type === 'behavioral') {
    const index = leaves.length;
    leaves.push({ index, leaf: node });
    return { type: 'person', key: `${LEAF_KEY}${index}`, operator: 'exact', value: ['true'], negation: node.negation === true };
  }
  const out: Obj = { ...node };
  if ('properties' in node) out.properties = rewrite(node.properties, leaves);
  if ('values' in node) out.values = rewrite(node.values, leaves);
  return out;
}

const COUNT_OPERATORS: Readonly<Record<string, string>> = { gte: '>=', lte: '<=', gt: '>', lt: '<', exact: '=', eq: '=' };

/**
 * persons.id of the persons a behavioural leaf selects; with `eventPersons` (person uuids), only
 * events carrying one of them are read (one person's answer, on the events' person index).
 */
export async function leafMembers(sql: Sql, projectId: number, leaf: Obj, now: Date, eventPersons: readonly string[] | null = null): Promise<Set<number>> {
  const event = String(leaf.key);
  const since = windowStart(leaf, now);
  const multiple = leaf.value === 'performed_event_multiple';
  const opSql = COUNT_OPERATORS[String(leaf.operator ?? 'gte')];
  if (multiple && opSql === undefined) throw errors.validation(`Operator "${String(leaf.operator)}" is not supported for performed_event_multiple.`, 'filters');
  const times = Number(leaf.operator_value ?? 1);
  const rows = await sql<{ id: number }[]>`SELECT d.person_id::int AS id
    FROM events e JOIN person_distinct_ids d ON d.project_id = e.project_id AND d.distinct_id = e.distinct_id
    WHERE e.project_id = ${projectId} AND e.event = ${event} AND e.timestamp >= ${since} AND e.timestamp <= ${now}
      AND ${eventFiltersSql(sql, leaf.event_filters, 'filters')}
      ${eventPersons === null ? sql`` : sql`AND e.person_id = ANY(${sql.array(eventPersons as string[])}::uuid[])`}
    GROUP BY d.person_id
    ${multiple ? sql`HAVING count(*) ${sql.unsafe(opSql!)} ${times}` : sql``}`;
  return new Set(rows.map((r) => r.id));
}

/**
 * Number of persons of the project in dynamic cohort `id`, as of `now`, matched by `scan`.
 * @throws ApiError 400 when a behavioural leaf cannot be computed or the filters cannot be
 * evaluated; 404 when the cohort is gone; 504 when the scan's deadline passes first.
 */
export async function countCohortMembers(sql: Sql, scan: Scan, projectId: number, id: number, timezone = 'UTC', now = new Date()): Promise<number> {
  const cohorts = await sql<{ id: number; filters: Obj; is_static: boolean }[]>`
    SELECT id::int AS id, filters, is_static FROM cohorts WHERE project_id = ${projectId} AND NOT deleted`;
  const self = cohorts.find((c) => c.id === id);
  if (!self) throw errors.notFound();
  if (self.filters.properties === undefined) return 0;
  const leaves: BehavioralLeaf[] = [];
  const defs: Record<string, CohortDefinition> = {};
  for (const c of cohorts) defs[String(c.id)] = { ...(rewrite(c.filters, leaves) as Obj), is_static: c.is_static } as CohortDefinition;
  const members = await Promise.all(leaves.map((l) => leafMembers(sql, projectId, l.leaf, now)));
  const plan = scan.plan({ kind: 'cohort', cohorts: defs, timezone, cohortId: id, leafKey: LEAF_KEY, nowMs: now.getTime() });
  const { problem } = await scan.prepare(plan);
  if (problem !== null) throw errors.validation(`Cohort filters cannot be evaluated: ${problem}`, 'filters');
  let count = 0;
  // One JSON text per person (scan-pool/protocol.ts), with the behavioural leaves it satisfied.
  const cursor = sql<{ id: number; r: string }[]>`
    SELECT p.id::int AS id, json_build_array(p.properties, ARRAY(SELECT cp.cohort_id::int FROM cohort_people cp WHERE cp.person_id = p.id))::text AS r
    FROM persons p WHERE p.project_id = ${projectId} ORDER BY p.id`.cursor(PERSON_PAGE);
  for await (const page of cursor) {
    const rows = page.map((p) => {
      const hit: number[] = [];
      for (let i = 0; i < leaves.length; i++) if (members[i]!.has(p.id)) hit.push(i);
      return [p.r, hit];
    });
    count += (await scan.match(plan, rows)).length;
  }
  return count;
}
