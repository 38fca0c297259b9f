/**
 * The comparison methods of `analyze` — `bayesian`, `frequentist` and `sequential` — over every
 * treatment against the baseline (research/experiments.md §4; output fields in
 * docs/statistics.md "Comparison output"). A comparison that cannot be computed leaves that
 * variant's statistics null with an `error`, as PostHog does; under the GrowthBook engine it
 * carries GrowthBook's uninformative result instead (frequentist: Δ 0, interval [0, 0], p 1;
 * Bayesian: Δ 0, interval [0, 0], chance to win 0.5, risk [0, 0]).
 */
import { isJsonObject, type JsonObject } from '../json-shapes.js';
import { bayesian, type Prior } from './bayesian.js';
import { boolOf, differenceTypeOf, levelOf, numberOrNull } from './config.js';
import { StatsError, type DifferenceType } from './effect.js';
import type { Engine } from './engine.js';
import { InputError } from './errors.js';
import { welch, MIN_SAMPLES_PER_ARM, type Alternative } from './frequentist.js';
import { adjustedConfidenceInterval, benjaminiHochberg, holm } from './multiple.js';
import { comparePair, reportedMean, type Pair } from './pair.js';
import type { VariantInput } from './parse-variant.js';
import { sequential, DEFAULT_SEQUENTIAL_TUNING } from './sequential.js';

type Obj = JsonObject;

function priorOf(config: Obj): Prior | null {
  const p = config.prior;
  if (p === undefined || p === null) return null;
  if (!isJsonObject(p)) throw new InputError('config.prior must be an object {mean, stddev} or {mean, variance}.');
  const extra = Object.keys(p).filter((k) => !['mean', 'stddev', 'variance'].includes(k));
  if (extra.length > 0 || (p.stddev === undefined) === (p.variance === undefined)) {
    throw new InputError('config.prior must be {mean, stddev} or {mean, variance} (one of stddev, variance).');
  }
  const mean = p.mean ?? 0;
  if (typeof mean !== 'number' || !Number.isFinite(mean)) throw new InputError('config.prior.mean must be a finite number.');
  const spread = (p.stddev ?? p.variance) as unknown;
  if (typeof spread !== 'number' || !(spread > 0) || !Number.isFinite(spread)) throw new InputError(`config.prior.${p.stddev !== undefined ? 'stddev' : 'variance'} must be a positive number.`);
  return { mean, stddev: p.stddev !== undefined ? spread : Math.sqrt(spread) };
}

/** The prior on the analysis scale: GrowthBook rescales a relative prior for an absolute analysis by |m_C| (PostHog uses it as given). */
function scaledPrior(prior: Prior | null, config: Obj, engine: Engine, type: DifferenceType, controlMean: number): Prior | null {
  if (!prior || engine !== 'growthbook' || type !== 'absolute' || (config.prior_type ?? 'relative') !== 'relative') return prior;
  if (controlMean === 0) throw new StatsError('The baseline (control) mean is zero: a relative prior cannot be rescaled.');
  return { mean: prior.mean * Math.abs(controlMean), stddev: prior.stddev * Math.abs(controlMean) };
}

function failed(method: string, engine: Engine, message: string): Obj {
  if (engine === 'growthbook') {
    return method === 'bayesian'
      ? { point_estimate: 0, posterior_sd: 0, chance_to_win: 0.5, credible_interval: [0, 0], risk: [0, 0], significant: false, error: message }
      : { point_estimate: 0, standard_error: 0, p_value: 1, confidence_interval: [0, 0], significant: false, degrees_of_freedom: null, error: message };
  }
  return { error: message, significant: false, ...(method === 'bayesian' ? { chance_to_win: null, credible_interval: null } : { p_value: null, confidence_interval: null }) };
}

