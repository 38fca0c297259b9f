/**
 * One entry point over the statistics module, used by `switchyard stats` and the experiment
 * query endpoint: `{method, variants: [...], config}` in, per-variant results out
 * (research/experiments.md §4; PostHog's `ExperimentQueryResponse` field names).
 *
 * Methods:
 * - `bayesian` (PostHog's default; flat prior unless `config.prior = {mean, stddev}`),
 * - `frequentist` (Welch; `config.sequential_testing_enabled` or method `sequential` for the
 *   always-valid test; `config.alternative` greater|less for GrowthBook's one-sided tests),
 * - `srm` (observed `n` per variant against `weight`s),
 * - `holm`, `benjamini_hochberg` (`config.p_values`),
 * - `sample_size` (`config`: kind, baseline, mde, variants, exposures_per_day).
 *
 * Variants are `{key, n, sum, sum_squares}` (mean), `{key, type: "proportion", n, sum}`,
 * `{key, type: "ratio", n, numerator, denominator, sum_of_products}` (PostHog's response names
 * `number_of_samples`, `denominator_sum`, `denominator_sum_squares`,
 * `numerator_denominator_sum_product` are accepted too) or `{key, type: "cuped", n, post, pre,
 * post_pre_sum_of_products}`. The baseline is `config.baseline_key`, else `control`, else the
 * first variant. A comparison that cannot be computed leaves that variant's statistics null with
 * an `error`, as PostHog does.
 */
import { type JsonObject, isJsonObject } from '../json-shapes.js';
import { bayesian, type Prior } from './bayesian.js';
import { cupedPair } from './cuped.js';
import { effect, StatsError, type DifferenceType } from './effect.js';
import { sequential, welch, DEFAULT_SEQUENTIAL_TUNING, type Alternative } from './frequentist.js';
import { benjaminiHochberg, holm } from './multiple.js';
import { sampleSize, type SampleSizeInput } from './power.js';
import { sampleRatioMismatch } from './srm.js';
import { moments, type ArmStatistic, type CupedStatistic, type MeanStatistic } from './statistics.js';

/** Bad input: the message says what to fix (the CLI exits 2). */
export class InputError extends Error {}

type Obj = JsonObject;

/** One variant as given. */
export type VariantInput = ArmStatistic & { key: string; weight?: number };

/** The whole input. */
export interface AnalysisInput { method: string; variants?: unknown[]; config?: Obj }

function num(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new InputError(`${what} must be a finite number.`);
  return v;
}

function meanStat(v: unknown, what: string): MeanStatistic {
  if (!isJsonObject(v)) throw new InputError(`${what} must be an object {n, sum, sum_squares}.`);
  return { type: 'mean', n: num(v.n ?? v.number_of_samples, `${what}.n`), sum: num(v.sum, `${what}.sum`), sum_squares: num(v.sum_squares, `${what}.sum_squares`) };
}

/** Reads one variant. @throws InputError. */
export function parseVariant(raw: unknown, i: number): VariantInput {
  const at = `variants[${i}]`;
  if (!isJsonObject(raw)) throw new InputError(`${at} must be an object.`);
  if (typeof raw.key !== 'string' || raw.key === '') throw new InputError(`${at}.key must be a non-empty string.`);
  const key = raw.key;
  const n = num(raw.n ?? raw.number_of_samples, `${at}.n`);
  if (n < 0 || !Number.isInteger(n)) throw new InputError(`${at}.n must be a non-negative integer.`);
  const weight = raw.weight === undefined ? undefined : num(raw.weight, `${at}.weight`);
  const type = raw.type ?? (raw.denominator_sum !== undefined || raw.numerator !== undefined ? 'ratio' : raw.post !== undefined ? 'cuped' : 'mean');
  switch (String(type)) {
    case 'proportion':
      return { key, type: 'proportion', n, sum: num(raw.sum, `${at}.sum`), weight };
    case 'ratio': {
      const numerator = raw.numerator !== undefined ? meanStat(raw.numerator, `${at}.numerator`) : { type: 'mean' as const, n, sum: num(raw.sum, `${at}.sum`), sum_squares: num(raw.sum_squares, `${at}.sum_squares`) };
      const denominator = raw.denominator !== undefined ? meanStat(raw.denominator, `${at}.denominator`)
        : { type: 'mean' as const, n, sum: num(raw.denominator_sum, `${at}.denominator_sum`), sum_squares: num(raw.denominator_sum_squares, `${at}.denominator_sum_squares`) };
      const products = num(raw.sum_of_products ?? raw.numerator_denominator_sum_product, `${at}.sum_of_products`);
      return { key, type: 'ratio', n, numerator, denominator, sum_of_products: products, weight };
    }
    case 'cuped':
      return { key, type: 'cuped', n, post: meanStat(raw.post, `${at}.post`), pre: meanStat(raw.pre, `${at}.pre`), post_pre_sum_of_products: num(raw.post_pre_sum_of_products, `${at}.post_pre_sum_of_products`), weight };
    case 'mean':
      return { key, type: 'mean', n, sum: num(raw.sum, `${at}.sum`), sum_squares: num(raw.sum_squares, `${at}.sum_squares`), weight };
    default:
      throw new InputError(`${at}.type must be mean, proportion, ratio or cuped.`);
  }
}

function diffType(config: Obj): DifferenceType {
  const raw = String(config.difference_type ?? 'relative').toLowerCase();
  if (raw !== 'relative' && raw !== 'absolute') throw new InputError('config.difference_type must be relative or absolute.');
  return raw;
}

