/**
 * The shared statistics vectors through the query endpoint: for each
 * PostHog vector the endpoint can express (mean, proportion, ratio; Welch, Bayesian, sequential),
 * events are generated whose per-user values have exactly the vector's sufficient statistics —
 * n users per arm, Σx and Σx² (most users at 0, which takes only their exposure; a few share the
 * sum and two of them carry the remainder of the variance) — captured through the real
 * ingestion; the experiment's stats_config is the vector's; the endpoint's interval, p-value or
 * chance to win must match the vector within its tolerance; the CUPED vector gets exact
 * (pre, post) pairs per user. Vectors with the same inputs (ph-freq-mean-rel, ph-bayes-mean-rel)
 * share one flag and one ingestion, each with an experiment of its own on that flag. (GrowthBook's
 * conventions, SRM and multiple comparisons are not query outputs; they are checked through
 * `switchyard stats`.)
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';

interface Vector { id: string; engine: string; category: string; config: Record<string, any>; inputs: Record<string, any>; expected: Record<string, any>; tolerance: { abs: number } }
const vectors = (JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'test', 'stats', 'vectors', 'experiment-stats-sample.json'), 'utf8')) as { vectors: Vector[] }).vectors;

let t: TestControlPlane;
before(async () => { t = await startTestControlPlane(); });
after(async () => { await t?.close(); });

/** Every experiment starts 5 hours ago; exposures come an hour later (shared so that vectors may share events). */
const START = Date.now() - 5 * 3600_000;
const AT = START + 3600_000;

/**
 * n values with exactly Σ = sum and Σ² = sumSquares, as few of them non-zero as the moments allow
 * (a user whose value is 0 needs no metric event): the first k at sum / k but two at that ± a
 * spread carrying the rest of Σ², the others 0, k being the fewest with k · (sum / k)² ≤ sumSquares.
 */
function valuesFor(n: number, sum: number, sumSquares: number): number[] {
  const k = Math.min(n, Math.max(3, Math.ceil((sum * sum) / sumSquares)));
  const mean = sum / k;
  const spread = Math.sqrt(Math.max(0, (sumSquares - k * mean * mean) / 2));
  return Array.from({ length: n }, (_, i) => (i >= k ? 0 : i === k - 2 ? mean + spread : i === k - 1 ? mean - spread : mean));
}

type Arm = 'control' | 'test';
interface Ev { uuid: string; project_id: number; event: string; distinct_id: string; properties: Record<string, unknown>; timestamp: string }

/** Exposure plus per-user events from `perUser(i)` for one arm. */
function armEvents(key: string, arm: Arm, n: number, at: number, perUser: (i: number, d: string) => Ev[]): Ev[] {
  const out: Ev[] = [];
  for (let i = 0; i < n; i++) {
    const d = `${key}-${arm}-${i}`;
    out.push({ uuid: crypto.randomUUID(), project_id: t.projectId, event: '$feature_flag_called', distinct_id: d,
      properties: { $feature_flag: key, $feature_flag_response: arm }, timestamp: new Date(at).toISOString() });
    out.push(...perUser(i, d));
  }
  return out;
}

async function ingest(events: Ev[]): Promise<void> {
  for (let i = 0; i < events.length; i += 2000) await ingestEvents(t.db.sql, events.slice(i, i + 2000));
}

/** Ingestions by flag key: the events of a flag are generated and ingested once, whichever vector's test asks first. */
const ingested = new Map<string, Promise<void>>();
function ingestOnce(key: string, events: () => Ev[]): Promise<void> {
  if (!ingested.has(key)) ingested.set(key, ingest(events()));
  return ingested.get(key)!;
}

/** The experiment's stats_config for a vector (PostHog reads difference_type by enum name). */
function statsConfig(v: Vector): Record<string, unknown> {
  const method = v.category === 'bayesian' ? 'bayesian' : 'frequentist';
  const section: Record<string, unknown> = { difference_type: String(v.config.difference_type ?? 'relative').toUpperCase() };
  if (v.config.alpha !== undefined && method === 'frequentist') section.alpha = v.config.alpha;
  if (v.config.ci_level !== undefined) section.ci_level = v.config.ci_level;
  if (v.category === 'sequential') {
    section.sequential_testing_enabled = true;
    section.sequential_tuning_parameter = v.config.sequential_tuning_parameter;
  }
  return { method, [method]: section };
}