/** Runs a comparison method over `variants`. @throws InputError for bad options. */
export function compare(method: string, variants: VariantInput[], config: Obj, engine: Engine): Obj {
  if (variants.length < 2) throw new InputError('A comparison needs at least two variants.');
  const baselineKey = typeof config.baseline_key === 'string' ? config.baseline_key : variants.some((v) => v.key === 'control') ? 'control' : variants[0]!.key;
  const baseline = variants.find((v) => v.key === baselineKey);
  if (!baseline) throw new InputError(`No variant has the baseline key "${baselineKey}".`);
  const type = differenceTypeOf(config);
  const isBayesian = method === 'bayesian';
  const sequentialOn = method === 'sequential' || boolOf(config, 'sequential_testing_enabled');
  if (isBayesian && sequentialOn) throw new InputError('Sequential testing is frequentist only: use method sequential.');
  const alpha = levelOf(config, 'alpha', 0.05);
  const ciLevel = levelOf(config, 'ci_level', config.alpha !== undefined ? 1 - alpha : 0.95);
  const prior = priorOf(config);
  if (config.prior_type !== undefined && (engine !== 'growthbook' || !['relative', 'absolute'].includes(String(config.prior_type)))) {
    throw new InputError('config.prior_type (relative|absolute) is a GrowthBook option: set engine "growthbook" (PostHog uses the prior on the analysis scale as given).');
  }
  if (config.goal !== undefined && config.goal !== 'increase' && config.goal !== 'decrease') throw new InputError('config.goal must be increase or decrease.');
  const lowerIsBetter = config.goal === 'decrease' || boolOf(config, 'lower_is_better');
  const alternative = (config.alternative ?? 'two-sided') as Alternative;
  if (!['two-sided', 'greater', 'less'].includes(alternative)) throw new InputError('config.alternative must be two-sided, greater or less.');
  const tuning = numberOrNull(config, 'sequential_tuning_parameter') ?? DEFAULT_SEQUENTIAL_TUNING;
  if (!(tuning > 0)) throw new InputError('config.sequential_tuning_parameter must be positive.');
  const rho = numberOrNull(config, 'sequential_rho');
  if ((config.sequential_tuning_parameter !== undefined || rho !== null) && !sequentialOn) throw new InputError('config.sequential_tuning_parameter and sequential_rho need sequential testing (method sequential or sequential_testing_enabled).');
  if (rho !== null && !(rho > 0)) throw new InputError('config.sequential_rho must be positive.');
  const correction = config.correction;
  if (correction !== undefined && correction !== 'holm' && correction !== 'benjamini_hochberg') throw new InputError('config.correction must be holm or benjamini_hochberg.');
  if (correction !== undefined && alternative !== 'two-sided') throw new InputError('config.correction adjusts two-sided intervals only.');
  const theta = numberOrNull(config, 'cuped_theta');
  const absDenominator = engine === 'growthbook' || boolOf(config, 'abs_denominator');
  const outMethod = isBayesian ? 'bayesian' : 'frequentist';

  const results = variants.filter((v) => v !== baseline).map((v) => {
    const base: Obj = { key: v.key, number_of_samples: v.n, mean: reportedMean(v), method: outMethod };
    if (!isBayesian) Object.assign(base, { sequential: sequentialOn, alternative });
    let pair: Pair | undefined;
    try {
      pair = comparePair(v, baseline, type, engine, { absDenominator, theta });
      const extras: Obj = pair.cuped ? { cuped_theta: pair.cuped.theta, cuped: pair.cuped } : {};
      if (isBayesian) {
        if (engine === 'posthog' && type === 'relative' && !absDenominator && pair.controlMean <= 0) throw new StatsError('A relative Bayesian comparison needs a positive control mean.');
        return { ...base, ...bayesian(pair.effect, ciLevel, { prior: scaledPrior(prior, config, engine, type, pair.controlMean), lowerIsBetter }), ...extras };
      }
      const r = sequentialOn
        ? sequential(pair.effect, pair.t, pair.c, alpha, { tuning, rho, alternative })
        : welch(pair.effect, pair.t, pair.c, alpha, alternative, engine === 'growthbook' ? 0 : MIN_SAMPLES_PER_ARM);
      return { ...base, ...r, ...extras };
    } catch (err) {
      if (!(err instanceof StatsError)) throw err;
      return { ...base, ...failed(outMethod, engine, err.message), ...(pair?.cuped ? { cuped: pair.cuped } : {}) };
    }
  });
  if (correction !== undefined) applyCorrection(results, correction, alpha);
  return {
    method: outMethod, engine, difference_type: type,
    baseline: { key: baseline.key, number_of_samples: baseline.n, mean: reportedMean(baseline) },
    variant_results: results,
  };
}

/** Holm or BH over the variants' p-values, with GrowthBook's adjusted intervals. */
function applyCorrection(results: Obj[], correction: string, alpha: number): void {
  const withP = results.filter((r) => typeof r.p_value === 'number' && r.error === undefined);
  const adjusted = (correction === 'holm' ? holm : benjaminiHochberg)(withP.map((r) => r.p_value as number));
  withP.forEach((r, i) => {
    r.p_value_adjusted = adjusted[i]!;
    r.confidence_interval_adjusted = adjustedConfidenceInterval(adjusted[i]!, r.point_estimate as number, alpha);
    r.significant_adjusted = adjusted[i]! < alpha;
  });
}
