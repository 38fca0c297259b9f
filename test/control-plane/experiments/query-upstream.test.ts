/**
 * PostHog's own ExperimentQueryRunner and ExperimentExposuresQueryRunner tests replayed end to
 * end: each vector's events (same distinct ids, events, timestamps and properties, prefixed per
 * vector so vectors share one project) go through the real ingestion, the experiment gets the
 * test's dates and flag (control/test 50/50), and `POST /query/` must answer the test's expected
 * per-variant counts and sums. Each vector names its upstream file, test and commit; the tests
 * not replayed are listed with reasons in docs/api.md ("PostHog's query-runner tests").
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { type Journey, type Step, arm, exposure as exposureOf, fourteenDays, ingest as ingestFor, query as queryFor, experiment as experimentFor, shifted, shiftTo } from './upstream-support.js';

let t: TestControlPlane;
before(async () => { t = await startTestControlPlane(); });
after(async () => { await t?.close(); });

/** The current version of the mean-metric tests (moved under products/experiments). */
const MEAN_NOW = { repo: 'PostHog/posthog', file: 'products/experiments/backend/hogql_queries/test/experiment_query_runner/test_mean_metric.py', commit: '1a71549111d5672335715878044dd515e7a8f84c' };
/** An earlier version, whose vectors the current one keeps unchanged. */
const MEAN = { repo: 'PostHog/posthog', file: 'posthog/hogql_queries/experiments/test/experiment_query_runner/test_mean_metric.py', commit: '0451e82b746848506c41f7014eea89e1fbf85828' };
/** The stored version read (its commit is not recorded by the index; the index file id names the version). */
const HOGQL = { repo: 'PostHog/posthog', file: 'posthog/hogql_queries/experiments/test/test_experiment_query_runner.py', index_file_id: '117178917' };
const EXPOSURES = { repo: 'PostHog/posthog', file: 'products/experiments/backend/hogql_queries/test/experiment_query_runner/test_experiment_exposures_query_runner.py', commit: '2458a84dbe8bc00f22717360265c6d3ce5f75450' };

const exposure = exposureOf;
const ingest = (prefix: string, journeys: Journey, offset = 0) => ingestFor(t, prefix, journeys, offset);
const experiment = (flag: string, start: string, end: string, extra: Record<string, unknown> = {}) => experimentFor(t, flag, start, end, extra);
const query = (q: Record<string, unknown>) => queryFor(t, q);

interface MeanVector {
  source: Record<string, unknown>; test: string; start: string; end?: string; metric: Record<string, unknown>; journeys: (flag: string) => Journey;
  expect: Record<string, { n?: number; sum?: number }>;
  /** PostHog's frozen now, for vectors that compare with it (the vector is moved onto the real now). */
  frozen?: string;
  extra?: Record<string, unknown>;
}

/** 10 users per variant exposed at `at`; the first `buyers` of each buy once, `props(i, variant)` the purchase's properties. */
function buyers(flag: string, at: string, buy: string, counts: Record<string, number>, props: (i: number, v: string) => Record<string, unknown>): Journey {
  const out: Journey = {};
  for (const v of ['control', 'test']) {
    for (let i = 0; i < 10; i++) out[`user_${v}_${i}`] = [exposure(flag, v, at), ...(i < counts[v]! ? [['purchase', buy, { [`$feature/${flag}`]: v, ...props(i, v) }] as [string, string, Record<string, unknown>]] : [])];
  }
  return out;
}

/** Users exposed at `at`, each with one purchase per amount, all at `when` (PostHog's threshold tests' `_create_threshold_users`). */
function sameTime(flag: string, at: string, when: string, users: Record<string, number[][]>): Journey {
  return Object.fromEntries(Object.entries(users).flatMap(([v, list]) => list.map((amounts, i): [string, Step[]] => [`user_${v}_${i}`,
    [exposure(flag, v, at), ...amounts.map((amount): Step => ['purchase', when, { [`$feature/${flag}`]: v, amount }])]])));
}

