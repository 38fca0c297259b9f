/**
 * PostHog's funnel-metric ExperimentQueryRunner tests replayed end to end (upstream-support.ts):
 * each vector's events go through ingestion, the experiment gets the test's dates and flag, and
 * `POST /query/` must answer the test's successes (`sum`) and failures (`number_of_samples - sum`)
 * per variant. The tests not replayed are listed with reasons in docs/api.md.
 */
import { test, before, after } from 'node:test';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { type Journey, type Step, cite, experiment, expectArms, exposure, fourteenDays, ingest, query, shifted, shiftTo } from './upstream-support.js';

let t: TestControlPlane;
before(async () => { t = await startTestControlPlane(); });
after(async () => { await t?.close(); });

const FUNNEL = { file: 'products/experiments/backend/hogql_queries/test/experiment_query_runner/test_funnel_metric.py', commit: '19194eff159b62e33eb703f45b34ec7cf625a1ec' };

type Steps = (f: string, v: string, i: number) => Step[];
/** `counts[v]` users per variant `user_<v>_<i>`, each exposed at `at` then doing `steps(flag, v, i)`. */
const cohort = (f: string, at: string, counts: Record<string, number>, steps: Steps): Journey => Object.fromEntries(
  Object.entries(counts).flatMap(([v, n]) => Array.from({ length: n }, (_, i) => [`user_${v}_${i}`, [exposure(f, v, at), ...steps(f, v, i)]])));
const ev = (f: string, v: string, event: string, ts: string, props: Record<string, unknown> = {}): Step => [event, ts, { [`$feature/${f}`]: v, ...props }];
const series = (...events: (string | Record<string, unknown>)[]) => events.map((e) => (typeof e === 'string' ? { kind: 'EventsNode', event: e } : { kind: 'EventsNode', ...e }));
const funnel = (steps: Record<string, unknown>[], extra: Record<string, unknown> = {}) => ({ kind: 'ExperimentMetric', metric_type: 'funnel', series: steps, ...extra });
/** Expected successes and failures per variant. */
const sf = (control: [number, number], testArm: [number, number], extra: Record<string, Record<string, number[]>> = {}) => ({
  control: { sum: control[0], number_of_samples: control[0] + control[1], ...extra.control },
  test: { sum: testArm[0], number_of_samples: testArm[0] + testArm[1], ...extra.test },
});
/** Successes: the first `ok[v]` users of each variant. */
const firstOk = (ok: Record<string, number>, yes: Steps, no: Steps = () => []): Steps => (f, v, i) => (i < ok[v]! ? yes(f, v, i) : no(f, v, i));

interface Vector {
  test: string; start: string; end?: string; frozen?: string; extra?: Record<string, unknown>;
  journeys: (f: string) => Journey; metrics: { metric: Record<string, unknown>; expect: Record<string, Record<string, number | number[]>> }[];
}

const ON_2ND = '2024-01-02T12:00:00Z';
const OK_8_6 = { control: 8, test: 6 };
const N13 = { control: 13, test: 13 };
const pvThenPurchase: Steps = (f, v) => [ev(f, v, '$pageview', '2024-01-02T12:01:00Z'), ev(f, v, 'purchase', '2024-01-02T12:02:00Z')];

