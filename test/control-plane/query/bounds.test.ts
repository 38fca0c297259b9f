/**
 * Bounds of `POST /query/` on a real control plane and Postgres, with small settings: a total
 * deadline over all of a query's statements (504 although each statement is under
 * statement_timeout), cancellation in Postgres when the client leaves, a per-project cap on
 * concurrent queries (429 while another project's query runs), and a query pool of its own, so
 * another project's flag list answers while heavy queries hold every query connection. Times
 * printed are from a shared 2-core machine: noisy.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { seedFlag, seedProject } from '../../support/seed.js';
import { ensureEventPartitions } from '../../../src/control-plane/ingestion/event-partitions.js';
import { QUERY_APPLICATION_NAME } from '../../../src/control-plane/index.js';

let t: TestControlPlane;
/** Heavy projects (their own events) and a light one (a flag, a few events). */
let heavyA: number;
let heavyC: number;
let light: { id: number };
const DEADLINE_MS = 1_000;
const STATEMENT_TIMEOUT_MS = 20_000;
const POOL = 2;
const PER_PROJECT = 1;
/**
 * Events per heavy project: enough that a 50-series query runs well past {@link DEADLINE_MS} (its
 * statements take about three times the deadline of Postgres CPU in all: ~2.9 s on the 2-core
 * test machine), few enough that seeding and every query held to the deadline stay cheap.
 */
const HEAVY_EVENTS = 12_000;

/** 50 series with a breakdown: about a hundred statements, each a scan of the project's events. */
const HEAVY_QUERY = {
  query: {
    kind: 'TrendsQuery',
    series: Array.from({ length: 50 }, (_, i) => ({ kind: 'EventsNode', event: 'heavy', custom_name: `s${i}` })),
    dateRange: { date_from: '-1d' }, interval: 'hour', breakdownFilter: { breakdown: 'plan' },
  },
};

async function seedEvents(projectId: number, n: number): Promise<void> {
  const now = Date.now();
  await ensureEventPartitions(t.db.sql, [new Date(now), new Date(now - 3_600_000)]);
  await t.db.sql`INSERT INTO events (project_id, uuid, event, distinct_id, properties, timestamp)
    SELECT ${projectId}, gen_random_uuid(), 'heavy', 'u' || (i % 500), jsonb_build_object('plan', 'p' || (i % 9), 'n', i),
      now() - (i % 3000) * interval '1 second'
    FROM generate_series(1, ${n}) i`;
}

/**
 * Query-pool connections running a statement or inside a transaction (between two statements of
 * a query the state is `idle in transaction`): 0 means no query is under way in Postgres.
 */