/** Users exposed at `at` with `count` purchases each, one second apart from `first`. */
function counts(flag: string, at: string, first: string, users: Record<string, [string, number]>, props: (i: number) => Record<string, unknown> = () => ({})): Journey {
  return Object.fromEntries(Object.entries(users).map(([d, [v, n]]) => [d, [exposure(flag, v, at),
    ...Array.from({ length: n }, (_, i): Step => ['purchase', new Date(Date.parse(first) + i * 1000).toISOString(), { [`$feature/${flag}`]: v, ...props(i) }])]]));
}

const sumOf = (prop = 'amount') => ({ kind: 'EventsNode', event: 'purchase', math: 'sum', math_property: prop });
const mean = (source: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ kind: 'ExperimentMetric', metric_type: 'mean', source, ...extra });
const COUNT_USERS: Record<string, [string, number]> = Object.fromEntries([
  ...[1, 3, 3, 3, 3, 3, 3, 3, 3, 100].map((n, i) => [`control_${i + 1}`, ['control', n]]),
  ...[2, 4, 4, 4, 4, 4, 4, 4, 4, 4].map((n, i) => [`test_${i + 1}`, ['test', n]]),
]);
/** PostHog's mature / immature users of its only_count_matured_users tests (exposed Jan 2 or Jan 10, 2020). */
const maturedJourneys = (f: string): Journey => ({
  user_mature_control: [exposure(f, 'control', '2020-01-02T12:00:00Z'), ['purchase', '2020-01-03T12:00:00Z', { [`$feature/${f}`]: 'control', amount: 50 }]],
  user_immature_control: [exposure(f, 'control', '2020-01-10T12:00:00Z'), ['purchase', '2020-01-10T13:00:00Z', { [`$feature/${f}`]: 'control', amount: 100 }]],
  user_mature_test: [exposure(f, 'test', '2020-01-02T12:00:00Z'), ['purchase', '2020-01-03T12:00:00Z', { [`$feature/${f}`]: 'test', amount: 75 }]],
});
/** test_matured_user_value_stable_across_re_exposure's user: exposed Jan 2 and again Jan 5, buying after each. */
const reExposed = (f: string): Journey => ({
  user_re_exposed: [exposure(f, 'control', '2020-01-02T00:00:00Z'), ['purchase', '2020-01-02T12:00:00Z', { [`$feature/${f}`]: 'control', amount: 25 }],
    exposure(f, 'control', '2020-01-05T00:00:00Z'), ['purchase', '2020-01-05T12:00:00Z', { [`$feature/${f}`]: 'control', amount: 100 }]],
});

/** Users with one exposure at `at` and one purchase per amount (one second apart) from `first`. */
function perUser(flag: string, at: string, first: string, users: Record<string, [string, number[]]>, event = 'purchase', prop = 'amount'): Journey {
  return Object.fromEntries(Object.entries(users).map(([d, [v, amounts]]) => [d, [exposure(flag, v, at),
    ...amounts.map((a, i) => [event, new Date(Date.parse(first) + i * 1000).toISOString(), { [`$feature/${flag}`]: v, [prop]: a }] as [string, string, Record<string, unknown>])]]));
}

