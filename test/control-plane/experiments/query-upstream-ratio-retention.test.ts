/**
 * PostHog's ratio-metric, retention-metric and CUPED ExperimentQueryRunner tests replayed end to
 * end (upstream-support.ts): each vector's events go through ingestion, the experiment gets the
 * test's dates, flag and stats_config, and `POST /query/` must answer the test's per-variant
 * figures. The tests not replayed are listed with reasons in docs/api.md.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { type Journey, type Step, arm, cite, experiment, expectArms, exposure, fourteenDays, ingest, query, shifted, shiftTo } from './upstream-support.js';

let t: TestControlPlane;
before(async () => { t = await startTestControlPlane(); });
after(async () => { await t?.close(); });

const DIR = 'products/experiments/backend/hogql_queries/test/experiment_query_runner';
const RATIO = { file: `${DIR}/test_ratio_metric.py`, commit: '18a8040f15f3dd48de2b928554d7ddaaeadfb320' };
const RETENTION = { file: `${DIR}/test_retention_metric.py`, commit: '0948eb3256abf6ad7ebe9dbfee6c07378b280815' };
const CUPED = { file: `${DIR}/test_cuped_mean_metric.py`, commit: '6d595b7a1b7bc87db1d36fbd05c9684d7339a1dc' };

const ev = (f: string, v: string, event: string, ts: string, props: Record<string, unknown> = {}): Step => [event, ts, { [`$feature/${f}`]: v, ...props }];
const node = (event: string, extra: Record<string, unknown> = {}) => ({ kind: 'EventsNode', event, ...extra });
const ratio = (numerator: Record<string, unknown>, denominator: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ kind: 'ExperimentMetric', metric_type: 'ratio', numerator, denominator, ...extra });
const retention = (start: string, completion: string, from: number, to: number, extra: Record<string, unknown> = {}) => ({
  kind: 'ExperimentMetric', metric_type: 'retention', start_event: node(start), completion_event: node(completion),
  retention_window_start: from, retention_window_end: to, retention_window_unit: 'day', start_handling: 'first_seen', ...extra,
});
/** A retention arm: `n` starters, `k` retained (values are 0/1, the denominator 1 per starter). */
const kept = (n: number, k: number) => ({ number_of_samples: n, sum: k, sum_squares: k, denominator_sum: n, denominator_sum_squares: n, numerator_denominator_sum_product: k });
const AT = '2024-01-02T12:00:00Z';

interface Vector {
  source: { file: string; commit: string }; test: string; start: string; end?: string; frozen?: string; stats?: Record<string, unknown>; extra?: Record<string, unknown>;
  journeys: (f: string) => Journey; metrics: { metric: Record<string, unknown>; expect: Record<string, Record<string, number | number[]>> }[];
}

/** Users `<id>` → [variant, their events after an exposure at `at`]. */
const users = (f: string, at: string, list: Record<string, [string, (v: string) => Step[]]>): Journey =>
  Object.fromEntries(Object.entries(list).map(([d, [v, steps]]) => [d, [exposure(f, v, at), ...steps(v)]]));

