/**
 * The probability distributions the experiment statistics need (research/experiments.md §8
 * item 3): normal CDF, PDF and quantile, Student-t CDF and quantile with fractional degrees of
 * freedom, and the χ² survival function. Thin wrappers over stdlib-js (`@stdlib/stats-base-dists-*`),
 * a well-kept numerical library, so that nothing here is hand-rolled special-function code.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * The stdlib-js function `name`, loaded on first use: each package is dozens of small CommonJS
 * files, and loading all six cost about 150 ms of CPU at every start of a process that imports
 * the statistics, though most never compute one.
 */
function lazy<F extends (...args: number[]) => number>(name: string): () => F {
  let fn: F | null = null;
  return () => (fn ??= require(name) as F);
}

const normalCdfImpl = lazy<(x: number, mu: number, sigma: number) => number>('@stdlib/stats-base-dists-normal-cdf');
const normalPdfImpl = lazy<(x: number, mu: number, sigma: number) => number>('@stdlib/stats-base-dists-normal-pdf');
const normalQuantileImpl = lazy<(p: number, mu: number, sigma: number) => number>('@stdlib/stats-base-dists-normal-quantile');
const tCdfImpl = lazy<(x: number, df: number) => number>('@stdlib/stats-base-dists-t-cdf');
const tQuantileImpl = lazy<(p: number, df: number) => number>('@stdlib/stats-base-dists-t-quantile');
const chiSquareCdfImpl = lazy<(x: number, k: number) => number>('@stdlib/stats-base-dists-chisquare-cdf');

/** Φ(x; μ, σ). */
export function normalCdf(x: number, mu = 0, sigma = 1): number {
  return normalCdfImpl()(x, mu, sigma);
}

/** φ(x; μ, σ). */
export function normalPdf(x: number, mu = 0, sigma = 1): number {
  return normalPdfImpl()(x, mu, sigma);
}

/** Φ⁻¹(p; μ, σ). */
export function normalQuantile(p: number, mu = 0, sigma = 1): number {
  return normalQuantileImpl()(p, mu, sigma);
}

/** Student-t CDF with `df` degrees of freedom (fractional allowed). */
export function tCdf(x: number, df: number): number {
  return tCdfImpl()(x, df);
}

/** Student-t quantile with `df` degrees of freedom. */
export function tQuantile(p: number, df: number): number {
  return tQuantileImpl()(p, df);
}

/** P(X ≥ x) for X ~ χ²(k). */
export function chiSquareSurvival(x: number, k: number): number {
  return 1 - chiSquareCdfImpl()(x, k);
}