const supported = vectors.filter((v) => v.engine === 'posthog' && ['frequentist', 'bayesian', 'sequential'].includes(v.category));

for (const v of supported) {
  test(`vector ${v.id} through POST /query/ from generated events`, async () => {
    // The flag (and its events) of the first vector with the same inputs.
    const key = `vec-${supported.find((o) => JSON.stringify(o.inputs) === JSON.stringify(v.inputs))!.id}`;
    const at = AT;
    const x = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, { body: { name: v.id, feature_flag_key: key, start_date: new Date(START).toISOString(), stats_config: statsConfig(v) } });
    assert.equal(x.status, 201, x.text);
    const events: Ev[] = [];
    const arms: [Arm, any][] = [['control', v.inputs.control], ['test', v.inputs.treatment]];
    let metric: Record<string, unknown>;
    const purchase = (d: string, props: Record<string, unknown>): Ev => ({ uuid: crypto.randomUUID(), project_id: t.projectId, event: 'purchase', distinct_id: d, properties: props, timestamp: new Date(at + 60_000).toISOString() });
    if (v.inputs.control.type === 'mean') {
      metric = { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'sum', math_property: 'amount' } };
      for (const [arm, s] of arms) {
        const values = valuesFor(s.n, s.sum, s.sum_squares);
        events.push(...armEvents(key, arm, s.n, at, (i, d) => (values[i] === 0 ? [] : [purchase(d, { amount: values[i] })])));
      }
    } else if (v.inputs.control.type === 'proportion') {
      metric = { kind: 'ExperimentMetric', metric_type: 'funnel', series: [{ kind: 'EventsNode', event: 'purchase' }] };
      for (const [arm, s] of arms) events.push(...armEvents(key, arm, s.n, at, (i, d) => (i < s.sum ? [purchase(d, {})] : [])));
    } else {
      // Ratio: the denominator is 0/1 per user (a purchase or none), the numerator that purchase's amount.
      metric = { kind: 'ExperimentMetric', metric_type: 'ratio', numerator: { kind: 'EventsNode', event: 'purchase', math: 'sum', math_property: 'amount' },
        denominator: { kind: 'EventsNode', event: 'purchase' } };
      for (const [arm, s] of arms) {
        assert.equal(s.denominator.sum, s.denominator.sum_squares, 'a 0/1 denominator');
        assert.equal(s.sum_of_products, s.numerator.sum, 'numerators only where the denominator is 1');
        const buyers = s.denominator.sum as number;
        const values = valuesFor(buyers, s.numerator.sum, s.numerator.sum_squares);
        events.push(...armEvents(key, arm, s.n, at, (i, d) => (i < buyers ? [purchase(d, { amount: values[i] })] : [])));
      }
    }
    await ingestOnce(key, () => events);
    const r = await t.request('POST', `/api/projects/${t.projectId}/query/`, { body: { query: { kind: 'ExperimentQuery', experiment_id: x.body.id, metric } } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.baseline.number_of_samples, v.inputs.control.n);
    const result = r.body.variant_results[0];
    assert.equal(result.number_of_samples, v.inputs.treatment.n);
    const tol = v.tolerance.abs;
    const close = (a: number, e: number, what: string) => assert.ok(Math.abs(a - e) <= tol, `${v.id} ${what}: ${a} vs ${e} (±${tol})`);
    let checked = 0;
    for (const field of ['confidence_interval', 'credible_interval'] as const) {
      if (!v.expected[field]) continue;
      close(result[field][0], v.expected[field][0], `${field}[0]`);
      close(result[field][1], v.expected[field][1], `${field}[1]`);
      checked++;
    }
    for (const field of ['p_value', 'chance_to_win'] as const) {
      if (v.expected[field] === undefined) continue;
      close(result[field], v.expected[field], field);
      checked++;
    }
    assert.ok(checked >= 2, `${v.id}: at least the interval and one probability were compared`);
  });
}

/**
 * n pairs (x, y) with exactly Σx, Σx², Σy, Σy² and Σxy, as few of them non-zero as the moments
 * allow (a user at (0, 0) needs no purchase event): the first k at the means over k but three,
 * whose deviations lie in the plane orthogonal to (1, 1, 1): x along u, y along u and v (u ⟂ v,
 * unit); the others (0, 0). k is the fewest whose scatter about those means is a covariance
 * (cxx ≥ 0, cxx · cyy ≥ cxy²).
 */
