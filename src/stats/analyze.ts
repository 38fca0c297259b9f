/**
 * One entry point over the statistics module, used by `switchyard stats` and the experiment
 * query endpoint: `{method, variants: [...], config}` in, a JSON object out
 * (research/experiments.md §4; PostHog's `ExperimentQueryResponse` field names; every method,
 * option and output field with its unit in docs/statistics.md).
 *
 * Methods:
 * - `bayesian` (PostHog's default; flat prior unless `config.prior`), `frequentist` (Welch;
 *   `alternative` greater|less for GrowthBook's one-sided tests; `sequential_testing_enabled`)
 *   and `sequential` (the always-valid test, two- or one-sided) — analyze-compare.ts,
 * - `srm`, `holm`, `benjamini_hochberg`, `sample_size` (PostHog) and `power` (GrowthBook) —
 *   analyze-planning.ts.
 *
 * Variants are read by parse-variant.ts. `config.engine` picks PostHog's (default) or
 * GrowthBook's definition where they differ (engine.ts). Unknown top-level fields, config keys
 * and variant fields are refused, listing the known ones.
 */
import { isJsonObject, type JsonObject } from '../json-shapes.js';
import { compare } from './analyze-compare.js';
import { correct, powerOf, sampleSizeOf, srm } from './analyze-planning.js';
import { checkKeys, KNOWN_KEYS } from './config.js';
import { engineOf } from './engine.js';
import { InputError } from './errors.js';
import { num, parseVariant, type VariantInput } from './parse-variant.js';

export { InputError } from './errors.js';
export { parseVariant, type VariantInput } from './parse-variant.js';

/** The whole input. */
export interface AnalysisInput { method: string; variants?: unknown[]; config?: JsonObject }

const METHODS = Object.keys(KNOWN_KEYS);

/** Runs `input`. @throws InputError for input that cannot be analysed. */
export function analyze(input: unknown): JsonObject {
  if (!isJsonObject(input)) throw new InputError('The input must be a JSON object {method, variants, config}.');
  const extra = Object.keys(input).filter((k) => !['method', 'variants', 'config'].includes(k));
  if (extra.length > 0) throw new InputError(`Unknown input field(s) ${extra.join(', ')}; known: method, variants, config.`);
  const method = String(input.method ?? '');
  if (!METHODS.includes(method)) throw new InputError(`method must be one of ${METHODS.join(', ')}.`);
  const config = input.config === undefined ? {} : input.config;
  if (!isJsonObject(config)) throw new InputError('config must be an object.');
  checkKeys(method, config);
  const engine = engineOf(config);
  const needsVariants = ['bayesian', 'frequentist', 'sequential', 'srm'].includes(method);
  if (!needsVariants && input.variants !== undefined) throw new InputError(`method ${method} takes no variants: its inputs are in config.`);
  switch (method) {
    case 'holm':
    case 'benjamini_hochberg':
      return correct(method, config);
    case 'sample_size':
      return sampleSizeOf(config);
    case 'power':
      return powerOf(config);
    case 'srm':
      return srm(srmArms(input), config, engine);
    default:
      return compare(method, variantsOf(input, engine === 'growthbook'), config, engine);
  }
}

function list(input: JsonObject): unknown[] {
  if (!Array.isArray(input.variants) || input.variants.length === 0) throw new InputError('variants must be a non-empty list.');
  return input.variants;
}

function unique<T extends { key: string }>(out: T[]): T[] {
  if (new Set(out.map((v) => v.key)).size !== out.length) throw new InputError('variant keys must be unique.');
  return out;
}

function variantsOf(input: JsonObject, computeAsGiven: boolean): VariantInput[] {
  return unique(list(input).map((raw, i) => parseVariant(raw, i, computeAsGiven)));
}

/** SRM needs only `{key, n, weight}` per variant (other fields are allowed and ignored). */
function srmArms(input: JsonObject): { key: string; n: number; weight?: number }[] {
  return unique(list(input).map((raw, i) => {
    if (!isJsonObject(raw) || typeof raw.key !== 'string' || raw.key === '') throw new InputError(`variants[${i}] must be an object with a non-empty key.`);
    const n = num(raw.n ?? raw.number_of_samples, `variants[${i}].n`);
    if (n < 0 || !Number.isInteger(n)) throw new InputError(`variants[${i}].n must be a non-negative integer.`);
    const weight = raw.weight === undefined ? undefined : num(raw.weight, `variants[${i}].weight`);
    if (weight !== undefined && weight < 0) throw new InputError(`variants[${i}].weight must not be negative.`);
    return { key: raw.key, n, ...(weight !== undefined ? { weight } : {}) };
  }));
}
