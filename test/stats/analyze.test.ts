/**
 * `analyze` input rules that the upstream vectors do not pin down: impossible statistics are
 * refused naming the variant and field (unless the GrowthBook engine computes them as given),
 * unknown options are refused listing the known ones, sequential tests honour `alternative`,
 * SRM needs only counts (and follows PostHog's 100-exposure floor by default), per-comparison
 * Holm/BH corrections, and the two engines' CUPED relative variances.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { analyze, InputError } from '../../src/stats/analyze.js';

const control = { key: 'control', n: 1000, sum: 500, sum_squares: 800 };
const treatment = { key: 'test', n: 1000, sum: 560, sum_squares: 900 };

function refused(input: unknown, pattern: RegExp): void {
  assert.throws(() => analyze(input), (e: unknown) => e instanceof InputError && pattern.test(e.message), String(pattern));
}

test('impossible ratio sums are refused naming the variant and field; the GrowthBook engine computes them as given', () => {
  const ratio = (key: string, dss: number, products: number) => ({ key, type: 'ratio', n: 100, numerator: { sum: 50, sum_squares: 80 }, denominator: { sum: 100, sum_squares: dss }, sum_of_products: products });
  refused({ method: 'frequentist', variants: [ratio('control', 120, 60), ratio('test', 90, 60)] }, /variant "test": denominator\.sum_squares \(90\) is below sum²\/n \(100\)/);
  // cov = (500 − 50)/99 ≈ 4.5 but var_m ≈ 0.55 and var_d ≈ 0.2: no data has that covariance.
  refused({ method: 'frequentist', variants: [ratio('control', 120, 60), ratio('test', 120, 500)] }, /variant "test": sum_of_products \(500\) implies a covariance/);
  const out = analyze({ method: 'frequentist', config: { engine: 'growthbook' }, variants: [ratio('control', 120, 60), ratio('test', 90, 60)] });
  const r = (out.variant_results as Record<string, unknown>[])[0]!;
  assert.equal(r.error, undefined);
  assert.ok(typeof r.standard_error === 'number' && r.standard_error > 0, 'computed from the sums as given');
});

test('unknown config keys, input fields and variant fields are refused with the known ones listed, per method', () => {
  refused({ method: 'frequentist', config: { aplha: 0.1 }, variants: [control, treatment] }, /Unknown config key\(s\) for method frequentist: aplha\. Known: .*alpha/);
  refused({ method: 'bayesian', config: { alternative: 'greater' }, variants: [control, treatment] }, /for method bayesian: alternative\. Known: .*prior/);
  refused({ method: 'srm', config: { alpha: 0.1 }, variants: [control, treatment] }, /for method srm: alpha\. Known: engine, threshold/);
  refused({ method: 'frequentist', variants: [control, treatment], extra: 1 }, /Unknown input field\(s\) extra/);
  refused({ method: 'frequentist', variants: [control, { ...treatment, sum_sqaures: 1 }] }, /variant "test": unknown field\(s\) sum_sqaures/);
  refused({ method: 'bayesian', config: { prior_type: 'absolute' }, variants: [control, treatment] }, /prior_type .* GrowthBook option/);
  refused({ method: 'bayesian', config: { sequential_testing_enabled: true }, variants: [control, treatment] }, /Sequential testing is frequentist only/);
  refused({ method: 'frequentist', config: { sequential_tuning_parameter: 100 }, variants: [control, treatment] }, /need sequential testing/);
});

test('a one-sided alternative with sequential testing is computed one-sided, never two-sided', () => {
  const two = (analyze({ method: 'sequential', variants: [control, treatment] }).variant_results as Record<string, any>[])[0]!;
  const greater = (analyze({ method: 'sequential', config: { alternative: 'greater' }, variants: [control, treatment] }).variant_results as Record<string, any>[])[0]!;
  const viaFlag = (analyze({ method: 'frequentist', config: { alternative: 'greater', sequential_testing_enabled: true }, variants: [control, treatment] }).variant_results as Record<string, any>[])[0]!;
  assert.equal(greater.alternative, 'greater');
  assert.equal(greater.confidence_interval[1], Infinity);
  assert.ok(greater.confidence_interval[0] > two.confidence_interval[0], 'the one-sided bound is tighter than the two-sided one');
  assert.deepEqual(viaFlag.confidence_interval, greater.confidence_interval);
  assert.notEqual(greater.rho, two.rho); // ρ from 2α for one-sided sequences
  assert.equal(two.sequential_tuning_parameter, 5000);
  const given = (analyze({ method: 'sequential', config: { sequential_rho: 0.01 }, variants: [control, treatment] }).variant_results as Record<string, any>[])[0]!;
  assert.equal(given.rho, 0.01);
});

test('srm needs only counts; PostHog leaves it null under 100 exposures, GrowthBook computes it', () => {
  const variants = [{ key: 'control', n: 40, weight: 50 }, { key: 'test', n: 20, weight: 50 }];
  const ph = analyze({ method: 'srm', variants });
  assert.equal(ph.p_value, null);
  assert.match(String(ph.reason), /from 100 exposures/);
  const gb = analyze({ method: 'srm', config: { engine: 'growthbook' }, variants });
  assert.ok(typeof gb.p_value === 'number' && gb.p_value > 0 && gb.p_value < 0.05);
  const big = analyze({ method: 'srm', variants: [{ key: 'control', n: 1000 }, { key: 'test', n: 1200 }] });
  assert.equal(big.mismatch, true);
});

test('a per-comparison correction adds adjusted p-values and GrowthBook-adjusted intervals', () => {
  const t2 = { key: 'test2', n: 1000, sum: 530, sum_squares: 850 };
  const out = analyze({ method: 'frequentist', config: { correction: 'holm' }, variants: [control, treatment, t2] });
  const rs = out.variant_results as Record<string, any>[];
  const raw = rs.map((r) => r.p_value as number);
  const smaller = raw[0]! < raw[1]! ? 0 : 1;
  assert.ok(Math.abs(rs[smaller]!.p_value_adjusted - 2 * raw[smaller]!) < 1e-12);
  // GrowthBook's interval: lift ± z₀.₉₇₅·|lift/z(1 − p'/2)|, wider than the raw one when p' > p.
  const [lo, hi] = rs[smaller]!.confidence_interval_adjusted as [number, number];
  assert.ok(lo < rs[smaller]!.confidence_interval[0] && hi > rs[smaller]!.confidence_interval[1]);

});

test('CUPED: the engines share θ and the lift but differ in the relative variance; θ may be given', () => {
  const arm = (key: string, n: number, y: number, yy: number, x: number, xx: number, p: number) => ({ key, type: 'cuped', n, post: { sum: y, sum_squares: yy }, pre: { sum: x, sum_squares: xx }, post_pre_sum_of_products: p });
  const variants = [arm('control', 3001, 300, 600, 210, 415, -20), arm('test', 3000, 222, 555, 120, 405, -10)];
  const ph = (analyze({ method: 'frequentist', variants }).variant_results as Record<string, any>[])[0]!;
  const gb = (analyze({ method: 'frequentist', config: { engine: 'growthbook' }, variants }).variant_results as Record<string, any>[])[0]!;
  assert.ok(Math.abs(ph.cuped.theta - gb.cuped.theta) < 1e-12);
  assert.ok(Math.abs(ph.point_estimate - gb.point_estimate) < 1e-12);
  assert.ok(Math.abs(ph.standard_error - gb.standard_error) > 1e-4);
  assert.equal(ph.cuped.theta_source, 'estimated');
  const given = (analyze({ method: 'frequentist', config: { cuped_theta: 0 }, variants }).variant_results as Record<string, any>[])[0]!;
  assert.equal(given.cuped.theta_source, 'given');
  assert.equal(given.cuped.treatment.variance_reduction, 0);
  refused({ method: 'frequentist', config: { cuped_theta: 0.5 }, variants: [control, treatment] }, /cuped_theta applies to cuped/);
});

test('power and MDE: a list of totals gives one row each; sequential designs need more users', () => {
  const config = { metric_type: 'binomial', conversion_rate: 0.1, effect_size: 0.1, users: [10_000, 40_000] };
  const fixed = analyze({ method: 'power', config }).results as Record<string, number>[];
  const seq = analyze({ method: 'power', config: { ...config, sequential_tuning_parameter: 5000 } }).results as Record<string, number>[];
  assert.ok(fixed[1]!.power > fixed[0]!.power && fixed[1]!.mde < fixed[0]!.mde);
  assert.ok(seq[0]!.power < fixed[0]!.power && seq[0]!.mde > fixed[0]!.mde);
  refused({ method: 'power', config: { metric_type: 'binomial', conversion_rate: 1.2, effect_size: 0.1, users: 100 } }, /conversion_rate must be between 0 and 1/);
});