const meanVectors: MeanVector[] = [
  {
    source: MEAN, test: 'test_property_sum_metric', start: '2020-01-01T12:00:00Z',
    metric: { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'sum', math_property: 'amount' } },
    journeys: (f) => buyers(f, '2020-01-02T12:00:00Z', '2020-01-02T12:01:00Z', { control: 6, test: 8 }, (_i, v) => ({ amount: v === 'control' ? 10 : 15 })),
    expect: { control: { n: 10, sum: 60 }, test: { n: 10, sum: 120 } },
  },
  {
    // Supersedes test_conversion_window_extends_to_last_exposure of earlier versions: the window now runs from the first exposure.
    source: MEAN_NOW, test: 'test_conversion_window_anchored_on_first_exposure', start: '2020-01-01T00:00:00Z', end: '2020-01-10T00:00:00Z',
    metric: mean(sumOf(), { conversion_window: 1, conversion_window_unit: 'day' }),
    journeys: (f) => ({ user_control_window: [exposure(f, 'control', '2020-01-02T00:00:00Z'), exposure(f, 'control', '2020-01-05T00:00:00Z'),
      ['purchase', '2020-01-02T12:00:00Z', { [`$feature/${f}`]: 'control', amount: 25 }], ['purchase', '2020-01-05T12:00:00Z', { [`$feature/${f}`]: 'control', amount: 100 }]] }),
    expect: { control: { n: 1, sum: 25 } },
  },
  {
    // quantileExact bounds over all 20 users: sorted[2] = 102, sorted[18] = 110.
    source: MEAN_NOW, test: 'test_outlier_handling_for_sum_metric', start: '2024-01-01T12:00:00Z',
    metric: mean(sumOf(), { lower_bound_percentile: 0.1, upper_bound_percentile: 0.9 }),
    journeys: (f) => perUser(f, '2024-01-02T12:00:00Z', '2024-01-02T12:01:00Z', Object.fromEntries([
      ...[1, 102, 103, 104, 105, 106, 107, 108, 109, 1110].map((a, i) => [`control_${i + 1}`, ['control', [a]]]),
      ...[101, 102, 103, 104, 105, 106, 107, 108, 109, 110].map((a, i) => [`test_${i + 1}`, ['test', [a]]]),
    ]) as Record<string, [string, number[]]>),
    expect: { control: { n: 10, sum: 1056 }, test: { n: 10, sum: 1056 } },
  },
  {
    // Upstream stamps purchase i at 12:01:{i:02d}; here purchase i is i seconds after 12:01:00 (a user has up to 100).
    source: MEAN_NOW, test: 'test_outlier_handling_for_count_metric', start: '2024-01-01T12:00:00Z',
    metric: mean({ kind: 'EventsNode', event: 'purchase', math: 'total' }, { lower_bound_percentile: 0.1, upper_bound_percentile: 0.9 }),
    journeys: (f) => counts(f, '2024-01-02T12:00:00Z', '2024-01-02T12:01:00Z', COUNT_USERS),
    expect: { control: { n: 10, sum: 31 }, test: { n: 10, sum: 39 } },
  },
  {
    source: MEAN_NOW, test: 'test_hogql_count_metric_with_winsorization', start: '2024-01-01T12:00:00Z',
    metric: mean({ kind: 'EventsNode', event: 'purchase', math: 'hogql', math_hogql: 'count(properties.category)' }, { lower_bound_percentile: 0.1, upper_bound_percentile: 0.9 }),
    journeys: (f) => counts(f, '2024-01-02T12:00:00Z', '2024-01-02T12:01:00Z', COUNT_USERS, (i) => ({ category: `cat_${i}` })),
    expect: { control: { n: 10 }, test: { n: 10 } },
  },
  {
    source: MEAN_NOW, test: 'test_only_count_matured_users', start: '2020-01-01T00:00:00Z', end: '2020-01-15T00:00:00Z', frozen: '2020-01-15T12:00:00Z',
    extra: { only_count_matured_users: true }, metric: mean(sumOf(), { conversion_window: 7, conversion_window_unit: 'day' }), journeys: maturedJourneys,
    expect: { control: { n: 1, sum: 50 }, test: { n: 1, sum: 75 } },
  },
  ...['2020-01-04T00:00:00Z', '2020-01-07T00:00:00Z'].map((frozen): MeanVector => ({
    source: MEAN_NOW, test: `test_matured_user_value_stable_across_re_exposure, run at ${frozen}`, start: '2020-01-01T00:00:00Z', end: '2020-01-15T00:00:00Z', frozen,
    extra: { only_count_matured_users: true }, metric: mean(sumOf(), { conversion_window: 1, conversion_window_unit: 'day' }), journeys: reExposed,
    expect: { control: { n: 1, sum: 25 } },
  })),
  {
    source: MEAN_NOW, test: 'test_threshold_sum_metric_counts_users_crossing', start: '2020-01-01T12:00:00Z', metric: mean(sumOf(), { threshold: 100 }),
    journeys: (f) => sameTime(f, '2020-01-02T12:00:00Z', '2020-01-02T12:01:00Z', { control: [...Array(4).fill([60, 60]), ...Array(6).fill([50])], test: [...Array(7).fill([60, 60]), ...Array(3).fill([50])] }),
    expect: { control: { n: 10, sum: 4 }, test: { n: 10, sum: 7 } },
  },
  {
    source: MEAN_NOW, test: 'test_threshold_is_inclusive_and_zero_for_users_without_events', start: '2020-01-01T12:00:00Z', metric: mean(sumOf(), { threshold: 100 }),
    journeys: (f) => sameTime(f, '2020-01-02T12:00:00Z', '2020-01-02T12:01:00Z', { control: [[100], []], test: [[99], [101]] }),
    expect: { control: { n: 2, sum: 1 }, test: { n: 2, sum: 1 } },
  },
  {
    source: MEAN_NOW, test: 'test_threshold_count_metric_counts_users_with_enough_events', start: '2020-01-01T12:00:00Z',
    metric: mean({ kind: 'EventsNode', event: 'purchase', math: 'total' }, { threshold: 3 }),
    journeys: (f) => sameTime(f, '2020-01-02T12:00:00Z', '2020-01-02T12:01:00Z', { control: [[1, 1, 1], [1, 1]], test: [[1, 1, 1, 1, 1], [1, 1, 1, 1, 1]] }),
    expect: { control: { sum: 1 }, test: { sum: 2 } },
  },
  {
    source: MEAN, test: 'test_outlier_handling_with_ignore_zeros', start: '2020-01-01T12:00:00Z',
    metric: { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'sum', math_property: 'amount' }, upper_bound_percentile: 0.9, ignore_zeros: true },
    journeys: (f) => buyers(f, '2020-01-02T12:00:00Z', '2020-01-02T12:01:00Z', { control: 10, test: 10 },
      (i, v) => ({ amount: i < 5 ? 0 : i < 8 ? (v === 'control' ? 100 : 150) : (v === 'control' ? 1000 : 2000) })),
    expect: { control: { n: 10, sum: 2300 }, test: { n: 10, sum: 4450 } },
  },
  ...(['max', 'min', 'avg'] as const).map((math): MeanVector => ({
    source: MEAN, test: `test_property_${math}_metric`, start: '2024-01-01T12:00:00Z',
    metric: { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math, math_property: 'amount' } },
    journeys: (f) => perUser(f, '2024-01-02T12:00:00Z', '2024-01-02T12:01:00Z', {
      control_1: ['control', [10, 20, 30]], control_2: ['control', [5, 15, 25]], test_1: ['test', [50, 60, 70]], test_2: ['test', [40, 80, 90]],
    }),
    expect: { max: { control: { n: 2, sum: 55 }, test: { n: 2, sum: 160 } }, min: { control: { n: 2, sum: 15 }, test: { n: 2, sum: 90 } },
      avg: { control: { n: 2, sum: 35 }, test: { n: 2, sum: 130 } } }[math],
  })),
  {
    source: MEAN, test: 'test_unique_sessions_math_type', start: '2024-01-01T12:00:00Z',
    metric: { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: '$pageview', math: 'unique_session' } },
    journeys: (f) => {
      // _create_events_for_user(variant, count, session): an exposure at 12:00:00 and `count` pageviews from 12:01:00, all in `session`.
      const block = (v: string, count: number, session: string): [string, string, Record<string, unknown>][] => [
        ['$feature_flag_called', '2024-01-02T12:00:00Z', { $feature_flag: f, $feature_flag_response: v, [`$feature/${f}`]: v, $session_id: session }],
        ...Array.from({ length: count }, (_, i): [string, string, Record<string, unknown>] => ['$pageview', `2024-01-02T12:01:0${i}Z`, { [`$feature/${f}`]: v, $session_id: session }]),
      ];
      return {
        control_1: [...block('control', 3, 'c_1_a'), ...block('control', 3, 'c_1_b')], control_2: block('control', 3, 'c_2_a'), control_3: block('control', 0, 'c_3_a'),
        test_1: [...block('test', 3, 't_1_a'), ...block('test', 3, 't_1_b')], test_2: [...block('test', 3, 't_2_a'), ...block('test', 3, 't_2_b'), ...block('test', 3, 't_2_c')],
      };
    },
    expect: { control: { n: 3, sum: 3 }, test: { n: 2, sum: 5 } },
  },
  {
    source: HOGQL, test: 'test_query_runner_with_hogql_aggregation_expressions', start: '2020-01-01T12:00:00Z',
    metric: { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'hogql', math_hogql: 'sum(toFloat(properties.revenue) - toFloat(properties.cost))' } },
    journeys: (f) => buyers(f, '2020-01-02T12:00:00Z', '2020-01-02T12:01:00Z', { control: 6, test: 8 },
      (i, v) => (v === 'control' ? { revenue: 100 + i * 10, cost: 20 + i * 5 } : { revenue: 120 + i * 15, cost: 30 + i * 3 })),
    expect: { control: { n: 10, sum: 555 }, test: { n: 10, sum: 1056 } },
  },
  {
    source: HOGQL, test: 'test_query_runner_with_hogql_aggregation_end_to_end', start: '2020-01-01T12:00:00Z',
    metric: { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'hogql', math_hogql: 'avg(properties.amount)' } },
    journeys: (f) => perUser(f, '2020-01-02T12:00:00Z', '2020-01-02T12:01:00Z', {
      user_control_0: ['control', [10]], user_control_1: ['control', [20]], user_control_2: ['control', [30]],
      user_test_0: ['test', [15]], user_test_1: ['test', [25]], user_test_2: ['test', [35]], user_test_3: ['test', [45]],
    }),
    expect: { control: { n: 3, sum: 60 }, test: { n: 4, sum: 120 } },
  },
  {
    source: HOGQL, test: 'test_query_runner_with_hogql_fallback_to_sum', start: '2020-01-01T12:00:00Z',
    metric: { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'hogql', math_hogql: 'properties.price' } },
    journeys: (f) => perUser(f, '2020-01-02T12:00:00Z', '2020-01-02T12:01:00Z', {
      user_control_0: ['control', [50]], user_control_1: ['control', [75]], user_test_0: ['test', [60]], user_test_1: ['test', [80]], user_test_2: ['test', [100]],
    }, 'purchase', 'price'),
    expect: { control: { n: 2, sum: 125 }, test: { n: 3, sum: 240 } },
  },
];

