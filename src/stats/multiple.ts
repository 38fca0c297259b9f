/**
 * Corrections for many comparisons (research/experiments.md §4.8; GrowthBook): over m p-values
 * (metrics × variants), Holm–Bonferroni (ascending, p'(i) = min(1, (m − i + 1)·p(i)), running
 * max) and Benjamini–Hochberg (descending, p'(i) = min(1, m·p(i)/rank), running min). Results
 * come back in input order. GrowthBook's adjusted interval (`packages/shared/src/experiments/
 * experiments.ts adjustedCI`) widens a lift's interval to match its adjusted p-value:
 * lift ± z₁₋α/₂·|lift/z₁₋p'/₂| ([0, 0] for a zero lift).
 */
import { normalQuantile } from './distributions.js';

/** Holm–Bonferroni adjusted p-values, in input order. */
export function holm(pValues: readonly number[]): number[] {
  const m = pValues.length;
  const order = pValues.map((p, i) => ({ p, i })).sort((a, b) => a.p - b.p);
  const out = new Array<number>(m);
  let running = 0;
  order.forEach(({ p, i }, k) => {
    running = Math.max(running, Math.min(1, (m - k) * p));
    out[i] = running;
  });
  return out;
}

/** Benjamini–Hochberg adjusted p-values, in input order. */
export function benjaminiHochberg(pValues: readonly number[]): number[] {
  const m = pValues.length;
  const order = pValues.map((p, i) => ({ p, i })).sort((a, b) => b.p - a.p);
  const out = new Array<number>(m);
  let running = 1;
  order.forEach(({ p, i }, k) => {
    const rank = m - k;
    running = Math.min(running, Math.min(1, (m * p) / rank));
    out[i] = running;
  });
  return out;
}

/** GrowthBook's interval for `lift` (a fraction) after adjustment to p-value `adjustedP`, at level `alpha`. */
export function adjustedConfidenceInterval(adjustedP: number, lift: number, alpha: number): [number, number] {
  if (!lift) return [0, 0];
  const z = normalQuantile(1 - alpha / 2);
  const sd = Math.abs(lift / normalQuantile(1 - adjustedP / 2));
  return [lift - z * sd, lift + z * sd];
}
