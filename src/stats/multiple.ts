/**
 * Corrections for many comparisons (research/experiments.md §4.8; GrowthBook): over m p-values
 * (metrics × variants), Holm–Bonferroni (ascending, p'(i) = min(1, (m − i + 1)·p(i)), running
 * max) and Benjamini–Hochberg (descending, p'(i) = min(1, m·p(i)/rank), running min). Results
 * come back in input order.
 */

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
