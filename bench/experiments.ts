/**
 * `make bench-experiments` (`node dist/bench/experiments.js`): how long does one experiment metric
 * take over a large event store? (1 M exposed users and 20 M events, target < 5 s
 * on this 2-core machine.)
 *
 * Setup: a throw-away embedded Postgres (or DATABASE_URL's server) with a fresh database and a real
 * control plane (migrations, HTTP). The workload is written with set-based SQL (ingestion of 20 M
 * events through the pipeline would take longer than the measurement): BENCH_USERS persons with one
 * distinct id each; one `$feature_flag_called` exposure per person (control/test by a hash of the
 * id) in the experiment's first day; the remaining events split 30 % `purchase` (with an `amount`)
 * and 70 % `pageview`, at random persons and times within the window. The experiment is created
 * through the management API with a start and end date around the data. The events indexes are
 * rebuilt after the load, ingestion's pre-aggregates (exposures, per-person event times) are
 * filled as ingestion fills them, and VACUUM ANALYZE stands in for autovacuum.
 *
 * Measured, each twice (the second run is warm): the same-run baseline — a plain `count(*)` over the
 * project's events — and `POST /query/` for a mean metric (purchase count, 7-day window) and an
 * ordered funnel (pageview → purchase). Printed: seconds and the ratio to the baseline.
 *
 * Current figures beside their same-run floors: docs/benchmarks.md (history in git).
 * Knobs (env): BENCH_USERS (1,000,000), BENCH_EVENTS (20,000,000), DATABASE_URL, BENCH_KEEP_DB=1 (keep the
 * database for EXPLAIN sessions; its URL is printed — only with DATABASE_URL: the throw-away
 * embedded cluster goes with the run), BENCH_REUSE_DB=<that URL> (measure again on a kept
 * database without writing the workload).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { testConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { connect } from '../src/control-plane/db/connect.js';
import { startControlPlane } from '../src/control-plane/index.js';
import { newPersonalApiKey } from '../src/control-plane/keys/tokens.js';
import { startBenchDatabase } from './database.js';
import { ensureEventPartitions } from '../src/control-plane/ingestion/event-partitions.js';
import { FOLDED_ROWS } from '../src/control-plane/ingestion/person-event-times.js';

const USERS = Number(process.env.BENCH_USERS ?? 1_000_000);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000_000);
/** Rows written per INSERT, so progress shows and no statement runs for minutes. */
const CHUNK = 2_000_000;
const DAY = 86_400_000;

function seconds(fromNs: bigint): number {
  return Number(process.hrtime.bigint() - fromNs) / 1e9;
}

