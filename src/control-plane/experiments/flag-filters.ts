/**
 * The feature-flag filters an experiment asks of its flag (research posthog-management-api.md
 * §3.2 step 3 and §3.4): its variants (PostHog's control/test default, or the parameters'
 * `feature_flag_variants` with percentages filled in evenly), its rollout, aggregation group and
 * holdout. Pure.
 */
import type { JsonObject } from '../../json-shapes.js';
import { isJsonObject } from '../../json-shapes.js';
import type { holdoutFilters } from './holdouts.js';

type Obj = JsonObject;

/** Variants of a flag created for an experiment without any (research §3.2 step 3). */
export const DEFAULT_VARIANTS: readonly Readonly<Record<string, unknown>>[] = Object.freeze([
  { key: 'control', name: 'Control Group', rollout_percentage: 50 },
  { key: 'test', name: 'Test Variant', rollout_percentage: 50 },
]);

/** Variants as the flag stores them: percentages filled in evenly when none were given. */
function flagVariants(params: Obj | null | undefined): Obj[] {
  const given = params?.feature_flag_variants;
  if (!Array.isArray(given) || given.length === 0) return DEFAULT_VARIANTS.map((v) => ({ ...v }));
  const variants = (given as Obj[]).map((v) => ({ ...v }));
  if (variants.every((v) => typeof v.rollout_percentage !== 'number')) {
    const share = Math.floor(100 / variants.length);
    variants.forEach((v, i) => { v.rollout_percentage = share + (i === 0 ? 100 - share * variants.length : 0); });
  }
  return variants;
}

/** The variant keys of a flag's filters (empty when it is not multivariate). */
export function variantKeys(filters: Obj): string[] {
  const variants = (filters.multivariate as Obj | null | undefined)?.variants;
  return Array.isArray(variants) ? (variants as Obj[]).map((v) => String(v.key)) : [];
}

/** The flag filters an experiment's parameters and holdout ask for. */
export function experimentFlagFilters(base: Obj, params: Obj | null | undefined, holdout: ReturnType<typeof holdoutFilters>): Obj {
  const rollout = typeof params?.rollout_percentage === 'number' ? params.rollout_percentage : 100;
  const groups = Array.isArray(base.groups) && base.groups.length > 0 ? structuredClone(base.groups) as Obj[] : [{ properties: [], rollout_percentage: rollout }];
  if (typeof params?.rollout_percentage === 'number' && isJsonObject(groups[0])) groups[0].rollout_percentage = params.rollout_percentage;
  return {
    ...base, groups,
    multivariate: { variants: flagVariants(params) },
    aggregation_group_type_index: params?.aggregation_group_type_index ?? null,
    ...holdout,
  };
}
