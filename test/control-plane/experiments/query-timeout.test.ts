/**
 * The query endpoint's time limit (config `queryTimeoutMs`, SWITCHYARD_QUERY_TIMEOUT_MS) on a
 * real control plane and Postgres: a statement that cannot finish in time (here it waits on a
 * lock another session holds: on the exposures pre-aggregate for an ExperimentQuery, on the
 * events for a TrendsQuery) is stopped by Postgres and the query answers 504 in PostHog's shape;
 * once the lock is gone the same query answers 200, and no statement is left running.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';

let t: TestControlPlane;
// Long enough that an unblocked statement finishes in time on a loaded machine (suites run side by side).
const TIMEOUT_MS = 1_000;

/**
 * Holds an ACCESS EXCLUSIVE lock on `table` from another session while `body` is queried: the
 * query must answer 504 after the limit and leave no statement on `table` behind. The lock is
 * released after 10 s at the latest, so a query without the limit answers (200) instead of hanging.
 */
async function assertTimesOut(table: string, body: unknown): Promise<void> {
  let release!: () => void;
  const released = new Promise<void>((r) => { release = r; });
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => { locked = r; });
  const holder = t.db.sql.begin(async (tx) => {
    await tx.unsafe(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    locked();
    await released;
  });
  const safety = setTimeout(() => release(), 10_000);
  try {
    await isLocked;
    const began = Date.now();
    const r = await t.request('POST', `/api/projects/${t.projectId}/query/`, { body });
    assert.equal(r.status, 504, r.text);
    assert.deepEqual({ type: r.body.type, code: r.body.code, attr: r.body.attr }, { type: 'server_error', code: 'error', attr: null });
    assert.match(r.body.detail, /max execution time/);
    assert.ok(Date.now() - began >= TIMEOUT_MS, 'answered after the limit, not before');
    const waiting = await t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE ${`%${table}%`} AND query NOT LIKE '%LOCK TABLE%'`;
    assert.equal(waiting[0]!.n, 0, 'no statement left waiting');
  } finally {
    clearTimeout(safety);
    release();
    await holder;
  }
}

before(async () => { t = await startTestControlPlane({ queryTimeoutMs: TIMEOUT_MS }); });
after(async () => { await t?.close(); });

test('a statement past the time limit answers 504 (server_error) and stops; the query answers once nothing blocks it', async () => {
  const start = Date.now() - 3_600_000;
  const created = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, { body: { name: 'Timeout', feature_flag_key: 'timeout-exp', start_date: new Date(start).toISOString() } });
  assert.equal(created.status, 201, created.text);
  await ingestEvents(t.db.sql, Array.from({ length: 20 }, (_, i) => ({
    uuid: crypto.randomUUID(), project_id: t.projectId, event: '$feature_flag_called', distinct_id: `to-${i}`,
    properties: { $feature_flag: 'timeout-exp', $feature_flag_response: i % 2 === 0 ? 'control' : 'test' }, timestamp: new Date(start + 60_000).toISOString(),
  })));
  const body = { query: { kind: 'ExperimentQuery', experiment_id: created.body.id, metric: { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase' } } } };

  await assertTimesOut('experiment_exposures', body);
  const ok = await t.request('POST', `/api/projects/${t.projectId}/query/`, { body });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.baseline.number_of_samples + ok.body.variant_results[0].number_of_samples, 20);
});

test('a TrendsQuery past the time limit answers 504 too, and answers once nothing blocks it', async () => {
  const body = { query: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: '$feature_flag_called' }], dateRange: { date_from: '-1d' } } };
  await assertTimesOut('events', body);
  const ok = await t.request('POST', `/api/projects/${t.projectId}/query/`, { body });
  assert.equal(ok.status, 200, ok.text);
});
