/**
 * The options each `analyze` method knows (docs/statistics.md lists each with its unit), the check
 * that refuses any other (a misspelt key must not be silently ignored), and readers for the
 * common ones.
 */
import type { JsonObject } from '../json-shapes.js';
import type { DifferenceType } from './effect.js';
import { InputError } from './errors.js';

const COMPARE = ['engine', 'baseline_key', 'difference_type', 'ci_level', 'alpha', 'goal', 'lower_is_better', 'abs_denominator', 'cuped_theta'];
const FREQUENTIST = [...COMPARE, 'sequential_testing_enabled', 'sequential_tuning_parameter', 'sequential_rho', 'alternative', 'correction'];

/** Known config keys per method. */
export const KNOWN_KEYS: Record<string, readonly string[]> = {
  bayesian: [...COMPARE, 'prior', 'prior_type', 'sequential_testing_enabled'],
  frequentist: FREQUENTIST,
  sequential: FREQUENTIST,
  srm: ['engine', 'threshold'],
  holm: ['p_values', 'lifts', 'alpha'],
  benjamini_hochberg: ['p_values', 'lifts', 'alpha'],
  sample_size: ['kind', 'baseline', 'mde', 'variants', 'exposures_per_day', 'baseline_stats'],
  power: ['metric_type', 'mean', 'standard_deviation', 'conversion_rate', 'effect_size', 'users', 'variations', 'alpha', 'target_power', 'sequential_tuning_parameter'],
};

/** @throws InputError naming the unknown keys of `config` and listing the known ones for `method`. */
export function checkKeys(method: string, config: JsonObject): void {
  const known = KNOWN_KEYS[method] ?? [];
  const unknown = Object.keys(config).filter((k) => !known.includes(k));
  if (unknown.length > 0) {
    throw new InputError(`Unknown config key(s) for method ${method}: ${unknown.join(', ')}. Known: ${known.join(', ')}.`);
  }
}

/** `config.difference_type` (default relative). */
export function differenceTypeOf(config: JsonObject): DifferenceType {
  const raw = String(config.difference_type ?? 'relative').toLowerCase();
  if (raw !== 'relative' && raw !== 'absolute') throw new InputError('config.difference_type must be relative or absolute.');
  return raw;
}

/** A level strictly between 0 and 1 at `config[key]`, else `fallback`. */
export function levelOf(config: JsonObject, key: string, fallback: number): number {
  const v = config[key] ?? fallback;
  if (typeof v !== 'number' || !(v > 0 && v < 1)) throw new InputError(`config.${key} must be a number between 0 and 1.`);
  return v;
}

/** An optional boolean at `config[key]`. */
export function boolOf(config: JsonObject, key: string): boolean {
  const v = config[key];
  if (v !== undefined && typeof v !== 'boolean') throw new InputError(`config.${key} must be true or false.`);
  return v === true;
}

/** An optional finite number at `config[key]`, else null. */
export function numberOrNull(config: JsonObject, key: string): number | null {
  const v = config[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new InputError(`config.${key} must be a finite number.`);
  return v;
}
