/**
 * The probability distributions the experiment statistics need (research/experiments.md §8
 * item 3): normal CDF, PDF and quantile, Student-t CDF and quantile with fractional degrees of
 * freedom, and the χ² survival function. Thin wrappers over stdlib-js (`@stdlib/stats-base-dists-*`),
 * a well-kept numerical library, so that nothing here is hand-rolled special-function code.
 */
import normalCdfImpl from '@stdlib/stats-base-dists-normal-cdf';
import normalPdfImpl from '@stdlib/stats-base-dists-normal-pdf';
import normalQuantileImpl from '@stdlib/stats-base-dists-normal-quantile';
import tCdfImpl from '@stdlib/stats-base-dists-t-cdf';
import tQuantileImpl from '@stdlib/stats-base-dists-t-quantile';
import chiSquareCdfImpl from '@stdlib/stats-base-dists-chisquare-cdf';

/** Φ(x; μ, σ). */
export function normalCdf(x: number, mu = 0, sigma = 1): number {
  return normalCdfImpl(x, mu, sigma);
}

/** φ(x; μ, σ). */
export function normalPdf(x: number, mu = 0, sigma = 1): number {
  return normalPdfImpl(x, mu, sigma);
}

/** Φ⁻¹(p; μ, σ). */
export function normalQuantile(p: number, mu = 0, sigma = 1): number {
  return normalQuantileImpl(p, mu, sigma);
}

/** Student-t CDF with `df` degrees of freedom (fractional allowed). */
export function tCdf(x: number, df: number): number {
  return tCdfImpl(x, df);
}

/** Student-t quantile with `df` degrees of freedom. */
export function tQuantile(p: number, df: number): number {
  return tQuantileImpl(p, df);
}

/** P(X ≥ x) for X ~ χ²(k). */
export function chiSquareSurvival(x: number, k: number): number {
  return 1 - chiSquareCdfImpl(x, k);
}