async function activeQueryStatements(): Promise<number> {
  const [r] = await t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = ${QUERY_APPLICATION_NAME} AND state <> 'idle'`;
  return r!.n;
}

/** Connections of the query pool, whatever their state. */
async function queryConnections(): Promise<number> {
  const [r] = await t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = ${QUERY_APPLICATION_NAME}`;
  return r!.n;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<number> {
  const began = Date.now();
  while (!(await check())) {
    if (Date.now() - began > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - began;
}

const query = (projectId: number, body: unknown = HEAVY_QUERY) => t.request('POST', `/api/projects/${projectId}/query/`, { body });

before(async () => {
  t = await startTestControlPlane({
    queryDeadlineMs: DEADLINE_MS, queryTimeoutMs: STATEMENT_TIMEOUT_MS, queryPoolSize: POOL, queryConcurrencyPerProject: PER_PROJECT,
    apiBurstRatePerMinute: 0, apiSustainedRatePerHour: 0,
  });
  heavyA = t.projectId;
  assert.equal((await t.request('GET', '/api/projects/')).status, 200); // warm: the first request's set-up is not the deadline's
  heavyC = (await seedProject(t.db.sql, t.organizationId, 'Heavy C')).id;
  light = await seedProject(t.db.sql, t.organizationId, 'Light');
  await seedFlag(t.db.sql, light.id, 'light-flag');
  await seedEvents(heavyA, HEAVY_EVENTS);
  await seedEvents(heavyC, HEAVY_EVENTS);
  await seedEvents(light.id, 200);
  // Row counts and the columns the queries filter on, once for all three projects (the jsonb
  // properties, which no plan here needs statistics of, are most of a full ANALYZE's cost).
  await t.db.sql`ANALYZE events (project_id, event, timestamp)`;
});
after(async () => { await t?.close(); });

test('the total deadline answers 504 for a query of many statements, each under statement_timeout, and nothing keeps running', async () => {
  const began = Date.now();
  const r = await query(heavyA);
  const took = Date.now() - began;
  console.log(`50-series TrendsQuery: ${r.status} after ${took} ms (deadline ${DEADLINE_MS} ms, statement_timeout ${STATEMENT_TIMEOUT_MS} ms)`);
  assert.equal(r.status, 504, r.text);
  assert.deepEqual({ type: r.body.type, code: r.body.code, attr: r.body.attr }, { type: 'server_error', code: 'error', attr: null });
  assert.match(r.body.detail, /max execution time/);
  assert.ok(took >= DEADLINE_MS, 'answered at the deadline, not before');
  assert.ok(took < STATEMENT_TIMEOUT_MS, 'the deadline, not a statement timeout, stopped it');
  assert.equal(await activeQueryStatements(), 0, 'no statement left running');
  // A query that fits in the deadline answers: one series over a small project.
  const one = await query(light.id, { query: { ...HEAVY_QUERY.query, series: HEAVY_QUERY.query.series.slice(0, 1) } });
  assert.equal(one.status, 200, one.text);
  assert.equal(one.body.results.reduce((s: number, x: { count: number }) => s + x.count, 0), 200);
});

test('a client that disconnects has its statements cancelled: gone from pg_stat_activity within a second', async () => {
  const req = http.request(`${t.baseUrl}/api/projects/${heavyA}/query/`, {
    method: 'POST', agent: false, headers: { authorization: `Bearer ${t.personalKey}`, 'content-type': 'application/json' },
  });
  req.on('error', () => {});
  req.end(JSON.stringify(HEAVY_QUERY));
  await waitFor('the query to run in Postgres', async () => (await activeQueryStatements()) > 0);
  const left = Date.now();
  req.destroy();
  const goneMs = await waitFor('its statements to stop', async () => (await activeQueryStatements()) === 0, 5_000);
  console.log(`client left: the query's statements were gone from pg_stat_activity ${goneMs} ms later (${Date.now() - left} ms)`);
  assert.ok(goneMs <= 1_000, `gone after ${goneMs} ms`);
  await waitFor('its slot to be released', async () => t.cp.queries.runningCount() === 0, 5_000);
});

test('past the per-project cap a query answers 429 throttled, while another project\'s query still runs', async () => {
  const settled: boolean[] = [];
  const running = Array.from({ length: PER_PROJECT }, (_, i) => query(heavyA).finally(() => { settled[i] = true; }));
  await waitFor('the capped project\'s queries to run', async () => (await activeQueryStatements()) >= PER_PROJECT);
  const refused = await query(heavyA);
  assert.equal(refused.status, 429, refused.text);
  assert.deepEqual({ type: refused.body.type, code: refused.body.code, attr: refused.body.attr }, { type: 'throttled_error', code: 'throttled', attr: null });
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  const other = await query(light.id, { query: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'heavy' }], dateRange: { date_from: '-1d' } } });
  assert.equal(other.status, 200, other.text);
  assert.equal(other.body.results[0].count, 200);
  assert.equal(settled.filter(Boolean).length, 0, 'the capped project\'s queries were still running');
  for (const r of await Promise.all(running)) assert.equal(r.status, 504);
  const metrics = await t.request('GET', '/metrics');
  assert.match(metrics.text, /switchyard_queries_throttled_total [1-9]/);
});

test('while heavy queries hold every query connection, another project\'s flag list answers (latencies printed)', async () => {
  let stop = false;
  // At the end the clients leave: their queries are cancelled (as above) instead of running on to the deadline.
  const leave = new AbortController();
  const statuses = new Map<number, number>();
  const load = async (projectId: number) => {
    while (!stop) {
      let status: number;
      try {
        const r = await fetch(`${t.baseUrl}/api/projects/${projectId}/query/`, {
          method: 'POST', signal: leave.signal, body: JSON.stringify(HEAVY_QUERY),
          headers: { authorization: `Bearer ${t.personalKey}`, 'content-type': 'application/json' },
        });
        await r.arrayBuffer();
        status = r.status;
      } catch (e) {
        if (leave.signal.aborted) return;
        throw e;
      }
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status === 429) await new Promise((resolve) => setTimeout(resolve, 250)); // a client backing off
    }
  };
  // Two projects at their cap, plus one more each that the cap refuses: POOL connections busy.
  const workers = [heavyA, heavyA, heavyC, heavyC].map(load);
  let maxConnections = 0;
  try {
    await waitFor('the query pool to be busy', async () => (await activeQueryStatements()) >= POOL);
    const times: number[] = [];
    for (let i = 0; i < 50; i++) {
      const began = process.hrtime.bigint();
      const r = await t.request('GET', `/api/projects/${light.id}/feature_flags/`);
      times.push(Number(process.hrtime.bigint() - began) / 1e6);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.results[0].key, 'light-flag');
      if (i % 10 === 0) maxConnections = Math.max(maxConnections, await queryConnections());
    }
    times.sort((a, b) => a - b);
    const busy = await activeQueryStatements();
    console.log(`flag list of another project during ${busy} running heavy queries (pool ${POOL}): p50 ${times[24]!.toFixed(1)} ms, p90 ${times[44]!.toFixed(1)} ms, max ${times[49]!.toFixed(1)} ms`);
  } finally {
    stop = true;
    leave.abort();
    await Promise.all(workers);
  }
  console.log(`heavy query answers meanwhile: ${JSON.stringify(Object.fromEntries(statuses))}`);
  assert.ok(maxConnections <= POOL, `the query pool held ${maxConnections} connections`);
  assert.ok((statuses.get(429) ?? 0) > 0, 'the cap refused the extra queries');
});
