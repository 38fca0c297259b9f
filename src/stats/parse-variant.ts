/**
 * Reads one variant of the `analyze` input (shapes in docs/statistics.md "Variants"):
 *
 * - mean `{key, n, sum, sum_squares}` (PostHog's `number_of_samples` is accepted for `n`),
 * - `{type: "proportion", n, sum}`,
 * - `{type: "ratio", n, numerator: {sum, sum_squares}, denominator: {sum, sum_squares},
 *   sum_of_products}` or PostHog's flat names (`sum`, `sum_squares`, `denominator_sum`,
 *   `denominator_sum_squares`, `numerator_denominator_sum_product`),
 * - `{type: "cuped", n, post: {sum, sum_squares}, pre: {sum, sum_squares},
 *   post_pre_sum_of_products}` (a part without `sum_squares`, or `type: "proportion"`, holds
 *   0/1 values), or PostHog's
 *   flat names (`sum`, `sum_squares`, `covariate_sum`, `covariate_sum_squares`,
 *   `covariate_sum_product`),
 * - `{type: "cuped_ratio", n, numerator_post, denominator_post, numerator_pre, denominator_pre,
 *   sums_of_products: {m_post_m_pre, d_post_d_pre, m_pre_d_pre, m_post_d_post, m_post_d_pre,
 *   m_pre_d_post}}` (GrowthBook's regression-adjusted ratio),
 * - `{type: "quantile", n, n_star, nu, quantile_hat, quantile_lower, quantile_upper}`.
 *
 * Every variant may carry `weight` (its expected traffic share, for SRM). Unknown fields are
 * refused. Impossible statistics are refused naming the variant and the field (PostHog raises
 * `InvalidStatisticError` for them) unless `computeAsGiven` (the GrowthBook engine) asks to
 * compute them as given; see possible.ts.
 */
import { isJsonObject, type JsonObject } from '../json-shapes.js';
import { InputError } from './errors.js';
import { checkPossible } from './possible.js';
import type { CupedRatioProduct, MeanStatistic, SimpleStatistic, VariantInput } from './statistics.js';

export type { VariantInput } from './statistics.js';

const COMMON = ['key', 'type', 'n', 'number_of_samples', 'weight'];
const FIELDS: Record<string, string[]> = {
  mean: ['sum', 'sum_squares'],
  proportion: ['sum'],
  ratio: ['numerator', 'denominator', 'sum_of_products', 'sum', 'sum_squares', 'denominator_sum', 'denominator_sum_squares', 'numerator_denominator_sum_product'],
  cuped: ['post', 'pre', 'post_pre_sum_of_products', 'sum', 'sum_squares', 'covariate_sum', 'covariate_sum_squares', 'covariate_sum_product'],
  cuped_ratio: ['numerator_post', 'denominator_post', 'numerator_pre', 'denominator_pre', 'sums_of_products'],
  quantile: ['n_star', 'nu', 'quantile_hat', 'quantile_lower', 'quantile_upper'],
};
const PRODUCTS: CupedRatioProduct[] = ['m_post_m_pre', 'd_post_d_pre', 'm_pre_d_pre', 'm_post_d_post', 'm_post_d_pre', 'm_pre_d_post'];

/** A finite number at `what`. @throws InputError. */
export function num(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new InputError(`${what} must be a finite number.`);
  return v;
}

function part(v: unknown, n: number, what: string, allowProportion: boolean): SimpleStatistic {
  if (!isJsonObject(v)) throw new InputError(`${what} must be an object {sum, sum_squares}.`);
  const unknown = Object.keys(v).filter((k) => !['type', 'n', 'sum', 'sum_squares'].includes(k));
  if (unknown.length > 0) throw new InputError(`${what} has unknown field(s) ${unknown.join(', ')}; known: type, n, sum, sum_squares.`);
  const partN = v.n === undefined ? n : num(v.n, `${what}.n`);
  if (partN !== n) throw new InputError(`${what}.n (${partN}) differs from the variant's n (${n}).`);
  if (v.type !== undefined && v.type !== 'mean' && !(v.type === 'proportion' && allowProportion)) {
    throw new InputError(`${what}.type must be mean${allowProportion ? ' or proportion' : ''}.`);
  }
  const binary = v.type === 'proportion' || (v.type === undefined && v.sum_squares === undefined);
  if (binary && allowProportion) {
    if (v.sum_squares !== undefined) throw new InputError(`${what} is a proportion: it takes no sum_squares.`);
    return { type: 'proportion', n, sum: num(v.sum, `${what}.sum`) };
  }
  return { type: 'mean', n, sum: num(v.sum, `${what}.sum`), sum_squares: num(v.sum_squares, `${what}.sum_squares`) };
}

function meanPart(v: unknown, n: number, what: string): MeanStatistic {
  return part(v, n, what, false) as MeanStatistic;
}

function typeOf(raw: JsonObject): string {
  if (raw.type !== undefined) return String(raw.type);
  if (raw.denominator_sum !== undefined || raw.numerator !== undefined) return 'ratio';
  if (raw.post !== undefined || raw.covariate_sum !== undefined) return 'cuped';
  return 'mean';
}

