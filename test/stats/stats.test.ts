/**
 * Properties of the statistics module (src/stats) that the shared vectors do not pin down: a
 * proper prior pulls the posterior toward its mean, "lower is better" flips the chance to win,
 * one-sided tests halve the two-sided p-value on their side, the sequential p-value is 1 until the
 * evidence outweighs the look penalty, absolute effects, ratio and proportion moments, SRM edge
 * cases, and the multiple-comparison corrections' order guarantees.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bayesian } from '../../src/stats/bayesian.js';
import { effect, StatsError } from '../../src/stats/effect.js';
import { welch } from '../../src/stats/frequentist.js';
import { sequential } from '../../src/stats/sequential.js';
import { benjaminiHochberg, holm } from '../../src/stats/multiple.js';
import { sampleRatioMismatch } from '../../src/stats/srm.js';
import { meanMoments, proportionMoments, ratioMoments } from '../../src/stats/statistics.js';
import { power } from '../../src/stats/power.js';

const metric = { type: 'binomial' as const, conversionRate: 0.1 };

const control = meanMoments({ n: 1000, sum: 500, sum_squares: 800 });
const treatment = meanMoments({ n: 1000, sum: 560, sum_squares: 900 });

test('moments: mean with Bessel variance, proportion without, ratio with a constant denominator is the mean', () => {
  assert.equal(control.mean, 0.5);
  assert.ok(Math.abs(control.variance - (800 - 500 * 500 / 1000) / 999) < 1e-12);
  assert.deepEqual(proportionMoments({ type: 'proportion', n: 10, sum: 3 }), { n: 10, mean: 0.3, variance: 0.3 * 0.7 });
  const r = ratioMoments({ type: 'ratio', n: 1000, numerator: { n: 1000, sum: 500, sum_squares: 800 }, denominator: { n: 1000, sum: 1000, sum_squares: 1000 }, sum_of_products: 500 });
  assert.ok(Math.abs(r.mean - control.mean) < 1e-12 && Math.abs(r.variance - control.variance) < 1e-9);
});

test('effect: absolute difference and variance; a zero control mean has no relative effect', () => {
  const e = effect(treatment, control, 'absolute');
  assert.ok(Math.abs(e.delta - 0.06) < 1e-12);
  assert.ok(Math.abs(e.variance - (treatment.variance / 1000 + control.variance / 1000)) < 1e-15);
  assert.throws(() => effect(treatment, { n: 10, mean: 0, variance: 1 }, 'relative'), StatsError);
});

test('bayesian: a proper prior shrinks toward its mean and narrows the interval; lower-is-better flips the chance', () => {
  const e = effect(treatment, control, 'relative');
  const flat = bayesian(e, 0.95);
  const shrunk = bayesian(e, 0.95, { prior: { mean: 0, stddev: 0.05 } });
  assert.ok(shrunk.point_estimate < flat.point_estimate && shrunk.point_estimate > 0);
  assert.ok(shrunk.credible_interval[1] - shrunk.credible_interval[0] < flat.credible_interval[1] - flat.credible_interval[0]);
  const lower = bayesian(e, 0.95, { lowerIsBetter: true });
  assert.ok(Math.abs(lower.chance_to_win - (1 - flat.chance_to_win)) < 1e-12);
  assert.deepEqual(lower.risk, [flat.risk[1], flat.risk[0]]);
});

test('welch: one-sided p is half the two-sided p on the effect side; a tiny arm is refused', () => {
  const e = effect(treatment, control, 'absolute');
  const two = welch(e, treatment, control, 0.05);
  const greater = welch(e, treatment, control, 0.05, 'greater');
  const less = welch(e, treatment, control, 0.05, 'less');
  assert.ok(Math.abs(greater.p_value - two.p_value / 2) < 1e-12);
  assert.ok(Math.abs(less.p_value - (1 - two.p_value / 2)) < 1e-12);
  assert.equal(greater.confidence_interval[1], Infinity);
  assert.throws(() => welch(e, { n: 4, mean: 1, variance: 1 }, control, 0.05), StatsError);
});

test('sequential: p is 1 when the evidence does not outweigh the penalty, and its interval is wider than the fixed one', () => {
  const small = effect(meanMoments({ n: 100, sum: 51, sum_squares: 60 }), meanMoments({ n: 100, sum: 50, sum_squares: 60 }), 'absolute');
  const seqSmall = sequential(small, { n: 100, mean: 0, variance: 0 }, { n: 100, mean: 0, variance: 0 }, 0.05);
  assert.equal(seqSmall.p_value, 1);
  const e = effect(treatment, control, 'absolute');
  const fixed = welch(e, treatment, control, 0.05);
  const seq = sequential(e, treatment, control, 0.05);
  assert.ok(seq.confidence_interval[1] - seq.confidence_interval[0] > fixed.confidence_interval[1] - fixed.confidence_interval[0]);
  assert.ok(seq.p_value >= fixed.p_value);
});

test('srm: balanced counts pass, fewer than two weighted arms or no users give p = 1', () => {
  assert.ok(sampleRatioMismatch([1000, 1010], [1, 1]).p_value > 0.5);
  assert.equal(sampleRatioMismatch([1000, 1010], [1, 0]).p_value, 1);
  assert.equal(sampleRatioMismatch([0, 0], [1, 1]).p_value, 1);
  assert.equal(sampleRatioMismatch([1000, 1300], [1, 1]).mismatch, true);
});

test('holm and benjamini-hochberg: never below the raw p-value, at most 1, BH never above Holm', () => {
  const ps = [0.001, 0.01, 0.02, 0.04, 0.3, 0.9];
  const h = holm(ps);
  const bh = benjaminiHochberg(ps);
  ps.forEach((p, i) => {
    assert.ok(h[i]! >= p && h[i]! <= 1);
    assert.ok(bh[i]! >= p && bh[i]! <= 1);
    assert.ok(bh[i]! <= h[i]! + 1e-12);
  });
});

test('power grows with the sample and the lift, and is alpha at no lift', () => {
  assert.ok(Math.abs(power(metric, 0, 10_000, 2, 0.05, null) - 0.05) < 1e-9);
  assert.ok(power(metric, 0.1, 20_000, 2, 0.05, null) > power(metric, 0.1, 10_000, 2, 0.05, null));
  assert.ok(power(metric, 0.2, 10_000, 2, 0.05, null) > power(metric, 0.1, 10_000, 2, 0.05, null));
  assert.ok(power(metric, 0.1, 10_000, 2, 0.05, 5000) < power(metric, 0.1, 10_000, 2, 0.05, null));
});
