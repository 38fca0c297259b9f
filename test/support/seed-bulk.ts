/**
 * Bulk rows straight into Postgres for tests that need volume rather than realism: persons with
 * given properties and events spread over a recent window, each written by one INSERT … SELECT.
 * Persons are not replicated (no change-log entries): only control-plane reads (blast radius,
 * cohort counts) see them. Events go into the month partitions they need (created first).
 */
import type { Sql } from '../../src/control-plane/db/connect.js';
import { ensureEventPartitions } from '../../src/control-plane/ingestion/event-partitions.js';

/** Inserts one person per entry of `properties` in `projectId`, each with distinct id `<prefix><i>`. */
export async function seedPersons(sql: Sql, projectId: number, properties: readonly Record<string, unknown>[], prefix = 'p'): Promise<void> {
  if (properties.length === 0) return;
  await sql.begin(async (tx) => {
    const rows = await tx<{ id: number; n: number }[]>`
      INSERT INTO persons (project_id, properties, is_identified)
      SELECT ${projectId}, p.value, true FROM jsonb_array_elements(${tx.json(properties as never)}) WITH ORDINALITY AS p(value, n)
      ORDER BY p.n RETURNING id`;
    const ids = rows.map((r) => r.id);
    await tx`INSERT INTO person_distinct_ids (project_id, distinct_id, person_id)
      SELECT ${projectId}, ${prefix} || (i - 1), id FROM unnest(${tx.array(ids)}::bigint[]) WITH ORDINALITY AS x(id, i)`;
  });
}

/**
 * Inserts `count` events of project `projectId` with timestamps spread over the `days` before
 * now: event names `e0`..`e<names-1>`, distinct ids `u0`..`u<persons-1>` (no person rows), and
 * properties `{n, plan, $session_id}` so numeric math, breakdowns and sessions have values.
 */
export async function seedEvents(sql: Sql, projectId: number, count: number, opts: { days?: number; names?: number; persons?: number } = {}): Promise<void> {
  const days = opts.days ?? 6;
  const names = opts.names ?? 5;
  const persons = opts.persons ?? 1000;
  const now = Date.now();
  await ensureEventPartitions(sql, [new Date(now - days * 86_400_000), new Date(now)]);
  await sql`INSERT INTO events (project_id, uuid, event, distinct_id, properties, timestamp)
    SELECT ${projectId}, gen_random_uuid(), 'e' || (g % ${names}::int), 'u' || (hashint4(g) & 2147483647) % ${persons}::int,
      jsonb_build_object('n', g % 997, 'plan', 'plan-' || (g % 40), '$session_id', 's' || (g % 5000)),
      to_timestamp((${now}::float8 - ((hashint4(g + 7) & 2147483647)::float8 / 2147483647.0) * ${days * 86_400_000}::float8) / 1000.0)
    FROM generate_series(1, ${count}::int) g`;
  await sql`ANALYZE events`;
}