function level(config: Obj, key: 'alpha' | 'ci_level', fallback: number): number {
  const v = config[key] ?? fallback;
  if (typeof v !== 'number' || !(v > 0 && v < 1)) throw new InputError(`config.${key} must be a number between 0 and 1.`);
  return v;
}

/** Runs `input`. @throws InputError for input that cannot be analysed. */
export function analyze(input: unknown): Obj {
  if (!isJsonObject(input)) throw new InputError('The input must be a JSON object {method, variants, config}.');
  const method = String(input.method ?? '');
  const config = input.config === undefined ? {} : input.config;
  if (!isJsonObject(config)) throw new InputError('config must be an object.');
  switch (method) {
    case 'holm':
    case 'benjamini_hochberg': {
      const ps = config.p_values;
      if (!Array.isArray(ps) || !ps.every((p) => typeof p === 'number' && p >= 0 && p <= 1)) throw new InputError('config.p_values must be a list of p-values.');
      return { method, adjusted_p_values: method === 'holm' ? holm(ps as number[]) : benjaminiHochberg(ps as number[]) };
    }
    case 'sample_size':
      try {
        return { method, ...sampleSize(config as unknown as SampleSizeInput) };
      } catch (e) {
        throw new InputError((e as Error).message);
      }
    case 'srm': {
      const variants = variantsOf(input);
      const weights = variants.map((v) => v.weight ?? 1);
      return { method, ...sampleRatioMismatch(variants.map((v) => v.n), weights), keys: variants.map((v) => v.key) };
    }
    case 'bayesian':
    case 'frequentist':
    case 'sequential':
      return compare(method, variantsOf(input), config);
    default:
      throw new InputError('method must be bayesian, frequentist, sequential, srm, holm, benjamini_hochberg or sample_size.');
  }
}

function variantsOf(input: Obj): VariantInput[] {
  if (!Array.isArray(input.variants) || input.variants.length === 0) throw new InputError('variants must be a non-empty list.');
  const out = input.variants.map(parseVariant);
  if (new Set(out.map((v) => v.key)).size !== out.length) throw new InputError('variant keys must be unique.');
  return out;
}

/** Mean of an arm as reported (the unadjusted metric mean). */
function reportedMean(v: VariantInput): number {
  if (v.type === 'cuped') return v.n > 0 ? v.post.sum / v.n : 0;
  return moments(v).mean;
}

function compare(method: string, variants: VariantInput[], config: Obj): Obj {
  if (variants.length < 2) throw new InputError('A comparison needs at least two variants.');
  const baselineKey = typeof config.baseline_key === 'string' ? config.baseline_key : variants.some((v) => v.key === 'control') ? 'control' : variants[0]!.key;
  const baseline = variants.find((v) => v.key === baselineKey);
  if (!baseline) throw new InputError(`No variant has the baseline key "${baselineKey}".`);
  const cuped = variants.some((v) => v.type === 'cuped');
  if (cuped && !variants.every((v) => v.type === 'cuped')) throw new InputError('Either every variant is cuped or none is.');
  const type = diffType(config);
  const sequentialOn = method === 'sequential' || config.sequential_testing_enabled === true;
  const alpha = level(config, 'alpha', 0.05);
  const ciLevel = level(config, 'ci_level', 0.95);
  const prior = isJsonObject(config.prior) ? { mean: num(config.prior.mean, 'config.prior.mean'), stddev: num(config.prior.stddev, 'config.prior.stddev') } as Prior : null;
  const lowerIsBetter = config.goal === 'decrease' || config.lower_is_better === true;
  const alternative = (config.alternative ?? 'two-sided') as Alternative;
  if (!['two-sided', 'greater', 'less'].includes(alternative)) throw new InputError('config.alternative must be two-sided, greater or less.');
  const tuning = config.sequential_tuning_parameter === undefined ? DEFAULT_SEQUENTIAL_TUNING : num(config.sequential_tuning_parameter, 'config.sequential_tuning_parameter');
  const absDenominator = config.abs_denominator === true;
  const outMethod = method === 'bayesian' ? 'bayesian' : 'frequentist';

  const results = variants.filter((v) => v !== baseline).map((v) => {
    const base: Obj = { key: v.key, number_of_samples: v.n, mean: reportedMean(v), method: outMethod };
    try {
      let e;
      let tm;
      let cm;
      if (v.type === 'cuped') {
        const pair = cupedPair(v, baseline as CupedStatistic & VariantInput);
        tm = pair.t;
        cm = pair.c;
        e = effect(tm, cm, type, { denominator: pair.controlMean, absDenominator });
        base.cuped_theta = pair.theta;
      } else {
        tm = moments(v);
        cm = moments(baseline as Exclude<VariantInput, CupedStatistic>);
        e = effect(tm, cm, type, { absDenominator });
      }
      if (method === 'bayesian') {
        if (type === 'relative' && !absDenominator && cm.mean <= 0 && v.type !== 'cuped') throw new StatsError('A relative Bayesian comparison needs a positive control mean.');
        return { ...base, ...bayesian(e, ciLevel, { prior, lowerIsBetter }) };
      }
      const r = sequentialOn ? sequential(e, tm, cm, alpha, tuning) : welch(e, tm, cm, alpha, alternative);
      return { ...base, ...r, sequential: sequentialOn };
    } catch (err) {
      if (!(err instanceof StatsError)) throw err;
      return { ...base, error: err.message, significant: false, ...(outMethod === 'bayesian'
        ? { chance_to_win: null, credible_interval: null } : { p_value: null, confidence_interval: null }) };
    }
  });
  return {
    method: outMethod, difference_type: type,
    baseline: { key: baseline.key, number_of_samples: baseline.n, mean: reportedMean(baseline) },
    variant_results: results,
  };
}