for (const [i, v] of meanVectors.entries()) {
  test(`upstream ${v.test} (${v.source.file} @ ${'commit' in v.source ? v.source.commit : `index file ${v.source.index_file_id}`})`, async () => {
    const flag = `up-mean-${i}`;
    const offset = v.frozen ? shiftTo(v.frozen) : 0;
    const x = await experiment(flag, shifted(v.start, offset), shifted(v.end ?? fourteenDays(v.start), offset), { stats_config: { method: 'frequentist' }, ...v.extra });
    await ingest(flag, v.journeys(flag), offset);
    const r = await query({ kind: 'ExperimentQuery', experiment_id: x.id, metric: v.metric });
    for (const [key, e] of Object.entries(v.expect)) {
      const a = arm(r, key);
      if (e.n !== undefined) assert.equal(a.number_of_samples, e.n, `${key} number_of_samples`);
      if (e.sum !== undefined) assert.ok(Math.abs(a.sum - e.sum) < 1e-9, `${key} sum ${a.sum} vs ${e.sum}`);
    }
  });
}

/** The exposures tests' experiment: 2024-01-01 to 2024-01-07 (setUp), UTC. */
async function exposuresOf(flag: string, journeys: Journey, criteria: Record<string, unknown> | null = null): Promise<any> {
  const x = await experiment(flag, '2024-01-01T00:00:00Z', '2024-01-07T00:00:00Z', criteria ? { exposure_criteria: criteria } : {});
  await ingest(flag, journeys);
  return query({ kind: 'ExperimentExposureQuery', experiment_id: x.id, experiment_name: flag, feature_flag: x.feature_flag,
    start_date: '2024-01-01T00:00:00+00:00', end_date: '2024-01-07T00:00:00+00:00', exposure_criteria: criteria });
}