/** Reads variant `i`. @throws InputError for a malformed or (unless `computeAsGiven`) impossible variant. */
export function parseVariant(raw: unknown, i: number, computeAsGiven = false): VariantInput {
  const at = `variants[${i}]`;
  if (!isJsonObject(raw)) throw new InputError(`${at} must be an object.`);
  if (typeof raw.key !== 'string' || raw.key === '') throw new InputError(`${at}.key must be a non-empty string.`);
  const key = raw.key;
  const type = typeOf(raw);
  const known = FIELDS[type];
  if (!known) throw new InputError(`${at}.type must be one of ${Object.keys(FIELDS).join(', ')}.`);
  const unknown = Object.keys(raw).filter((k) => !COMMON.includes(k) && !known.includes(k));
  if (unknown.length > 0) throw new InputError(`variant "${key}": unknown field(s) ${unknown.join(', ')}; a ${type} variant knows ${[...COMMON, ...known].join(', ')}.`);
  const n = num(raw.n ?? raw.number_of_samples, `${at}.n`);
  if (n < 0 || !Number.isInteger(n)) throw new InputError(`${at}.n must be a non-negative integer.`);
  const weight = raw.weight === undefined ? undefined : num(raw.weight, `${at}.weight`);
  const v = read(raw, type, key, n, at);
  if (weight !== undefined) v.weight = weight;
  if (!computeAsGiven) checkPossible(v);
  return v;
}

function read(raw: JsonObject, type: string, key: string, n: number, at: string): VariantInput {
  switch (type) {
    case 'proportion':
      return { key, type: 'proportion', n, sum: num(raw.sum, `${at}.sum`) };
    case 'ratio': {
      const numerator = raw.numerator !== undefined ? meanPart(raw.numerator, n, `${at}.numerator`)
        : meanPart({ sum: raw.sum, sum_squares: raw.sum_squares }, n, at);
      const denominator = raw.denominator !== undefined ? meanPart(raw.denominator, n, `${at}.denominator`)
        : meanPart({ sum: raw.denominator_sum, sum_squares: raw.denominator_sum_squares }, n, `${at}.denominator`);
      const products = num(raw.sum_of_products ?? raw.numerator_denominator_sum_product, `${at}.sum_of_products`);
      return { key, type: 'ratio', n, numerator, denominator, sum_of_products: products };
    }
    case 'cuped': {
      const post = raw.post !== undefined ? part(raw.post, n, `${at}.post`, true)
        : part({ sum: raw.sum, ...(raw.sum_squares !== undefined ? { sum_squares: raw.sum_squares } : {}) }, n, `${at}.post`, true);
      const pre = raw.pre !== undefined ? part(raw.pre, n, `${at}.pre`, true)
        : part({ sum: raw.covariate_sum, ...(raw.covariate_sum_squares !== undefined ? { sum_squares: raw.covariate_sum_squares } : {}) }, n, `${at}.pre`, true);
      const products = num(raw.post_pre_sum_of_products ?? raw.covariate_sum_product, `${at}.post_pre_sum_of_products`);
      return { key, type: 'cuped', n, post, pre, post_pre_sum_of_products: products };
    }
    case 'cuped_ratio': {
      const sums = raw.sums_of_products;
      if (!isJsonObject(sums)) throw new InputError(`${at}.sums_of_products must be an object {${PRODUCTS.join(', ')}}.`);
      const extra = Object.keys(sums).filter((k) => !PRODUCTS.includes(k as CupedRatioProduct));
      if (extra.length > 0) throw new InputError(`${at}.sums_of_products has unknown field(s) ${extra.join(', ')}; known: ${PRODUCTS.join(', ')}.`);
      const products = Object.fromEntries(PRODUCTS.map((p) => [p, num(sums[p], `${at}.sums_of_products.${p}`)])) as Record<CupedRatioProduct, number>;
      return {
        key, type: 'cuped_ratio', n, products,
        numerator_post: meanPart(raw.numerator_post, n, `${at}.numerator_post`), denominator_post: meanPart(raw.denominator_post, n, `${at}.denominator_post`),
        numerator_pre: meanPart(raw.numerator_pre, n, `${at}.numerator_pre`), denominator_pre: meanPart(raw.denominator_pre, n, `${at}.denominator_pre`),
      };
    }
    case 'quantile':
      return {
        key, type: 'quantile', n, n_star: num(raw.n_star, `${at}.n_star`), nu: num(raw.nu, `${at}.nu`),
        quantile_hat: num(raw.quantile_hat, `${at}.quantile_hat`), quantile_lower: num(raw.quantile_lower, `${at}.quantile_lower`), quantile_upper: num(raw.quantile_upper, `${at}.quantile_upper`),
      };
    default:
      return { key, type: 'mean', n, sum: num(raw.sum, `${at}.sum`), sum_squares: num(raw.sum_squares, `${at}.sum_squares`) };
  }
}
