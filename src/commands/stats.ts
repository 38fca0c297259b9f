/**
 * `switchyard stats [file|-]`: reads per-variant sufficient statistics as JSON
 * (`{"method", "variants": [{"key", "n", "sum", "sum_squares", …}], "config": {…}}`; every
 * method, option and output field in `--help` and docs/statistics.md) from a file or stdin (the
 * default) and prints the result as JSON, so analysts can check numbers offline.
 *
 * Exit codes: 0 printed; 2 usage error, unreadable file, bad JSON or input that cannot be
 * analysed (the reason on stderr).
 */
import fs from 'node:fs';
import { analyze, InputError } from '../stats/analyze.js';
import { PROCESS_IO, type CommandIo } from './command-io.js';

const USAGE = `usage: switchyard stats [<input.json> | -]

Reads {"method", "variants", "config"} as JSON (a file or stdin) and prints the result as JSON.
Units: a fraction is 0.05 for 5 %; a relative effect is a fraction of the control mean; an
absolute effect is in the metric's unit. Unknown fields and config keys are refused (exit 2).
Full reference, formulas and the upstream test suites covered: docs/statistics.md.

methods
  bayesian | frequentist | sequential   compare each variant with the baseline
  srm                                   sample-ratio mismatch (chi-squared) from counts
  holm | benjamini_hochberg             adjust config.p_values
  sample_size                           PostHog's running-time calculator
  power                                 GrowthBook's power and minimum detectable effect

variants (comparisons; srm needs only key, n, weight)
  {"key", "n", "sum", "sum_squares"}                          mean (default type)
  {"key", "type": "proportion", "n", "sum"}                   0/1 metric (sum = successes)
  {"key", "type": "ratio", "n", "numerator": {sum, sum_squares},
   "denominator": {sum, sum_squares}, "sum_of_products"}      ratio (delta method)
  {"key", "type": "cuped", "n", "post": {sum, sum_squares}, "pre": {sum, sum_squares},
   "post_pre_sum_of_products"}                                CUPED (omit sum_squares for 0/1)
  {"key", "type": "cuped_ratio", "n", "numerator_post", "denominator_post", "numerator_pre",
   "denominator_pre", "sums_of_products": {m_post_m_pre, d_post_d_pre, m_pre_d_pre,
   m_post_d_post, m_post_d_pre, m_pre_d_post}}                GrowthBook's regression-adjusted ratio
  {"key", "type": "quantile", "n", "n_star", "nu", "quantile_hat", "quantile_lower",
   "quantile_upper"}                                          GrowthBook's quantile metric
  any variant: "weight" (expected traffic share, for srm)

comparison config
  engine            posthog (default) | growthbook: relative effects over |control mean|,
                    impossible sums computed as given, GrowthBook's CUPED variance,
                    uninformative results on failure
  baseline_key      control variant (default "control", else the first)
  difference_type   relative (default; fraction) | absolute (metric unit)
  alpha             significance level, fraction (default 0.05)
  ci_level          Bayesian credible level, fraction (default 0.95, or 1 - alpha)
  goal              increase (default) | decrease     lower_is_better  true|false
  abs_denominator   true: divide relative effects by |control mean|
  cuped_theta       fixed theta for cuped / cuped_ratio variants (default: estimated)
  prior             Bayesian proper prior {mean, stddev} or {mean, variance} (default flat)
  prior_type        relative (default) | absolute: prior's scale (GrowthBook engine only)
  sequential_testing_enabled    true: always-valid test (frequentist)
  sequential_tuning_parameter   N*, expected total sample (default 5000)
  sequential_rho    rho given instead of derived from N* and alpha
  alternative       two-sided (default) | greater | less (also with sequential testing)
  correction        holm | benjamini_hochberg across this call's variants (two-sided)

comparison output: {method, engine, difference_type, baseline: {key, number_of_samples, mean},
  variant_results: [{key, number_of_samples, mean (unadjusted), method,
    point_estimate (effect), standard_error, p_value, confidence_interval, degrees_of_freedom,
    significant, sequential, alternative, sequential_tuning_parameter, rho,
    posterior_sd, chance_to_win (probability), credible_interval, risk ([keep control,
    ship treatment], effect unit), cuped_theta, cuped {theta, theta_source, adjusted,
    treatment|control {unadjusted_mean, adjusted_mean, adjusted_variance (per unit),
    adjusted_stddev, unadjusted_variance, variance_reduction (fraction)}},
    p_value_adjusted, confidence_interval_adjusted, significant_adjusted, error}]}
  Intervals and effects share the effect's unit; one-sided intervals end in "Infinity".

srm: config engine, threshold (default 0.001) -> {keys, p_value, chi_squared, expected, mismatch}
  (PostHog engine: p_value null under 100 exposures, with reason)
holm | benjamini_hochberg: config p_values, lifts (fractions), alpha
  -> {adjusted_p_values, adjusted_confidence_intervals (with lifts; GrowthBook's)}
sample_size: config kind (funnel|conversion|proportion, count|mean_count, sum|mean|
  mean_sum_or_avg, ratio|retention), baseline (fraction for funnels; not for ratio),
  baseline_stats (ratio: number_of_samples, sum, sum_squares, denominator_sum,
  denominator_sum_squares, numerator_denominator_sum_product), mde (relative fraction,
  default 0.3), variants (default 2), exposures_per_day
  -> {kind, baseline, variance (per unit), per_variant, total, running_time_days (days)}
power: config metric_type (mean with mean, standard_deviation | binomial with conversion_rate),
  effect_size (relative fraction), users (total, a number or a list), variations (default 2),
  alpha, target_power (default 0.8), sequential_tuning_parameter (sequential design)
  -> {power (probability), mde (relative fraction), mde_error} or {results: [{users, power, mde}]}
`;

/** Runs the command with `io` (default: the process's stdin, stdout and stderr); returns the exit code. */
export async function run(argv: string[], io: CommandIo = PROCESS_IO): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(USAGE);
    return 0;
  }
  if (argv.length > 1) {
    io.err(`switchyard stats: one input at most\n${USAGE}`);
    return 2;
  }
  const source = argv[0] ?? '-';
  let text: string;
  try {
    text = source === '-' ? io.readStdin() : fs.readFileSync(source, 'utf8');
  } catch (e) {
    io.err(`switchyard stats: cannot read ${source}: ${(e as Error).message}\n`);
    return 2;
  }
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (e) {
    io.err(`switchyard stats: the input is not JSON: ${(e as Error).message}\n`);
    return 2;
  }
  try {
    io.out(`${JSON.stringify(analyze(input), (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v), 2)}\n`);
    return 0;
  } catch (e) {
    if (e instanceof InputError) {
      io.err(`switchyard stats: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}