const vectors: Vector[] = [
  {
    test: 'test_query_runner_funnel_metric', start: '2020-01-01T12:00:00Z',
    journeys: (f) => ({
      ...cohort(f, '2020-01-02T12:00:00Z', { control: 15, test: 15 }, firstOk({ control: 8, test: 10 }, (f2, v, i) => [ev(f2, v, 'purchase', '2020-01-02T12:01:00Z', { amount: i < 2 ? 10 : '' })])),
      // Extra purchases the next day change nothing.
      user_control_1: [exposure(f, 'control', '2020-01-02T12:00:00Z'), ev(f, 'control', 'purchase', '2020-01-02T12:01:00Z', { amount: 10 }), ev(f, 'control', 'purchase', '2020-01-03T12:01:00Z')],
      user_test_1: [exposure(f, 'test', '2020-01-02T12:00:00Z'), ev(f, 'test', 'purchase', '2020-01-02T12:01:00Z', { amount: 10 }), ev(f, 'test', 'purchase', '2020-01-03T12:01:00Z')],
    }),
    metrics: [{ metric: funnel(series('purchase')), expect: sf([8, 7], [10, 5], { control: { step_counts: [8] } }) }],
  },
  {
    test: 'test_query_runner_group_aggregation_funnel_metric', start: '2020-01-01T12:00:00Z', extra: { parameters: { aggregation_group_type_index: 0 } },
    journeys: (f) => {
      // 5 users per group; control groups 0–17 (the first 10 purchase), test groups 18–35 (the first 12).
      const out: Journey = {};
      let g = 0;
      for (const [v, buying, groups] of [['control', 10, 18], ['test', 12, 18]] as const) {
        for (let k = 0; k < groups; k++, g++) {
          const grp = { $group_0: `org:${g}`, $groups: { organization: `org:${g}` } };
          for (let u = 0; u < 5; u++) {
            out[`user_${v}_${g}_${u}`] = [exposure(f, v, '2020-01-02T12:00:00Z', grp), ...(k < buying ? [ev(f, v, 'purchase', '2020-01-02T12:01:00Z', grp)] : [])];
          }
        }
      }
      return out;
    },
    metrics: [{ metric: funnel(series('purchase')), expect: sf([10, 8], [12, 6]) }],
  },
  {
    test: 'test_funnel_metric_with_conversion_window', start: '2024-01-01T12:00:00Z',
    journeys: (f) => cohort(f, ON_2ND, N13, (f2, v, i) => [ev(f2, v, '$pageview', '2024-01-02T13:00:00Z'),
      ...(i < OK_8_6[v as 'control']! ? [ev(f2, v, 'purchase', v === 'control' ? '2024-01-08T11:00:00Z' : '2024-01-08T12:30:00Z')] : [])]),
    metrics: [{ metric: funnel(series('$pageview', 'purchase')), expect: sf([8, 5], [6, 7]) }],
  },
  {
    test: 'test_funnel_metric_with_custom_conversion_window', start: '2024-01-01T12:00:00Z',
    journeys: (f) => cohort(f, ON_2ND, N13, (f2, v, i) => [ev(f2, v, '$pageview', '2024-01-02T13:00:00Z'),
      ev(f2, v, 'purchase', i < OK_8_6[v as 'control']! ? (v === 'control' ? '2024-01-03T10:00:00Z' : '2024-01-03T10:30:00Z') : (v === 'control' ? '2024-01-03T14:00:00Z' : '2024-01-03T15:00:00Z'))]),
    metrics: [{ metric: funnel(series('$pageview', 'purchase'), { conversion_window: 24, conversion_window_unit: 'hour' }), expect: sf([8, 5], [6, 7]) }],
  },
  {
    test: 'test_funnel_metric_with_many_steps', start: '2024-01-01T12:00:00Z',
    journeys: (f) => {
      const names = ['$pageview', 'add to cart', 'checkout started', 'checkout completed', 'survey submitted', 'referral'];
      return cohort(f, ON_2ND, N13, (f2, v, i) => names.slice(0, i < OK_8_6[v as 'control']! ? 6 : v === 'control' ? 3 : 2)
        .map((e, k) => ev(f2, v, e, `2024-01-02T12:0${k + 1}:00Z`)));
    },
    metrics: [{ metric: funnel(series('$pageview', 'add to cart', 'checkout started', 'checkout completed', 'survey submitted', 'referral')), expect: sf([8, 5], [6, 7]) }],
  },
  {
    test: 'test_funnel_metric_with_step_property_filter', start: '2024-01-01T12:00:00Z',
    journeys: (f) => cohort(f, ON_2ND, N13, (f2, v, i) => [ev(f2, v, '$pageview', '2024-01-02T12:01:00Z', { wizard_step: 'step_1' }),
      ...(i < OK_8_6[v as 'control']! ? [ev(f2, v, '$pageview', '2024-01-02T12:02:00Z', { wizard_step: 'step_2' })] : [])]),
    metrics: [{
      metric: funnel(['step_1', 'step_2'].map((s) => ({ kind: 'EventsNode', event: '$pageview', properties: [{ key: 'wizard_step', operator: 'exact', value: s, type: 'event' }] }))),
      expect: sf([8, 5], [6, 7]),
    }],
  },
  {
    test: 'test_funnel_metric_with_multiple_similar_steps', start: '2024-01-01T12:00:00Z',
    journeys: (f) => cohort(f, ON_2ND, N13, (f2, v, i) => [ev(f2, v, '$pageview', '2024-01-02T12:01:00Z'), ev(f2, v, 'purchase', '2024-01-02T12:02:00Z'),
      ...(i < OK_8_6[v as 'control']! ? [ev(f2, v, 'purchase', '2024-01-02T12:03:00Z')] : [])]),
    metrics: [{ metric: funnel(series('$pageview', 'purchase', 'purchase')), expect: sf([8, 5], [6, 7]) }],
  },
  {
    test: 'test_funnel_metric_with_unordered_steps', start: '2024-01-01T12:00:00Z',
    journeys: (f) => cohort(f, ON_2ND, N13, (f2, v, i) => [ev(f2, v, '$pageview', '2024-01-02T12:01:00Z'),
      ...(i < OK_8_6[v as 'control']! ? [ev(f2, v, 'purchase', '2024-01-02T12:02:00Z')] : [])]),
    metrics: [{ metric: funnel(series('$pageview', 'purchase'), { funnel_order_type: 'unordered' }), expect: sf([8, 5], [6, 7]) }],
  },
  {
    test: 'test_funnel_metric_ordered_vs_unordered_comparison', start: '2024-01-01T12:00:00Z',
    journeys: (f) => cohort(f, ON_2ND, N13, (f2, v, i) => {
      const [inOrder, reversed] = v === 'control' ? [6, 11] : [5, 9];
      if (i < inOrder) return pvThenPurchase(f2, v, i);
      if (i < reversed) return [ev(f2, v, 'purchase', '2024-01-02T12:01:00Z'), ev(f2, v, '$pageview', '2024-01-02T12:02:00Z')];
      return [ev(f2, v, '$pageview', '2024-01-02T12:01:00Z')];
    }),
    metrics: [
      { metric: funnel(series('$pageview', 'purchase'), { funnel_order_type: 'ordered' }), expect: sf([6, 7], [5, 8]) },
      { metric: funnel(series('$pageview', 'purchase'), { funnel_order_type: 'unordered' }), expect: sf([11, 2], [9, 4]) },
    ],
  },
  {
    test: 'test_funnel_metric_excludes_different_feature_flags', start: '2024-01-01T12:00:00Z',
    journeys: (f) => {
      const other = `${f}-other`;
      const out = cohort(f, ON_2ND, N13, firstOk(OK_8_6, pvThenPurchase, (f2, v) => [ev(f2, v, '$pageview', '2024-01-02T12:01:00Z')]));
      for (let i = 0; i < 10; i++) out[`user_other_${i}`] = [exposure(other, 'variant', ON_2ND), ev(other, 'variant', '$pageview', '2024-01-02T12:01:00Z'), ev(other, 'variant', 'purchase', '2024-01-02T12:02:00Z')];
      for (let i = 0; i < 5; i++) {
        out[`user_both_${i}`] = [exposure(other, 'variant', '2024-01-02T11:59:00Z'), exposure(f, 'control', ON_2ND), ev(f, 'control', '$pageview', '2024-01-02T12:01:00Z'),
          ...(i < 3 ? [ev(f, 'control', 'purchase', '2024-01-02T12:02:00Z')] : [])];
      }
      return out;
    },
    metrics: [{ metric: funnel(series('$pageview', 'purchase')), expect: sf([11, 7], [6, 7]) }],
  },
  {
    test: 'test_funnel_metric_excludes_events_after_experiment_end_date', start: '2024-01-02T00:00:00Z', end: '2024-01-10T00:00:00Z',
    journeys: (f) => cohort(f, '2024-01-03T12:00:00Z', N13, (f2, v, i) => [ev(f2, v, 'purchase', i < OK_8_6[v as 'control']! ? '2024-01-05T12:00:00Z' : '2024-01-15T12:00:00Z')]),
    metrics: [{ metric: funnel(series('purchase')), expect: sf([8, 5], [6, 7]) }],
  },
  {
    test: 'test_funnel_metric_events_after_exposure (ordered, unordered)', start: '2024-01-01T12:00:00Z',
    journeys: (f) => Object.fromEntries((['control', 'test'] as const).flatMap((v) => Array.from({ length: 13 }, (_, i): [string, Step[]] => {
      const [ok, before] = v === 'control' ? [8, 11] : [6, 10];
      const steps: Step[] = i < ok ? [exposure(f, v, ON_2ND), ...pvThenPurchase(f, v, i)]
        : i < before ? [ev(f, v, '$pageview', '2024-01-02T11:58:00Z'), ev(f, v, 'purchase', '2024-01-02T11:59:00Z'), exposure(f, v, ON_2ND)]
          : [exposure(f, v, ON_2ND), ev(f, v, '$pageview', '2024-01-02T12:01:00Z')];
      return [`user_${v}_${i}`, steps];
    }))),
    metrics: ['ordered', 'unordered'].map((o) => ({ metric: funnel(series('$pageview', 'purchase'), { funnel_order_type: o }), expect: sf([8, 5], [6, 7]) })),
  },
  {
    // PostHog freezes now at 2020-01-15T12:00; the vector is moved so that instant is the real now.
    test: 'test_only_count_matured_users', start: '2020-01-01T00:00:00Z', end: '2020-01-15T00:00:00Z', frozen: '2020-01-15T12:00:00Z', extra: { only_count_matured_users: true },
    journeys: (f) => {
      const user = (v: string, day: string): Step[] => [exposure(f, v, `2020-01-${day}T12:00:00Z`), ev(f, v, '$pageview', `2020-01-${day === '02' ? '03T12' : '10T13'}:00:00Z`),
        ev(f, v, 'purchase', `2020-01-${day === '02' ? '03T13' : '10T14'}:00:00Z`)];
      return { user_mature_control: user('control', '02'), user_immature_control: user('control', '10'), user_mature_test: user('test', '02') };
    },
    metrics: [{ metric: funnel(series('$pageview', 'purchase'), { conversion_window: 7, conversion_window_unit: 'day' }), expect: sf([1, 0], [1, 0]) }],
  },
  {
    test: 'test_maturity_anchored_on_first_exposure', start: '2020-01-01T00:00:00Z', end: '2020-01-15T00:00:00Z', frozen: '2020-01-15T12:00:00Z', extra: { only_count_matured_users: true },
    journeys: (f) => Object.fromEntries(['control', 'test'].map((v) => [`user_reexposed_${v}`, [exposure(f, v, '2020-01-02T12:00:00Z'),
      ev(f, v, '$pageview', '2020-01-03T12:00:00Z'), ev(f, v, 'purchase', '2020-01-03T13:00:00Z'), exposure(f, v, '2020-01-12T12:00:00Z')]])),
    metrics: [{ metric: funnel(series('$pageview', 'purchase'), { conversion_window: 7, conversion_window_unit: 'day' }), expect: sf([1, 0], [1, 0]) }],
  },
];

for (const [n, v] of vectors.entries()) {
  test(`upstream ${v.test} (${cite(FUNNEL)})`, async () => {
    const f = `up-funnel-${n}`;
    const offset = v.frozen ? shiftTo(v.frozen) : 0;
    const x = await experiment(t, f, shifted(v.start, offset), shifted(v.end ?? fourteenDays(v.start), offset), { stats_config: { method: 'frequentist' }, ...v.extra });
    await ingest(t, f, v.journeys(f), offset);
    for (const m of v.metrics) expectArms(await query(t, { kind: 'ExperimentQuery', experiment_id: x.id, metric: m.metric }), m.expect);
  });
}