const vectors: Vector[] = [
  {
    source: RATIO, test: 'test_basic_ratio_metric', start: '2020-01-01T12:00:00Z',
    journeys: (f) => Object.fromEntries(['control', 'test'].flatMap((v) => Array.from({ length: 10 }, (_, i): [string, Step[]] => {
      const [buyers, single, one, two] = v === 'control' ? [6, 3, 10, 15] : [8, 4, 20, 10];
      const buys = i >= buyers ? [] : i < single ? [ev(f, v, 'purchase', '2020-01-02T12:01:00Z', { amount: one })]
        : [1, 2].map((j) => ev(f, v, 'purchase', `2020-01-02T12:0${j}:00Z`, { amount: two }));
      return [`user_${v}_${i}`, [exposure(f, v, '2020-01-02T12:00:00Z'), ...buys]];
    }))),
    metrics: [{
      metric: ratio(node('purchase', { math: 'sum', math_property: 'amount' }), node('purchase', { math: 'total' })),
      expect: { control: { sum: 120, number_of_samples: 10, denominator_sum: 9 }, test: { sum: 160, number_of_samples: 10, denominator_sum: 12 } },
    }],
  },
  {
    source: RATIO, test: 'test_ratio_metric_different_math_types', start: '2024-01-01T12:00:00Z',
    journeys: (f) => {
      const user = (v: string, session: string, amounts: number[]): Step[] => [exposure(f, v, AT, { $session_id: session }), ev(f, v, 'pageview', '2024-01-02T12:01:00Z', { $session_id: session }),
        ...amounts.map((amount, i) => ev(f, v, 'purchase', `2024-01-02T12:0${2 + i}:00Z`, { amount, $session_id: session }))];
      return { control_1: user('control', 'session_c1', [20, 30]), control_2: user('control', 'session_c2', [40]), test_1: user('test', 'session_t1', [50, 60]), test_2: user('test', 'session_t2', [80]) };
    },
    metrics: [{
      metric: ratio(node('purchase', { math: 'avg', math_property: 'amount' }), node('pageview', { math: 'unique_session' })),
      expect: { control: { sum: 65, number_of_samples: 2, denominator_sum: 2 }, test: { sum: 135, number_of_samples: 2, denominator_sum: 2 } },
    }],
  },
  {
    source: RATIO, test: 'test_ratio_metric_with_conversion_window', start: '2024-01-01T12:00:00Z',
    journeys: (f) => {
      const user = (within: boolean) => (v: string): Step[] => [ev(f, v, 'pageview', within ? '2024-01-02T12:15:00Z' : '2024-01-02T13:30:00Z'),
        ev(f, v, 'purchase', within ? '2024-01-02T12:30:00Z' : '2024-01-02T14:00:00Z', { amount: 100 })];
      return users(f, AT, { control_1: ['control', user(true)], control_2: ['control', user(true)], control_3: ['control', user(false)],
        test_1: ['test', user(true)], test_2: ['test', user(true)], test_3: ['test', user(true)] });
    },
    metrics: [{
      metric: ratio(node('purchase', { math: 'sum', math_property: 'amount' }), node('pageview', { math: 'total' }), { conversion_window: 1, conversion_window_unit: 'hour' }),
      expect: { control: { sum: 200, number_of_samples: 3, denominator_sum: 2 }, test: { sum: 300, number_of_samples: 3, denominator_sum: 3 } },
    }],
  },
  {
    source: RATIO, test: 'test_ratio_metric_zero_denominator', start: '2024-01-01T12:00:00Z',
    journeys: (f) => {
      const user = (special: boolean) => (v: string): Step[] => [ev(f, v, 'purchase', '2024-01-02T12:01:00Z', { amount: 50 }), ...(special ? [ev(f, v, 'special_event', '2024-01-02T12:02:00Z')] : [])];
      return users(f, AT, { control_1: ['control', user(false)], control_2: ['control', user(false)], test_1: ['test', user(true)], test_2: ['test', user(true)] });
    },
    metrics: [{
      metric: ratio(node('purchase', { math: 'sum', math_property: 'amount' }), node('special_event', { math: 'total' })),
      expect: { control: { sum: 100, number_of_samples: 2, denominator_sum: 0 }, test: { sum: 100, number_of_samples: 2, denominator_sum: 2 } },
    }],
  },
  {
    source: RATIO, test: 'test_ratio_metric_same_event_different_properties', start: '2024-01-01T12:00:00Z',
    journeys: (f) => {
      const user = (buys: [number, number][]) => (v: string): Step[] => buys.map(([revenue, quantity], i) => ev(f, v, 'purchase', `2024-01-02T12:0${i + 1}:00Z`, { revenue, quantity }));
      return users(f, AT, { control_1: ['control', user([[10, 5], [20, 8]])], control_2: ['control', user([[30, 10]])],
        test_1: ['test', user([[50, 5], [60, 6]])], test_2: ['test', user([[80, 8]])] });
    },
    metrics: [{
      metric: ratio(node('purchase', { math: 'sum', math_property: 'revenue' }), node('purchase', { math: 'sum', math_property: 'quantity' })),
      expect: { control: { sum: 60, number_of_samples: 2, denominator_sum: 23 }, test: { sum: 190, number_of_samples: 2, denominator_sum: 19 } },
    }],
  },
  {
    source: RATIO, test: 'test_only_count_matured_users', start: '2020-01-01T00:00:00Z', end: '2020-01-15T00:00:00Z', frozen: '2020-01-15T12:00:00Z', extra: { only_count_matured_users: true },
    journeys: (f) => ({
      user_mature_control: [exposure(f, 'control', '2020-01-02T12:00:00Z'), ev(f, 'control', 'purchase', '2020-01-03T12:00:00Z', { amount: 50 }), ev(f, 'control', 'purchase', '2020-01-04T12:00:00Z', { amount: 30 })],
      user_immature_control: [exposure(f, 'control', '2020-01-10T12:00:00Z'), ev(f, 'control', 'purchase', '2020-01-10T13:00:00Z', { amount: 100 })],
      user_mature_test: [exposure(f, 'test', '2020-01-02T12:00:00Z'), ev(f, 'test', 'purchase', '2020-01-03T12:00:00Z', { amount: 75 })],
    }),
    metrics: [{
      metric: ratio(node('purchase', { math: 'sum', math_property: 'amount' }), node('purchase', { math: 'total' }), { conversion_window: 7, conversion_window_unit: 'day' }),
      expect: { control: { number_of_samples: 1 }, test: { number_of_samples: 1 } },
    }],
  },
  {
    source: RETENTION, test: 'test_basic_retention_calculation', start: '2020-01-01T12:00:00Z',
    journeys: (f) => Object.fromEntries(['control', 'test'].flatMap((v) => Array.from({ length: 10 }, (_, i): [string, Step[]] => {
      const [starters, returners] = v === 'control' ? [6, 4] : [8, 6];
      return [`user_${v}_${i}`, [exposure(f, v, '2020-01-02T12:00:00Z'), ...(i < starters ? [ev(f, v, 'signup', '2020-01-02T12:01:00Z')] : []),
        ...(i < returners ? [ev(f, v, 'login', '2020-01-05T12:00:00Z')] : [])]];
    }))),
    metrics: [{ metric: retention('signup', 'login', 1, 7), expect: { control: kept(6, 4), test: kept(8, 6) } }],
  },
  {
    source: RETENTION, test: 'test_retention_window_boundaries', start: '2024-01-01T12:00:00Z',
    journeys: (f) => {
      const user = (day: number | null) => (v: string): Step[] => [ev(f, v, 'signup', '2024-01-02T12:01:00Z'),
        ...(day === null ? [] : [ev(f, v, 'return_visit', `2024-01-${String(2 + day).padStart(2, '0')}T12:01:00Z`)])];
      const list: Record<string, [string, (v: string) => Step[]]> = {};
      [5, 7, 10, 13, 14, 20, null].forEach((d, i) => { list[`control_${i + 1}`] = ['control', user(d)]; });
      [6, 7, 9, 12, 13, 14, null].forEach((d, i) => { list[`test_${i + 1}`] = ['test', user(d)]; });
      return users(f, AT, list);
    },
    metrics: [{ metric: retention('signup', 'return_visit', 7, 14), expect: { control: kept(7, 4), test: kept(7, 5) } }],
  },
  {
    source: RETENTION, test: 'test_retention_first_seen_vs_last_seen', start: '2024-01-01T12:00:00Z',
    journeys: (f) => {
      const user = (v: string): Step[] => [ev(f, v, 'signup', '2024-01-02T12:01:00Z'), ev(f, v, 'signup', '2024-01-05T12:01:00Z'), ev(f, v, 'purchase', '2024-01-08T12:01:00Z')];
      return users(f, AT, { control_1: ['control', user], control_2: ['control', user], test_1: ['test', user], test_2: ['test', user] });
    },
    metrics: ['first_seen', 'last_seen'].map((h) => ({ metric: retention('signup', 'purchase', 1, 7, { start_handling: h }), expect: { control: kept(2, 2), test: kept(2, 2) } })),
  },
  {
    source: RETENTION, test: 'test_retention_with_conversion_window', start: '2024-01-01T12:00:00Z',
    journeys: (f) => {
      const user = (hours: number, back: number | null) => (v: string): Step[] => [ev(f, v, 'signup', new Date(Date.parse(AT) + hours * 3_600_000).toISOString()),
        ...(back === null ? [] : [ev(f, v, 'return_visit', `2024-01-${String(2 + back).padStart(2, '0')}T14:00:00Z`)])];
      return users(f, AT, { control_1: ['control', user(1, 2)], control_2: ['control', user(1.5, 2)], control_3: ['control', user(3, 2)], control_4: ['control', user(0.5, null)],
        test_1: ['test', user(1, 2)], test_2: ['test', user(2, 2)], test_3: ['test', user(2.5, 2)] });
    },
    metrics: [{ metric: retention('signup', 'return_visit', 1, 3, { conversion_window: 2, conversion_window_unit: 'hour' }), expect: { control: kept(3, 2), test: kept(2, 2) } }],
  },
  {
    source: RETENTION, test: 'test_retention_no_completion_events', start: '2024-01-01T12:00:00Z',
    journeys: (f) => {
      const user = (v: string): Step[] => [ev(f, v, 'signup', '2024-01-02T12:01:00Z')];
      return users(f, AT, { control_1: ['control', user], control_2: ['control', user], control_3: ['control', user], test_1: ['test', user], test_2: ['test', user], test_3: ['test', user], test_4: ['test', user] });
    },
    metrics: [{ metric: retention('signup', 'purchase', 1, 7), expect: { control: kept(3, 0), test: kept(4, 0) } }],
  },
];