const series = (r: any, variant: string) => r.timeseries.find((s: any) => s.variant === variant);
/** Users `<variant>_<i>` exposed once, `days[v]` listing each user's day. */
const onDays = (flag: string, days: Record<string, string[]>): Journey =>
  Object.fromEntries(Object.entries(days).flatMap(([v, list]) => list.map((d, i) => [`user_${v}_${i + 1}`, [exposure(flag, v, d)]])));

test(`upstream test_exposure_query_returns_correct_timeseries (${EXPOSURES.file} @ ${EXPOSURES.commit})`, async () => {
  const f = 'up-exp-timeseries';
  const r = await exposuresOf(f, onDays(f, { control: ['2024-01-02', '2024-01-02', '2024-01-03', '2024-01-03'], test: ['2024-01-02', '2024-01-02', '2024-01-02', '2024-01-03', '2024-01-03'] }));
  assert.equal(r.timeseries.length, 2);
  assert.deepEqual(series(r, 'control').exposure_counts, [0, 2, 4, 4, 4, 4, 4]);
  assert.deepEqual(series(r, 'test').exposure_counts, [0, 3, 5, 5, 5, 5, 5]);
  assert.deepEqual(series(r, 'control').days, ['2024-01-01', '2024-01-02', '2024-01-03', '2024-01-04', '2024-01-05', '2024-01-06', '2024-01-07']);
  assert.deepEqual(r.total_exposures, { control: 4, test: 5 });
  assert.equal(r.sample_ratio_mismatch, null, 'under 100 exposures');
});