function pairsFor(n: number, sx: number, qx: number, sy: number, qy: number, sxy: number): [number, number][] {
  const scatter = (k: number) => ({ cxx: qx - (sx * sx) / k, cyy: qy - (sy * sy) / k, cxy: sxy - (sx * sy) / k });
  let k = 3;
  for (; k < n; k++) {
    const c = scatter(k);
    if (c.cxx > 0 && c.cxx * c.cyy >= c.cxy * c.cxy) break;
  }
  const { cxx, cyy, cxy } = scatter(k);
  const mx = sx / k;
  const my = sy / k;
  const alpha = Math.sqrt(cxx);
  const beta = cxy / alpha;
  const gamma = Math.sqrt(Math.max(0, cyy - beta * beta));
  const u = [1 / Math.SQRT2, -1 / Math.SQRT2, 0];
  const v = [1 / Math.sqrt(6), 1 / Math.sqrt(6), -2 / Math.sqrt(6)];
  return Array.from({ length: n }, (_, i) => (i < 3
    ? [mx + alpha * u[i]!, my + beta * u[i]! + gamma * v[i]!] as [number, number]
    : i < k ? [mx, my] as [number, number] : [0, 0] as [number, number]));
}

test('vector ph-cuped-freq-rel through POST /query/: the covariate is the same metric in the 14 days before exposure', async () => {
  const v = vectors.find((x) => x.id === 'ph-cuped-freq-rel')!;
  const key = 'vec-cuped';
  const at = AT;
  const x = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, { body: { name: v.id, feature_flag_key: key, start_date: new Date(START).toISOString(),
    stats_config: { method: 'frequentist', frequentist: { alpha: v.config.alpha, difference_type: 'RELATIVE' }, cuped: { enabled: true } } } });
  assert.equal(x.status, 201, x.text);
  const events: Ev[] = [];
  for (const [arm, s] of [['control', v.inputs.control], ['test', v.inputs.treatment]] as [Arm, any][]) {
    const pairs = pairsFor(s.n, s.pre.sum, s.pre.sum_squares, s.post.sum, s.post.sum_squares, s.post_pre_sum_of_products);
    events.push(...armEvents(key, arm, s.n, at, (i, d) => (pairs[i]![0] === 0 && pairs[i]![1] === 0 ? [] : [
      { uuid: crypto.randomUUID(), project_id: t.projectId, event: 'purchase', distinct_id: d, properties: { amount: pairs[i]![0] }, timestamp: new Date(at - 86_400_000).toISOString() },
      { uuid: crypto.randomUUID(), project_id: t.projectId, event: 'purchase', distinct_id: d, properties: { amount: pairs[i]![1] }, timestamp: new Date(at + 60_000).toISOString() },
    ])));
  }
  await ingest(events);
  const metric = { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'sum', math_property: 'amount' } };
  const r = await t.request('POST', `/api/projects/${t.projectId}/query/`, { body: { query: { kind: 'ExperimentQuery', experiment_id: x.body.id, metric } } });
  assert.equal(r.status, 200, r.text);
  assert.ok(Math.abs(r.body.baseline.covariate_sum - v.inputs.control.pre.sum) < 1e-6);
  assert.ok(Math.abs(r.body.variant_results[0].covariate_sum_product - v.inputs.treatment.post_pre_sum_of_products) < 1e-6);
  const ci = r.body.variant_results[0].confidence_interval as number[];
  for (const [i, e] of (v.expected.confidence_interval as number[]).entries()) assert.ok(Math.abs(ci[i]! - e) <= v.tolerance.abs, `ci[${i}] ${ci[i]} vs ${e}`);
  assert.equal(r.body.variant_results[0].significant, v.expected.significant);
});

test('the vectors the endpoint can express are all here', () => {
  assert.deepEqual(supported.map((v) => v.id).sort(), ['ph-bayes-mean-rel', 'ph-freq-mean-rel', 'ph-freq-prop-rel', 'ph-freq-ratio-rel', 'ph-seq-mean-rel-N1000']);
});