for (const [n, v] of vectors.entries()) {
  test(`upstream ${v.test} (${cite(v.source)})`, async () => {
    const f = `up-rr-${n}`;
    const offset = v.frozen ? shiftTo(v.frozen) : 0;
    const x = await experiment(t, f, shifted(v.start, offset), shifted(v.end ?? fourteenDays(v.start), offset), { stats_config: { method: 'frequentist', ...v.stats }, ...v.extra });
    await ingest(t, f, v.journeys(f), offset);
    for (const m of v.metrics) expectArms(await query(t, { kind: 'ExperimentQuery', experiment_id: x.id, metric: m.metric }), m.expect);
  });
}

// CUPED: experiments run 2020-01-10 to 2020-01-15; purchases carry `$feature/<flag>: "ignored"` as upstream's do.
const purchase = (f: string, ts: string, amount: number): Step => ['purchase', ts, { [`$feature/${f}`]: 'ignored', amount }];
const pageview = (f: string, ts: string, session: string): Step => ['$pageview', ts, { [`$feature/${f}`]: 'ignored', $session_id: session }];
const sumMetric = (extra: Record<string, unknown> = {}) => ({ kind: 'ExperimentMetric', metric_type: 'mean', source: node('purchase', { math: 'sum', math_property: 'amount' }), ...extra });
/** Users exposed 2020-01-10T12:00 with a purchase of `pre` the day before (when given) and of `post` an hour after. */
const prePost = (f: string, list: [string, string, number | null, number][], preAt = '2020-01-09T12:00:00Z'): Journey => Object.fromEntries(list.map(([d, v, pre, post]) => [d,
  [...(pre === null ? [] : [purchase(f, preAt, pre)]), exposure(f, v, '2020-01-10T12:00:00Z'), purchase(f, '2020-01-10T13:00:00Z', post)]]));