test(`upstream test_exposure_query_counts_users_only_on_first_exposure (${EXPOSURES.file} @ ${EXPOSURES.commit})`, async () => {
  const f = 'up-exp-first';
  const r = await exposuresOf(f, {
    user_control_1: [exposure(f, 'control', '2024-01-02'), exposure(f, 'control', '2024-01-03')],
    user_test_1: [exposure(f, 'test', '2024-01-02'), exposure(f, 'test', '2024-01-03'), exposure(f, 'test', '2024-01-04')],
    user_test_2: [exposure(f, 'test', '2024-01-03')],
  });
  assert.deepEqual(series(r, 'control').exposure_counts, [0, 1, 1, 1, 1, 1, 1]);
  assert.deepEqual(series(r, 'test').exposure_counts, [0, 1, 2, 2, 2, 2, 2]);
  assert.deepEqual(r.total_exposures, { control: 1, test: 2 });
});

test(`upstream test_exposure_query_with_multiple_variant_exposures (${EXPOSURES.file} @ ${EXPOSURES.commit})`, async () => {
  const f = 'up-exp-multiple';
  const r = await exposuresOf(f, {
    user_control_1: [exposure(f, 'control', '2024-01-02')], user_control_2: [exposure(f, 'control', '2024-01-02')], user_test_1: [exposure(f, 'test', '2024-01-02')],
    user_test_2: [exposure(f, 'test', '2024-01-02'), exposure(f, 'control', '2024-01-02')],
  });
  assert.deepEqual(r.timeseries.map((s: any) => s.variant), ['control', 'test', '$multiple']);
  assert.deepEqual(r.total_exposures, { control: 2, test: 1, $multiple: 1 });
});

test(`upstream test_exposure_query_multiple_variant_handling_first_seen (${EXPOSURES.file} @ ${EXPOSURES.commit})`, async () => {
  const f = 'up-exp-first-seen';
  const r = await exposuresOf(f, {
    user_control_only: [exposure(f, 'control', '2024-01-02')], user_test_only: [exposure(f, 'test', '2024-01-02')],
    user_multiple_control_first: [exposure(f, 'control', '2024-01-02'), exposure(f, 'test', '2024-01-03')],
    user_multiple_test_first: [exposure(f, 'test', '2024-01-02'), exposure(f, 'control', '2024-01-04')],
  }, { multiple_variant_handling: 'first_seen' });
  assert.deepEqual(r.total_exposures, { control: 2, test: 2 });
});