async function main(): Promise<void> {
  const log = createLogger('warn');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-exp-'));
  const reuse = process.env.BENCH_REUSE_DB;
  const db = reuse ? { url: reuse, drop: async () => {} } : await startBenchDatabase(dir, 'switchyard_bench_exp_');
  const key = newPersonalApiKey();
  const config = testConfig({ dataDir: path.join(dir, 'cp'), bootstrapPersonalApiKey: key, apiBurstRatePerMinute: 0, apiSustainedRatePerHour: 0, timeseriesWorker: false });
  const cp = await startControlPlane(config, log, db.url);
  const sql = connect(db.url, { max: 2 });
  try {
    const projectId = cp.bootstrap.projectId;
    const start = new Date(Date.now() - 30 * DAY);
    const end = new Date(start.getTime() + 28 * DAY);
    const api = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(cp.http.url + p, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
      return JSON.parse(text) as Record<string, any>;
    };
    let x: Record<string, any>;
    if (reuse) {
      const [row] = await sql<{ id: number }[]>`SELECT id::int AS id FROM experiments WHERE project_id = ${projectId} AND name = 'Bench'`;
      x = { id: row!.id };
    } else {
      x = await api('POST', `/api/projects/${projectId}/experiments/`, { name: 'Bench', feature_flag_key: 'bench-exp', start_date: start.toISOString(), end_date: end.toISOString() });
      await writeWorkload(sql, projectId, start);
    }
    const timed = async <T>(f: () => Promise<T>): Promise<[number, T]> => {
      const s = process.hrtime.bigint();
      const r = await f();
      return [seconds(s), r];
    };
    const baseline = async () => (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE project_id = ${projectId}`)[0]!.n;
    const run = (metric: unknown) => () => api('POST', `/api/projects/${projectId}/query/`, { query: { kind: 'ExperimentQuery', experiment_id: x.id, metric } });
    const mean = { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase' }, conversion_window: 7, conversion_window_unit: 'day' };
    const funnel = { kind: 'ExperimentMetric', metric_type: 'funnel', series: [{ kind: 'EventsNode', event: 'pageview' }, { kind: 'EventsNode', event: 'purchase' }] };
    const rows: [string, number, number, string][] = [];
    for (const [name, f] of [['count(*) over the events (baseline)', baseline], ['mean: purchases per user, 7-day window', run(mean)], ['funnel: pageview → purchase', run(funnel)]] as const) {
      const [cold, first] = await timed(f as () => Promise<unknown>);
      const [warm] = await timed(f as () => Promise<unknown>);
      const detail = typeof first === 'number' ? `${first.toLocaleString()} events`
        : ((r: any) => `${[r.baseline, ...r.variant_results].map((a: any) => `${a.key} n=${a.number_of_samples} sum=${a.sum}`).join(', ')}`)(first);
      rows.push([name, cold, warm, detail]);
    }
    const base = rows[0]![2];
    process.stdout.write(`One experiment metric over ${USERS.toLocaleString()} exposed users and ${EVENTS.toLocaleString()} events; Node ${process.version}, ${os.cpus().length} vCPU (${os.cpus()[0]?.model.trim()})\n\n`);
    process.stdout.write('| run | cold s | warm s | warm / baseline | result |\n|---|---:|---:|---:|---|\n');
    for (const [name, cold, warm, detail] of rows) process.stdout.write(`| ${name} | ${cold.toFixed(2)} | ${warm.toFixed(2)} | ${(warm / base).toFixed(1)}× | ${detail} |\n`);
    process.stdout.write(`\ntarget: < 5 s per metric (warm): mean ${rows[1]![2] < 5 ? 'met' : 'NOT met'}, funnel ${rows[2]![2] < 5 ? 'met' : 'NOT met'}\n`);
  } finally {
    await sql.end();
    await cp.close();
    if (process.env.BENCH_KEEP_DB === '1' || reuse) process.stdout.write(`kept ${db.url}\n`);
    else await db.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes the persons, exposures and events (set-based SQL), then rebuilds indexes and runs VACUUM ANALYZE. */
async function writeWorkload(sql: ReturnType<typeof connect>, projectId: number, start: Date): Promise<void> {
  process.stdout.write(`writing ${USERS.toLocaleString()} persons and ${EVENTS.toLocaleString()} events…\n`);
  const t0 = process.hrtime.bigint();
  // Bulk load: the events indexes (and primary key) are dropped and rebuilt afterwards from their
  // own definitions, which is several times faster than maintaining them row by row.
  const indexes = await sql<{ name: string; def: string }[]>`SELECT indexname AS name, indexdef AS def FROM pg_indexes
    WHERE schemaname = 'public' AND tablename = 'events' AND indexname <> 'events_pkey'`;
  for (const i of indexes) await sql.unsafe(`DROP INDEX ${i.name}`);
  // The month partitions the workload's 28 days need (events are partitioned by month, migration 0015).
  await ensureEventPartitions(sql, [start, new Date(start.getTime() + 14 * DAY), new Date(start.getTime() + 28 * DAY)]);
  await sql`ALTER TABLE events DROP CONSTRAINT events_pkey`;
  await sql`INSERT INTO persons (project_id, properties) SELECT ${projectId}, '{}' FROM generate_series(1, ${USERS}::int)`;
  await sql`INSERT INTO person_distinct_ids (project_id, distinct_id, person_id) SELECT ${projectId}, 'u' || id, id FROM persons WHERE project_id = ${projectId}`;
  const [{ first }] = await sql<{ first: number }[]>`SELECT min(id)::int AS first FROM persons WHERE project_id = ${projectId}`;
  const startMs = start.getTime();
  // Exposures: one per person in the first day, the variant from the person id.
  await sql`INSERT INTO events (project_id, uuid, event, distinct_id, person_id, properties, timestamp)
    SELECT ${projectId}, gen_random_uuid(), '$feature_flag_called', 'u' || p.id, p.uuid,
      jsonb_build_object('$feature_flag', 'bench-exp', '$feature_flag_response', CASE WHEN p.id % 2 = 0 THEN 'control' ELSE 'test' END),
      to_timestamp((${startMs}::float8 + (hashint4(p.id::int) & 65535) * 1318) / 1000.0)
    FROM persons p WHERE p.project_id = ${projectId}`;
  for (let done = USERS; done < EVENTS; done += CHUNK) {
    const n = Math.min(CHUNK, EVENTS - done);
    await sql`INSERT INTO events (project_id, uuid, event, distinct_id, person_id, properties, timestamp)
      SELECT ${projectId}, gen_random_uuid(), CASE WHEN r.k % 10 < 3 THEN 'purchase' ELSE 'pageview' END, 'u' || r.pid, p.uuid,
        CASE WHEN r.k % 10 < 3 THEN jsonb_build_object('amount', (r.k % 97) + 1) ELSE '{}'::jsonb END,
        to_timestamp((${startMs}::float8 + ((hashint4(r.k + 11) & 2147483647)::float8 / 2147483647.0) * ${28 * DAY}::float8) / 1000.0)
      FROM (SELECT g AS k, ${first} + (hashint4(g) & 2147483647) % ${USERS}::int AS pid FROM generate_series(${done}::int, ${done + n - 1}::int) g) r
      JOIN persons p ON p.id = r.pid`;
    process.stdout.write(`  ${(done + n).toLocaleString()} events (${seconds(t0).toFixed(0)} s)\n`);
  }
  await sql`ALTER TABLE events ADD PRIMARY KEY (project_id, uuid, timestamp)`;
  // pg_indexes shows a partitioned table's index as `ON ONLY events` (this table alone): rebuilt
  // on every partition instead.
  for (const i of indexes) await sql.unsafe(i.def.replace(' ON ONLY ', ' ON '));
  // Ingestion's exposure pre-aggregate, as ingestion would have written it (ingestion/exposures.ts).
  await sql`INSERT INTO experiment_exposures (project_id, flag_key, person_uuid, variant, first_ts, last_ts)
    SELECT project_id, properties->>'$feature_flag', person_id, properties->>'$feature_flag_response', min(timestamp), max(timestamp)
    FROM events WHERE project_id = ${projectId} AND event = '$feature_flag_called' GROUP BY 1, 2, 3, 4`;
  // Ingestion's per-person event times, as the events insert folds them in (ingestion/person-event-times.ts).
  await sql.unsafe(`INSERT INTO person_event_times (project_id, event, month, person_id, n, first_ts, last_ts, times)
    ${FOLDED_ROWS('(SELECT * FROM events WHERE project_id = $1) e')}`, [projectId]);
  // What autovacuum does after a load: statistics, and the visibility map that index-only scans
  // need. Every table, so no autovacuum worker (persons and distinct ids got 1 M inserts each)
  // takes a core in the middle of the measurement.
  await sql`VACUUM ANALYZE`;
  // And a checkpoint: otherwise the checkpointer writes the gigabytes the load and VACUUM dirtied
  // while the queries are measured (needs a superuser; skipped without one).
  await sql`CHECKPOINT`.catch(() => undefined);
  process.stdout.write(`written in ${seconds(t0).toFixed(0)} s\n\n`);
}

main().catch((e) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