const correlated = (f: string, pre = true) => prePost(f, ['control', 'test'].flatMap((v, effect) => Array.from({ length: 60 }, (_, i): [string, string, number | null, number] =>
  [`${v}_${i}`, v, pre ? i + 1 : null, i + 1 + effect])));

async function cuped(name: string, stats: Record<string, unknown>, journeys: (f: string) => Journey, metric: Record<string, unknown> = sumMetric()): Promise<any> {
  const f = `up-cuped-${name}`;
  const x = await experiment(t, f, '2020-01-10T00:00:00Z', '2020-01-15T00:00:00Z', { stats_config: stats });
  await ingest(t, f, journeys(f));
  return query(t, { kind: 'ExperimentQuery', experiment_id: x.id, metric });
}
const LOOKBACK_7 = { method: 'frequentist', cuped: { enabled: true, lookback_days: 7 } };

test(`upstream test_disabled_cuped_does_not_collect_covariate_columns (${cite(CUPED)})`, async () => {
  const r = await cuped('off', { method: 'frequentist' }, (f) => prePost(f, [['control_1', 'control', 3, 10], ['test_1', 'test', 5, 20]]));
  expectArms(r, { control: { sum: 10 }, test: { sum: 20 } });
  assert.equal(arm(r, 'control').covariate_sum ?? null, null);
  assert.equal(arm(r, 'test').covariate_sum ?? null, null);
});

