/**
 * PostHog's query rules without an upstream vector to replay, checked end to end (real ingestion,
 * `POST /query/`) against figures counted by hand from the events each test sends: a mean
 * metric's `threshold`, `only_count_matured_users` (conversion window after the first exposure;
 * retention window after the start event; stored on the experiment, overridden by a query), a query's `stats_config`, and the refusals (unknown
 * stats_config keys, math_hogql outside the subset, threshold with winsorization, bad
 * ExperimentExposureQuery).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';

let t: TestControlPlane;
before(async () => { t = await startTestControlPlane(); });
after(async () => { await t?.close(); });

const HOUR = 3600_000;
const DAY = 24 * HOUR;
type Ev = [distinctId: string, event: string, at: number, properties?: Record<string, unknown>];

async function setup(flag: string, events: Ev[], start = Date.now() - 6 * DAY): Promise<number> {
  const r = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, { body: { name: flag, feature_flag_key: flag, start_date: new Date(start).toISOString() } });
  assert.equal(r.status, 201, r.text);
  await ingestEvents(t.db.sql, events.map(([d, event, at, properties]) => ({
    uuid: crypto.randomUUID(), project_id: t.projectId, distinct_id: `${flag}:${d}`, event, timestamp: new Date(at).toISOString(), properties: properties ?? {},
  })));
  return r.body.id;
}

const exposed = (flag: string, d: string, variant: string, at: number): Ev => [d, '$feature_flag_called', at, { $feature_flag: flag, $feature_flag_response: variant }];

function query(q: Record<string, unknown>) {
  return t.request('POST', `/api/projects/${t.projectId}/query/`, { body: { query: q } });
}

const arm = (r: any, key: string) => [r.body.baseline, ...r.body.variant_results].find((a: any) => a.key === key);
const sumMetric = { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'sum', math_property: 'amount' } };

test('threshold: each user counts 1 when their value reaches it, so sum = sum_squares = users reaching it', async () => {
  const f = 'opt-threshold';
  const at = Date.now() - 2 * HOUR;
  const values: [string, string, number | null][] = [['c0', 'control', 10], ['c1', 'control', 20], ['c2', 'control', 30], ['c3', 'control', null],
    ['t0', 'test', 25], ['t1', 'test', 5], ['t2', 'test', 40]];
  const events = values.flatMap(([d, v, amount]): Ev[] => [exposed(f, d, v, at), ...(amount === null ? [] : [[d, 'purchase', at + 60_000, { amount }] as Ev])]);
  const id = await setup(f, events);
  const r = await query({ kind: 'ExperimentQuery', experiment_id: id, metric: { ...sumMetric, threshold: 20 } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([arm(r, 'control').number_of_samples, arm(r, 'control').sum, arm(r, 'control').sum_squares], [4, 2, 2]);
  assert.deepEqual([arm(r, 'test').number_of_samples, arm(r, 'test').sum, arm(r, 'test').sum_squares], [3, 2, 2]);
  const raw = await query({ kind: 'ExperimentQuery', experiment_id: id, metric: sumMetric });
  assert.equal(arm(raw, 'control').sum, 60, 'without a threshold the amounts are summed');

  const bad = await query({ kind: 'ExperimentQuery', experiment_id: id, metric: { ...sumMetric, threshold: 'x' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.attr, 'metric__threshold');
  const both = await query({ kind: 'ExperimentQuery', experiment_id: id, metric: { ...sumMetric, threshold: 20, upper_bound_percentile: 0.9 } });
  assert.equal(both.status, 400);
  assert.match(both.body.detail, /threshold cannot be combined/);
});

test('only_count_matured_users: a user counts once their first exposure plus the conversion window has passed', async () => {
  const f = 'opt-matured';
  const now = Date.now();
  const id = await setup(f, [
    exposed(f, 'm1', 'control', now - 2 * DAY), ['m1', 'purchase', now - 2 * DAY + HOUR, { amount: 1 }], // matured
    exposed(f, 'm2', 'control', now - 2 * HOUR), ['m2', 'purchase', now - HOUR, { amount: 2 }], // window still open
    exposed(f, 'm3', 'control', now - 2 * DAY), exposed(f, 'm3', 'control', now - HOUR), // a re-exposure does not reopen it
    exposed(f, 'm4', 'test', now - 30 * HOUR), ['m4', 'purchase', now - 29 * HOUR, { amount: 4 }], // matured
  ]);
  const windowed = { ...sumMetric, conversion_window: 1, conversion_window_unit: 'day' };
  const on = await query({ kind: 'ExperimentQuery', experiment_id: id, metric: windowed, only_count_matured_users: true });
  assert.equal(on.status, 200, on.text);
  assert.deepEqual([arm(on, 'control').number_of_samples, arm(on, 'control').sum], [2, 1]);
  assert.deepEqual([arm(on, 'test').number_of_samples, arm(on, 'test').sum], [1, 4]);
  const off = await query({ kind: 'ExperimentQuery', experiment_id: id, metric: windowed });
  assert.deepEqual([arm(off, 'control').number_of_samples, arm(off, 'control').sum], [3, 3]);
  const noWindow = await query({ kind: 'ExperimentQuery', experiment_id: id, metric: sumMetric, only_count_matured_users: true });
  assert.equal(arm(noWindow, 'control').number_of_samples, 3, 'no conversion window: nothing to wait for');
  const bad = await query({ kind: 'ExperimentQuery', experiment_id: id, metric: windowed, only_count_matured_users: 'yes' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.attr, 'only_count_matured_users');
});

test('only_count_matured_users stored on the experiment: create, PATCH, GET, fingerprint; the runner uses it unless the query says otherwise', async () => {
  const f = 'opt-matured-stored';
  const now = Date.now();
  const id = await setup(f, [
    exposed(f, 'm1', 'control', now - 2 * DAY), ['m1', 'purchase', now - 2 * DAY + HOUR, { amount: 1 }], // matured
    exposed(f, 'm2', 'control', now - 2 * HOUR), ['m2', 'purchase', now - HOUR, { amount: 2 }], // window still open
  ]);
  const url = `/api/projects/${t.projectId}/experiments/${id}/`;
  const windowed = { ...sumMetric, uuid: crypto.randomUUID(), conversion_window: 1, conversion_window_unit: 'day' };
  const off = await t.request('PATCH', url, { body: { metrics: [windowed] } });
  assert.equal(off.status, 200, off.text);
  assert.equal(off.body.only_count_matured_users, false, 'PostHog\'s default');
  const on = await t.request('PATCH', url, { body: { only_count_matured_users: true } });
  assert.equal(on.body.only_count_matured_users, true);
  assert.notEqual(on.body.metrics[0].fingerprint, off.body.metrics[0].fingerprint, 'the setting changes what the metric computes');
  assert.equal((await t.request('GET', url)).body.only_count_matured_users, true);

  const stored = await query({ kind: 'ExperimentQuery', experiment_id: id, metric: windowed });
  assert.deepEqual([arm(stored, 'control').number_of_samples, arm(stored, 'control').sum], [1, 1], 'the stored setting applies');
  const overridden = await query({ kind: 'ExperimentQuery', experiment_id: id, metric: windowed, only_count_matured_users: false });
  assert.deepEqual([arm(overridden, 'control').number_of_samples, arm(overridden, 'control').sum], [2, 3], 'the query\'s value wins');

  const bad = await t.request('PATCH', url, { body: { only_count_matured_users: 'sometimes' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.attr, 'only_count_matured_users');
  const created = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, { body: { name: `${f}-2`, feature_flag_key: `${f}-2`, only_count_matured_users: true } });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.body.only_count_matured_users, true);
  const copy = await t.request('POST', `/api/projects/${t.projectId}/experiments/${created.body.id}/duplicate/`, { body: {} });
  assert.equal(copy.body.only_count_matured_users, true, 'a duplicate keeps it');
});

test('only_count_matured_users for retention: the retention window must have ended after the start event', async () => {
  const f = 'opt-matured-retention';
  const now = Date.now();
  const id = await setup(f, [
    exposed(f, 'r1', 'control', now - 5 * DAY), ['r1', 'signup', now - 4 * DAY], ['r1', 'login', now - 3 * DAY + HOUR],
    exposed(f, 'r2', 'control', now - 5 * DAY), ['r2', 'signup', now - DAY],
  ]);
  const metric = { kind: 'ExperimentMetric', metric_type: 'retention', start_event: { kind: 'EventsNode', event: 'signup' }, completion_event: { kind: 'EventsNode', event: 'login' },
    retention_window_start: 1, retention_window_end: 2, retention_window_unit: 'day' };
  const on = await query({ kind: 'ExperimentQuery', experiment_id: id, metric, only_count_matured_users: true });
  assert.equal(on.status, 200, on.text);
  assert.deepEqual([arm(on, 'control').number_of_samples, arm(on, 'control').sum], [1, 1]);
  const off = await query({ kind: 'ExperimentQuery', experiment_id: id, metric });
  assert.deepEqual([arm(off, 'control').number_of_samples, arm(off, 'control').sum], [2, 1]);
});

test('a query\'s stats_config replaces the experiment\'s; unknown keys are refused, naming the known ones', async () => {
  const f = 'opt-stats';
  const at = Date.now() - 2 * HOUR;
  const id = await setup(f, [exposed(f, 'a', 'control', at), exposed(f, 'b', 'test', at)]);
  const base = { kind: 'ExperimentQuery', experiment_id: id, metric: sumMetric };
  const bayes = await query(base);
  assert.equal(bayes.body.stats_method, 'bayesian');
  const freq = await query({ ...base, stats_config: { method: 'frequentist', frequentist: { alpha: 0.1, difference_type: 'ABSOLUTE' } } });
  assert.equal(freq.status, 200, freq.text);
  assert.equal(freq.body.stats_method, 'frequentist');
  assert.ok('p_value' in freq.body.variant_results[0]);
  const cases: [unknown, string, RegExp][] = [
    [{ method: 'frequentist', use_new_query_builder: true }, 'stats_config__use_new_query_builder', /known keys: method, bayesian, frequentist, cuped, baseline_variant_key, difference_type/],
    [{ frequentist: { alpha: 0.05, power: 0.8 } }, 'stats_config__frequentist__power', /known keys: alpha, ci_level, difference_type/],
    [{ method: 'sequential' }, 'stats_config__method', /bayesian" or "frequentist/],
    [{ cuped: { enabled: true, lookback_days: 90 } }, 'stats_config__cuped__lookback_days', /1 to 30/],
    [{ baseline_variant_key: 'nope' }, 'stats_config__baseline_variant_key', /not a variant/],
    ['frequentist', 'stats_config', /must be an object/],
  ];
  for (const [stats_config, attr, detail] of cases) {
    const r = await query({ ...base, stats_config });
    assert.equal(r.status, 400, `${JSON.stringify(stats_config)}: ${r.text}`);
    assert.equal(r.body.type, 'validation_error');
    assert.equal(r.body.attr, attr);
    assert.match(r.body.detail, detail);
  }
});

test('math hogql outside the supported subset is refused naming the subset; ExperimentExposureQuery errors', async () => {
  const f = 'opt-hogql';
  const id = await setup(f, [exposed(f, 'a', 'control', Date.now() - HOUR)]);
  for (const math_hogql of ['uniqExact(distinct_id)', 'sum(person.properties.age)', "properties.plan = 'pro'", 'sum(properties.a', undefined]) {
    const r = await query({ kind: 'ExperimentQuery', experiment_id: id, metric: { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'hogql', math_hogql } } });
    assert.equal(r.status, 400, `${math_hogql}: ${r.text}`);
    assert.equal(r.body.attr, 'metric__source__math_hogql');
    assert.match(r.body.detail, /math_hogql supports sum\(…\), avg\(…\), min\(…\), max\(…\), count\(\)/);
  }
  assert.equal((await query({ kind: 'ExperimentExposureQuery' })).body.attr, 'experiment_id');
  const missing = await query({ kind: 'ExperimentExposureQuery', experiment_id: 999_999 });
  assert.equal(missing.status, 400);
  assert.equal(missing.body.code, 'not_found');
  const draft = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, { body: { name: 'draft', feature_flag_key: 'opt-draft' } });
  const empty = await query({ kind: 'ExperimentExposureQuery', experiment_id: draft.body.id });
  assert.equal(empty.status, 200, empty.text);
  assert.deepEqual([empty.body.timeseries, empty.body.total_exposures], [[], {}]);
});