test(`upstream test_exposure_query_with_custom_exposure, pageview_direct (${EXPOSURES.file} @ ${EXPOSURES.commit})`, async () => {
  const f = 'up-exp-custom';
  const pv = (v: string, d: string): [string, string, Record<string, unknown>] => ['$pageview', d, { [`$feature/${f}`]: v }];
  const journeys: Journey = {};
  for (const [v, days] of Object.entries({ control: ['2024-01-02', '2024-01-02', '2024-01-03', '2024-01-03'], test: ['2024-01-02', '2024-01-02', '2024-01-02', '2024-01-03', '2024-01-03'] })) {
    days.forEach((d, i) => { journeys[`user_${v}_${i + 1}`] = [pv(v, d)]; });
  }
  const r = await exposuresOf(f, journeys, { exposure_config: { kind: 'ExperimentEventExposureConfig', event: '$pageview', properties: [{ key: 'plan', operator: 'is_not', value: 'free', type: 'event' }] } });
  assert.equal(r.timeseries.length, 2);
  assert.deepEqual(r.total_exposures, { control: 4, test: 5 });
});

test(`upstream test_srm_calculation_with_balanced_distribution, direct (${EXPOSURES.file} @ ${EXPOSURES.commit})`, async () => {
  const f = 'up-exp-srm';
  const r = await exposuresOf(f, onDays(f, { control: Array(50).fill('2024-01-02'), test: Array(50).fill('2024-01-02') }));
  assert.equal(r.sample_ratio_mismatch.p_value, 1);
  assert.deepEqual(r.sample_ratio_mismatch.expected, { control: 50, test: 50 });
});

test(`upstream test_srm_calculation_detects_significant_mismatch, direct (${EXPOSURES.file} @ ${EXPOSURES.commit})`, async () => {
  const f = 'up-exp-srm-mismatch';
  const r = await exposuresOf(f, onDays(f, { control: Array(90).fill('2024-01-02'), test: Array(10).fill('2024-01-02') }));
  assert.ok(r.sample_ratio_mismatch.p_value < 0.001, String(r.sample_ratio_mismatch.p_value));
  assert.deepEqual(r.sample_ratio_mismatch.expected, { control: 50, test: 50 });
});

test(`upstream test_exposure_query_without_feature_flag_property, direct (${EXPOSURES.file} @ ${EXPOSURES.commit})`, async () => {
  const f = 'up-exp-no-prop';
  const journeys = onDays(f, { control: ['2024-01-02', '2024-01-02', '2024-01-03', '2024-01-03'], test: ['2024-01-02', '2024-01-02', '2024-01-02', '2024-01-03', '2024-01-03'] });
  // Some SDKs send no `$feature/<flag>` value: the exposure still counts, by `$feature_flag_response`.
  journeys.user_control_3![0]![2][`$feature/${f}`] = '';
  const r = await exposuresOf(f, journeys);
  assert.equal(r.timeseries.length, 2);
  assert.deepEqual(r.total_exposures, { control: 4, test: 5 });
});

test(`upstream test_exposure_query_using_group_aggregation, direct (${EXPOSURES.file} @ ${EXPOSURES.commit})`, async () => {
  // utils.py create_standard_group_test_events (same commit): 22 users per variant exposed hourly from the frozen now
  // (2024-01-07T12:00), control users in org:0–1, test users in org:2–4; the experiment runs 2024-01-01 to 2024-01-28.
  const f = 'up-exp-groups';
  const journeys: Journey = {};
  for (const v of ['control', 'test']) {
    for (let i = 0; i < 22; i++) {
      const org = `org:${v === 'test' ? 2 + (i % 3) : i % 2}`;
      journeys[`user_${v}_${i}`] = [exposure(f, v, new Date(Date.parse('2024-01-07T12:00:00Z') + i * 3_600_000).toISOString(), { $group_0: org, $groups: { organization: org } })];
    }
  }
  const x = await experiment(f, '2024-01-01T00:00:00Z', '2024-01-28T00:00:00Z', { parameters: { aggregation_group_type_index: 0 } });
  await ingest(f, journeys);
  const r = await query({ kind: 'ExperimentExposureQuery', experiment_id: x.id, experiment_name: f, feature_flag: x.feature_flag,
    start_date: '2024-01-01T00:00:00+00:00', end_date: '2024-01-28T00:00:00+00:00' });
  assert.deepEqual(r.total_exposures, { control: 2, test: 3 });
});