test(`upstream test_cuped_mean_metric_collects_covariate_columns (${cite(CUPED)})`, async () => {
  const r = await cuped('collects', LOOKBACK_7, (f) => prePost(f, [['control_1', 'control', 3, 10], ['control_2', 'control', 4, 20], ['test_1', 'test', 5, 30], ['test_2', 'test', 6, 40]], '2020-01-08T12:00:00Z'));
  expectArms(r, { control: { sum: 30, covariate_sum: 7, covariate_sum_squares: 25, covariate_sum_product: 110 }, test: { sum: 70, covariate_sum: 11, covariate_sum_squares: 61, covariate_sum_product: 390 } });
});

test(`upstream test_cuped_uses_pre_exposure_window_relative_to_first_exposure (${cite(CUPED)})`, async () => {
  const r = await cuped('first', { method: 'frequentist', cuped: { enabled: true, lookback_days: 2 } }, (f) => ({
    control_1: [purchase(f, '2020-01-07T12:00:00Z', 100), purchase(f, '2020-01-09T12:00:00Z', 5), exposure(f, 'control', '2020-01-10T12:00:00Z'),
      purchase(f, '2020-01-11T12:00:00Z', 7), exposure(f, 'control', '2020-01-12T12:00:00Z')],
    test_1: [purchase(f, '2020-01-09T12:00:00Z', 6), exposure(f, 'test', '2020-01-10T12:00:00Z'), purchase(f, '2020-01-11T12:00:00Z', 8)],
  }));
  expectArms(r, { control: { sum: 7, covariate_sum: 5, covariate_sum_squares: 25, covariate_sum_product: 35 }, test: { sum: 8, covariate_sum: 6, covariate_sum_product: 48 } });
});

test(`upstream test_cuped_respects_conversion_window_for_post_values (${cite(CUPED)})`, async () => {
  const r = await cuped('window', LOOKBACK_7, (f) => Object.fromEntries([['control_1', 'control', 4, 10], ['test_1', 'test', 5, 20]].map(([d, v, pre, post]) => [d as string,
    [purchase(f, '2020-01-09T12:00:00Z', pre as number), exposure(f, v as string, '2020-01-10T12:00:00Z'), purchase(f, '2020-01-10T13:00:00Z', post as number), purchase(f, '2020-01-12T13:00:00Z', 100)]])),
  sumMetric({ conversion_window: 1, conversion_window_unit: 'day' }));
  expectArms(r, { control: { sum: 10, covariate_sum: 4, covariate_sum_product: 40 }, test: { sum: 20, covariate_sum: 5, covariate_sum_product: 100 } });
});

