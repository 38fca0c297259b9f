/**
 * Multivariate variant lookup (research/posthog-flag-evaluation.md §2.3; Rust
 * `flags/v1_bucketing.rs`): boundaries are `rollout_percentage / 100` accumulated left to right in
 * binary64, and the variant is the first whose boundary is strictly greater than the variant hash.
 * No boundary satisfied (shares below 100, or drift such as 1.01+10.02+88.97 → 0.9999999999999999,
 * or a hash of exactly 1.0) means no variant: the flag value is plain `true`.
 */

/** A compiled `multivariate.variants` list. */
export interface VariantTable {
  readonly keys: readonly string[];
  /** Cumulative upper boundaries, same order as `keys`. */
  readonly boundaries: Float64Array;
  /**
   * The variant every hash gets, when the hash cannot change it: undefined when it can.
   * null = no variant. Used for device-id flags without a `$device_id`: the Rust service still
   * evaluates a 100 % condition whose answer does not depend on the identifier
   * (docs/internal/feature-flags/flag-evaluation-engine.md, "Identifier resolution priority").
   */
  readonly constant: string | null | undefined;
}

/** Builds the table; `variants` must already be validated (string keys, finite numbers). */
export function buildVariantTable(variants: ReadonlyArray<{ key: string; rollout_percentage: number }>): VariantTable {
  const boundaries = new Float64Array(variants.length);
  let cum = 0;
  for (let i = 0; i < variants.length; i++) {
    cum += variants[i]!.rollout_percentage / 100;
    boundaries[i] = cum;
  }
  let constant: string | null | undefined;
  const firstNonZero = variants.find((v) => v.rollout_percentage !== 0);
  if (variants.length === 0 || firstNonZero === undefined) constant = null;
  else if (firstNonZero.rollout_percentage >= 100) constant = firstNonZero.key;
  return { keys: variants.map((v) => v.key), boundaries, constant };
}

/** The index in `table.keys` of the variant for variant hash `h` in [0, 1], or -1 when no boundary exceeds it. */
export function pickVariantIndex(table: VariantTable, h: number): number {
  const b = table.boundaries;
  for (let i = 0; i < b.length; i++) {
    if (h < b[i]!) return i;
  }
  return -1;
}

/** The variant for variant hash `h` in [0, 1] ({@link pickVariantIndex}), or null. */
export function pickVariant(table: VariantTable, h: number): string | null {
  const i = pickVariantIndex(table, h);
  return i < 0 ? null : table.keys[i]!;
}
