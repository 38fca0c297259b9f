/**
 * Which engine's definitions a computation follows where PostHog and GrowthBook differ
 * (docs/statistics.md "Engines"): `posthog` (the default) or `growthbook` (config
 * `engine: "growthbook"`). Under `growthbook`: relative effects divide by |control mean|,
 * impossible sufficient statistics are computed as given (GrowthBook then reports its
 * zero-or-negative-variance result), CUPED uses GrowthBook's regression-adjusted relative
 * variance and population moments for 0/1 data, failed comparisons return GrowthBook's
 * uninformative result, and SRM is computed below 100 exposures.
 */
import { InputError } from './errors.js';

/** The engine a computation follows. */
export type Engine = 'posthog' | 'growthbook';

/** Reads `config.engine` (default `posthog`). @throws InputError for any other value. */
export function engineOf(config: Record<string, unknown>): Engine {
  const e = config.engine ?? 'posthog';
  if (e !== 'posthog' && e !== 'growthbook') throw new InputError('config.engine must be posthog or growthbook.');
  return e;
}