test(`upstream test_cuped_adjusts_statistical_result and test_cuped_adjusts_bayesian_statistical_result (${cite(CUPED)})`, async () => {
  // One flag and one ingestion of the correlated users; an experiment of its own per stats_config on that flag.
  const f = 'up-cuped-correlated';
  const on = async (stats: Record<string, unknown>) => {
    const x = await experiment(t, f, '2020-01-10T00:00:00Z', '2020-01-15T00:00:00Z', { stats_config: stats });
    return query(t, { kind: 'ExperimentQuery', experiment_id: x.id, metric: sumMetric() });
  };
  await ingest(t, f, correlated(f));
  const plain = await on({ method: 'frequentist' });
  const adjusted = await on(LOOKBACK_7);
  const [p, a] = [plain.variant_results[0], adjusted.variant_results[0]];
  assert.ok(a.p_value < p.p_value, `p ${a.p_value} vs ${p.p_value}`);
  assert.ok(a.confidence_interval[1] - a.confidence_interval[0] < p.confidence_interval[1] - p.confidence_interval[0]);
  const plainB = await on({ method: 'bayesian' });
  const adjustedB = await on({ method: 'bayesian', cuped: { enabled: true, lookback_days: 7 } });
  expectArms(adjustedB, { control: { covariate_sum: 1830 }, test: { covariate_sum: 1830 } });
  const [pb, ab] = [plainB.variant_results[0], adjustedB.variant_results[0]];
  assert.ok(ab.credible_interval[1] - ab.credible_interval[0] < pb.credible_interval[1] - pb.credible_interval[0]);
});

test(`upstream test_cuped_handles_zero_pre_exposure_data (${cite(CUPED)})`, async () => {
  const r = await cuped('zero', LOOKBACK_7, (f) => correlated(f, false));
  const zero = { covariate_sum: 0, covariate_sum_squares: 0, covariate_sum_product: 0 };
  expectArms(r, { control: zero, test: zero });
  assert.equal(typeof r.variant_results[0].p_value, 'number');
});

test(`upstream test_cuped_unique_session_metric_collects_distinct_covariates (${cite(CUPED)})`, async () => {
  const r = await cuped('sessions', LOOKBACK_7, (f) => ({
    control_1: [pageview(f, '2020-01-09T12:00:00Z', 'c_1_pre_a'), pageview(f, '2020-01-09T12:05:00Z', 'c_1_pre_b'), exposure(f, 'control', '2020-01-10T12:00:00Z'), pageview(f, '2020-01-10T13:00:00Z', 'c_1_post')],
    control_2: [exposure(f, 'control', '2020-01-10T12:00:00Z'), pageview(f, '2020-01-10T13:00:00Z', 'c_2_post')],
    test_1: [pageview(f, '2020-01-09T12:00:00Z', 't_1_pre'), exposure(f, 'test', '2020-01-10T12:00:00Z'), pageview(f, '2020-01-10T13:00:00Z', 't_1_post_a'), pageview(f, '2020-01-10T13:05:00Z', 't_1_post_b')],
    test_2: [pageview(f, '2020-01-09T12:00:00Z', 't_2_pre_a'), pageview(f, '2020-01-09T12:05:00Z', 't_2_pre_b'), exposure(f, 'test', '2020-01-10T12:00:00Z'), pageview(f, '2020-01-10T13:00:00Z', 't_2_post')],
  }), { kind: 'ExperimentMetric', metric_type: 'mean', source: node('$pageview', { math: 'unique_session' }) });
  expectArms(r, { control: { sum: 2, covariate_sum: 2, covariate_sum_squares: 4, covariate_sum_product: 2 }, test: { sum: 3, covariate_sum: 3, covariate_sum_squares: 5, covariate_sum_product: 4 } });
});
