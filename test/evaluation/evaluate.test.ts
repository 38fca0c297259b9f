/**
 * evaluateFlags, table-driven. Expected answers come from the rules in
 * research/posthog-flag-evaluation.md §2–§4 and from hashes whose values the PostHog vectors pin
 * (test/evaluation/vectors/harness-hash_sha1_60_v1.json), never from this implementation:
 *   rollout  "beta-search."         + "user-17"   → 0.00910  (in at 1 %, out at 0 %)
 *   rollout  "beta-search-rollout." + "user-105"  → 0.28513  (out at 28 %, in at 29 %)
 *   variant  "checkout-layout."     + "user-61"   → 0.56983  (50/25/25 → "compact")
 *   holdout  "holdout-"             + "user-31"   → 0.01947  (member at 10 %, not at 1 %)
 *   rollout  "org-dashboard."       + "42"        → 0.59975  (in at 60 %, out at 59 %)
 *   rollout  "beta-search."         + 200 × "a"   → 0.10748  (in at 11 %, out at 10 %)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  compileProject, evaluateFlags, type CohortDefinition, type EvaluationRequest, type FlagDefinition, type StoredContext,
} from '../../src/evaluation/index.js';
import { flag, loadVector } from './support.js';

interface Expect {
  enabled?: boolean;
  variant?: string | null;
  code?: string;
  index?: number | null;
  payload?: string | null;
  description?: string;
  failed?: boolean;
}

interface Case {
  name: string;
  flags: FlagDefinition[];
  cohorts?: Record<string, CohortDefinition>;
  mapping?: Record<string, string>;
  req: Partial<EvaluationRequest>;
  stored?: StoredContext;
  /** Per flag key: the expected entry, or 'absent' when it must not be in the response. */
  expect: Record<string, Expect | 'absent'>;
  errors?: boolean;
}

const MV = { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'compact', rollout_percentage: 25 }, { key: 'spacious', rollout_percentage: 25 }] };
const exact = (key: string, value: unknown, extra: Record<string, unknown> = {}) => ({ key, value, operator: 'exact', type: 'person', ...extra });
const dep = (key: string | number, value: unknown, extra: Record<string, unknown> = {}) =>
  ({ key: String(key), type: 'flag', operator: 'flag_evaluates_to', value, ...extra });

const cases: Case[] = [
  // Reasons and indexes.
  { name: 'condition_match with the boolean payload',
    flags: [flag('f', { groups: [{ properties: [exact('plan', 'pro')] }], payloads: { true: '{"a":1}' } })],
    req: { distinct_id: 'u', person_properties: { plan: 'pro' } },
    expect: { f: { enabled: true, variant: null, code: 'condition_match', index: 0, payload: '{"a":1}', description: 'Matched condition set 1' } } },
  { name: 'second set matches → index 1, description counts from 1',
    flags: [flag('f', { groups: [{ properties: [exact('plan', 'x')] }, { properties: [exact('plan', 'pro')] }] })],
    req: { distinct_id: 'u', person_properties: { plan: 'pro' } },
    expect: { f: { enabled: true, code: 'condition_match', index: 1, description: 'Matched condition set 2' } } },
  { name: 'no_condition_match, payload withheld',
    flags: [flag('f', { groups: [{ properties: [exact('plan', 'pro')] }], payloads: { true: '1' } })],
    req: { distinct_id: 'u', person_properties: { plan: 'free' } },
    expect: { f: { enabled: false, variant: null, code: 'no_condition_match', index: 0, payload: null, description: 'No matching condition set' } } },
  { name: 'out_of_rollout_bound at 28 % (hash 0.2851)',
    flags: [flag('beta-search-rollout', { groups: [{ properties: [], rollout_percentage: 28 }] })],
    req: { distinct_id: 'user-105' },
    expect: { 'beta-search-rollout': { enabled: false, code: 'out_of_rollout_bound', index: 0, description: 'Out of rollout bound' } } },
  { name: 'inside rollout at 29 %',
    flags: [flag('beta-search-rollout', { groups: [{ properties: [], rollout_percentage: 29 }] })],
    req: { distinct_id: 'user-105' },
    expect: { 'beta-search-rollout': { enabled: true, code: 'condition_match', index: 0 } } },
  { name: '0 % excludes a non-zero hash', flags: [flag('beta-search', { groups: [{ rollout_percentage: 0 }] })],
    req: { distinct_id: 'user-17' }, expect: { 'beta-search': { enabled: false, code: 'out_of_rollout_bound', index: 0 } } },
  { name: '1 % includes hash 0.0091', flags: [flag('beta-search', { groups: [{ rollout_percentage: 1 }] })],
    req: { distinct_id: 'user-17' }, expect: { 'beta-search': { enabled: true, code: 'condition_match' } } },
  { name: 'null rollout means 100 %', flags: [flag('beta-search', { groups: [{ properties: [], rollout_percentage: null }] })],
    req: { distinct_id: 'user-17' }, expect: { 'beta-search': { enabled: true, code: 'condition_match' } } },
  { name: 'zero condition sets → no_group_type, index null',
    flags: [flag('f', { groups: [] })], req: { distinct_id: 'u' },
    expect: { f: { enabled: false, code: 'no_group_type', index: null, description: 'No group type' } } },

  // Priority: ≥ replaces, so ties go to the later set.
  { name: 'priority: out_of_rollout (3) beats a later no_condition_match (2)',
    flags: [flag('beta-search-rollout', { groups: [{ rollout_percentage: 28 }, { properties: [exact('plan', 'pro')] }] })],
    req: { distinct_id: 'user-105' }, expect: { 'beta-search-rollout': { code: 'out_of_rollout_bound', index: 0 } } },
  { name: 'priority: a later out_of_rollout replaces no_condition_match',
    flags: [flag('beta-search-rollout', { groups: [{ properties: [exact('plan', 'pro')] }, { rollout_percentage: 28 }] })],
    req: { distinct_id: 'user-105' }, expect: { 'beta-search-rollout': { code: 'out_of_rollout_bound', index: 1 } } },
  { name: 'tie: two no_condition_match → the later index',
    flags: [flag('f', { groups: [{ properties: [exact('plan', 'a')] }, { properties: [exact('plan', 'b')] }] })],
    req: { distinct_id: 'u' }, expect: { f: { code: 'no_condition_match', index: 1 } } },
  { name: 'tie: two out_of_rollout → the later index',
    flags: [flag('beta-search-rollout', { groups: [{ rollout_percentage: 10 }, { rollout_percentage: 28 }] })],
    req: { distinct_id: 'user-105' }, expect: { 'beta-search-rollout': { code: 'out_of_rollout_bound', index: 1 } } },

  // Variants and payloads.
  { name: 'hashed variant (0.5698 → compact) with its payload',
    flags: [flag('checkout-layout', { groups: [{ rollout_percentage: 100 }], multivariate: MV, payloads: { compact: '"c"', true: '"t"' } })],
    req: { distinct_id: 'user-61' },
    expect: { 'checkout-layout': { enabled: true, variant: 'compact', code: 'condition_match', index: 0, payload: '"c"' } } },
  { name: 'valid variant override wins',
    flags: [flag('checkout-layout', { groups: [{ variant: 'spacious' }], multivariate: MV, payloads: { spacious: '"s"' } })],
    req: { distinct_id: 'user-61' }, expect: { 'checkout-layout': { variant: 'spacious', payload: '"s"' } } },
  { name: 'override naming no declared variant is ignored',
    flags: [flag('checkout-layout', { groups: [{ variant: 'nope' }], multivariate: MV })],
    req: { distinct_id: 'user-61' }, expect: { 'checkout-layout': { variant: 'compact' } } },
  { name: 'override on a boolean flag is ignored',
    flags: [flag('f', { groups: [{ variant: 'x' }], payloads: { true: 't' } })],
    req: { distinct_id: 'u' }, expect: { f: { enabled: true, variant: null, payload: 't' } } },
  { name: 'shares below 100 leave the hash unassigned → plain true (0.5698 ≥ 0.5)',
    flags: [flag('checkout-layout', { groups: [{}], multivariate: { variants: [{ key: 'only', rollout_percentage: 50 }] }, payloads: { true: 'T' } })],
    req: { distinct_id: 'user-61' }, expect: { 'checkout-layout': { enabled: true, variant: null, payload: 'T' } } },

  // Identifiers: empty, truncated, group keys, device id.
  { name: 'empty distinct_id: hash 0.0, in at 0 %, first variant with a share (Rust)',
    flags: [flag('beta-search', { groups: [{ rollout_percentage: 0 }], multivariate: { variants: [{ key: 'zero', rollout_percentage: 0 }, { key: 'first', rollout_percentage: 50 }, { key: 'second', rollout_percentage: 50 }] } })],
    req: { distinct_id: '' }, expect: { 'beta-search': { enabled: true, variant: 'first', code: 'condition_match' } } },
  { name: 'distinct_id truncated to 200 scalars: 205 × "a" hashes as 200 × "a" (0.1075, in at 11 %)',
    flags: [flag('beta-search', { groups: [{ rollout_percentage: 11 }] })],
    req: { distinct_id: 'a'.repeat(205) }, expect: { 'beta-search': { enabled: true } } },
  { name: 'distinct_id truncated: out at 10 %',
    flags: [flag('beta-search', { groups: [{ rollout_percentage: 10 }] })],
    req: { distinct_id: 'a'.repeat(205) }, expect: { 'beta-search': { enabled: false, code: 'out_of_rollout_bound' } } },
  { name: 'integer group key 42 → "42" (0.5997, in at 60 %)',
    flags: [flag('org-dashboard', { aggregation_group_type_index: 0, groups: [{ rollout_percentage: 60 }] })],
    req: { distinct_id: 'u', groups: { company: 42 } }, expect: { 'org-dashboard': { enabled: true, code: 'condition_match' } } },
  { name: 'group key "42" out at 59 %',
    flags: [flag('org-dashboard', { aggregation_group_type_index: 0, groups: [{ rollout_percentage: 59 }] })],
    req: { distinct_id: 'u', groups: { company: '42' } }, expect: { 'org-dashboard': { enabled: false, code: 'out_of_rollout_bound', index: 0 } } },
  { name: 'group flag without its group → no_group_type with the last set index (Rust get_match)',
    flags: [flag('g', { aggregation_group_type_index: 0, groups: [{}, { rollout_percentage: 50 }] })],
    req: { distinct_id: 'u', groups: { other: 'x' } }, expect: { g: { enabled: false, code: 'no_group_type', index: 1 } } },
  { name: 'group key of a non-string, non-number type counts as missing',
    flags: [flag('g', { aggregation_group_type_index: 0, groups: [{}] })],
    req: { distinct_id: 'u', groups: { company: true } }, expect: { g: { code: 'no_group_type', index: 0 } } },
  { name: 'empty-string group key counts as missing',
    flags: [flag('g', { aggregation_group_type_index: 0, groups: [{}] })],
    req: { distinct_id: 'u', groups: { company: '' } }, expect: { g: { code: 'no_group_type', index: 0 } } },
  { name: 'group index absent from the mapping → no_group_type',
    flags: [flag('g', { aggregation_group_type_index: 3, groups: [{}] })],
    req: { distinct_id: 'u', groups: { company: 'acme' } }, expect: { g: { code: 'no_group_type' } } },
  { name: 'group flags ignore bucketing_identifier',
    flags: [flag('org-dashboard', { aggregation_group_type_index: 0, groups: [{ rollout_percentage: 60 }] }, { bucketing_identifier: 'device_id' })],
    req: { distinct_id: 'u', groups: { company: 42 } }, expect: { 'org-dashboard': { enabled: true } } },
  { name: 'device_id bucketing uses $device_id (0.2851 out at 28 %)',
    flags: [flag('beta-search-rollout', { groups: [{ rollout_percentage: 28 }] }, { bucketing_identifier: 'device_id' })],
    req: { distinct_id: 'user-17', device_id: 'user-105' }, expect: { 'beta-search-rollout': { enabled: false, code: 'out_of_rollout_bound' } } },
  { name: 'device_id bucketing falls back to person_properties.$device_id (in at 29 %)',
    flags: [flag('beta-search-rollout', { groups: [{ rollout_percentage: 29 }] }, { bucketing_identifier: 'device_id' })],
    req: { distinct_id: 'nobody', person_properties: { $device_id: 'user-105' } }, expect: { 'beta-search-rollout': { enabled: true } } },
  { name: 'device_id flag without $device_id: partial rollout → out_of_rollout_bound, never distinct_id',
    flags: [flag('beta-search', { groups: [{ rollout_percentage: 50 }] }, { bucketing_identifier: 'device_id' })],
    req: { distinct_id: 'user-17' }, expect: { 'beta-search': { enabled: false, code: 'out_of_rollout_bound', index: 0 } } },
  { name: 'device_id flag without $device_id: a hash-independent 100 % set still matches',
    flags: [flag('f', { groups: [{ properties: [exact('plan', 'pro')], rollout_percentage: 100 }] }, { bucketing_identifier: 'device_id' })],
    req: { distinct_id: 'u', person_properties: { plan: 'pro' } }, expect: { f: { enabled: true, code: 'condition_match' } } },
  { name: 'device_id flag without $device_id: 100 % but hash-dependent variants → out_of_rollout_bound',
    flags: [flag('f', { groups: [{}], multivariate: MV }, { bucketing_identifier: 'device_id' })],
    req: { distinct_id: 'u' }, expect: { f: { enabled: false, code: 'out_of_rollout_bound' } } },

  // Mixed per-condition aggregation.
  { name: 'mixed: skipped group set then failing person set → no_condition_match idx 1, groups-skipped description',
    flags: [flag('m', { groups: [{ aggregation_group_type_index: 0 }, { aggregation_group_type_index: null, properties: [exact('plan', 'pro')] }] })],
    req: { distinct_id: 'u' },
    expect: { m: { enabled: false, code: 'no_condition_match', index: 1,
      description: 'No matching condition set (group conditions were not evaluated because no group type was provided)' } } },
  { name: 'mixed: failing person set then skipped group set keeps index 0 (no_group_type scores lower)',
    flags: [flag('m', { groups: [{ properties: [exact('plan', 'pro')] }, { aggregation_group_type_index: 0 }] })],
    req: { distinct_id: 'u' }, expect: { m: { code: 'no_condition_match', index: 0 } } },
  { name: 'mixed: only group sets, all skipped → no_group_type with the last index',
    flags: [flag('m', { groups: [{ aggregation_group_type_index: 0 }, { aggregation_group_type_index: 0 }] })],
    req: { distinct_id: 'u' }, expect: { m: { code: 'no_group_type', index: 1 } } },
  { name: 'mixed: group set with its group matches',
    flags: [flag('m', { groups: [{ properties: [exact('plan', 'pro')] }, { aggregation_group_type_index: 0 }] })],
    req: { distinct_id: 'u', groups: { company: 'acme' } }, expect: { m: { enabled: true, index: 1 } } },

  // Early access.
  { name: 'feature_enrollment true → super_condition_value idx 0 with the "true" payload',
    flags: [flag('beta', { feature_enrollment: true, groups: [{ rollout_percentage: 0 }], payloads: { true: 'P' } })],
    req: { distinct_id: 'user-17', person_properties: { '$feature_enrollment/beta': true } },
    expect: { beta: { enabled: true, variant: null, code: 'super_condition_value', index: 0, payload: 'P', description: 'Super condition value' } } },
  { name: 'feature_enrollment "false" → disabled, still super_condition_value and payload',
    flags: [flag('beta', { feature_enrollment: true, groups: [{}], payloads: { true: 'P' } })],
    req: { distinct_id: 'u', person_properties: { '$feature_enrollment/beta': 'false' } },
    expect: { beta: { enabled: false, code: 'super_condition_value', index: 0, payload: 'P' } } },
  { name: 'feature_enrollment property absent → normal conditions',
    flags: [flag('beta', { feature_enrollment: true, groups: [{ properties: [exact('plan', 'pro')] }] })],
    req: { distinct_id: 'u' }, expect: { beta: { enabled: false, code: 'no_condition_match', index: 0 } } },
  { name: 'legacy super_groups: key present → its set decides, super_condition_value',
    flags: [flag('beta', { super_groups: [{ properties: [exact('$feature_enrollment/beta', ['true'])], rollout_percentage: 100 }], groups: [{ rollout_percentage: 0 }] })],
    req: { distinct_id: 'user-17', person_properties: { '$feature_enrollment/beta': 'true' } },
    expect: { beta: { enabled: true, code: 'super_condition_value', index: 0 } } },
  { name: 'legacy super_groups: key present but not matching → disabled super_condition_value',
    flags: [flag('beta', { super_groups: [{ properties: [exact('$feature_enrollment/beta', ['true'])] }], groups: [{}] })],
    req: { distinct_id: 'u', person_properties: { '$feature_enrollment/beta': 'false' } },
    expect: { beta: { enabled: false, code: 'super_condition_value', index: 0 } } },
  { name: 'legacy super_groups: key absent → normal conditions',
    flags: [flag('beta', { super_groups: [{ properties: [exact('$feature_enrollment/beta', ['true'])] }], groups: [{}] })],
    req: { distinct_id: 'u' }, expect: { beta: { enabled: true, code: 'condition_match' } } },

  // Holdouts.
  { name: 'holdout member (0.0195 ≤ 10 %) → holdout-5, index null, its payload',
    flags: [flag('exp', { holdout: { id: 5, exclusion_percentage: 10 }, groups: [{}], multivariate: MV, payloads: { 'holdout-5': 'H' } })],
    req: { distinct_id: 'user-31' },
    expect: { exp: { enabled: true, variant: 'holdout-5', code: 'holdout_condition_value', index: null, payload: 'H', description: 'Holdout condition value' } } },
  { name: 'holdout non-member (1 %) → normal evaluation',
    flags: [flag('exp', { holdout: { id: 5, exclusion_percentage: 1 }, groups: [{ properties: [exact('plan', 'pro')] }] })],
    req: { distinct_id: 'user-31' }, expect: { exp: { enabled: false, code: 'no_condition_match' } } },
  { name: 'holdout percentage clamps to 100: everyone',
    flags: [flag('exp', { holdout: { id: 2, exclusion_percentage: 150 }, groups: [{}] })],
    req: { distinct_id: 'anyone' }, expect: { exp: { variant: 'holdout-2', code: 'holdout_condition_value' } } },
  { name: 'holdout ignores the stored hash-key override (continuity flag)',
    flags: [flag('exp', { holdout: { id: 5, exclusion_percentage: 10 }, groups: [{}] }, { ensure_experience_continuity: true })],
    req: { distinct_id: 'user-31' }, stored: { hash_key_overrides: { exp: 'someone-else' } },
    expect: { exp: { code: 'holdout_condition_value' } } },
  { name: 'holdout on a group flag hashes the group key',
    flags: [flag('exp', { aggregation_group_type_index: 0, holdout: { id: 5, exclusion_percentage: 10 }, groups: [{}] })],
    req: { distinct_id: 'x', groups: { company: 'user-31' } }, expect: { exp: { code: 'holdout_condition_value' } } },
  { name: 'legacy holdout_groups: member gets its variant',
    flags: [flag('exp', { holdout_groups: [{ properties: [], rollout_percentage: 10, variant: 'holdout-1' }], groups: [{}] })],
    req: { distinct_id: 'user-31' }, expect: { exp: { enabled: true, variant: 'holdout-1', code: 'holdout_condition_value', index: null } } },
  { name: 'legacy holdout_groups without variant on a boolean flag → "holdout"',
    flags: [flag('exp', { holdout_groups: [{ properties: [], rollout_percentage: 10 }], groups: [{}] })],
    req: { distinct_id: 'user-31' }, expect: { exp: { variant: 'holdout' } } },
  { name: 'legacy holdout_groups with properties → no holdout',
    flags: [flag('exp', { holdout_groups: [{ properties: [exact('plan', 'x')], rollout_percentage: 100 }], groups: [{}] })],
    req: { distinct_id: 'user-31' }, expect: { exp: { code: 'condition_match', variant: null } } },

  // Experience continuity.
  { name: 'continuity: the stored hash-key override is the identifier (0.2851 out at 28 %)',
    flags: [flag('beta-search-rollout', { groups: [{ rollout_percentage: 28 }] }, { ensure_experience_continuity: true })],
    req: { distinct_id: 'user-17' }, stored: { hash_key_overrides: { 'beta-search-rollout': 'user-105' } },
    expect: { 'beta-search-rollout': { enabled: false, code: 'out_of_rollout_bound' } } },
  { name: 'continuity: $anon_distinct_id when there is no override (in at 29 %)',
    flags: [flag('beta-search-rollout', { groups: [{ rollout_percentage: 29 }] }, { ensure_experience_continuity: true })],
    req: { distinct_id: 'someone', anon_distinct_id: 'user-105' },
    expect: { 'beta-search-rollout': { enabled: true } } },
  { name: 'continuity: override wins over $anon_distinct_id',
    flags: [flag('beta-search', { groups: [{ rollout_percentage: 1 }] }, { ensure_experience_continuity: true })],
    req: { distinct_id: 'x', anon_distinct_id: 'user-105' }, stored: { hash_key_overrides: { 'beta-search': 'user-17' } },
    expect: { 'beta-search': { enabled: true } } },
  { name: 'no continuity: $anon_distinct_id is ignored',
    flags: [flag('beta-search', { groups: [{ rollout_percentage: 1 }] })],
    req: { distinct_id: 'user-17', anon_distinct_id: 'user-105' },
    expect: { 'beta-search': { enabled: true } } },
  { name: 'a stored override applies whatever the continuity setting (Rust hashed_identifier)',
    flags: [flag('beta-search', { groups: [{ rollout_percentage: 1 }] })],
    req: { distinct_id: 'user-105' }, stored: { hash_key_overrides: { 'beta-search': 'user-17' } },
    expect: { 'beta-search': { enabled: true } } },
  { name: 'device-id flag: holdout falls back to distinct_id without $device_id',
    flags: [flag('exp', { holdout: { id: 5, exclusion_percentage: 10 }, groups: [{}] }, { bucketing_identifier: 'device_id' })],
    req: { distinct_id: 'user-31' }, expect: { exp: { code: 'holdout_condition_value' } } },
  { name: 'override lookup failed → continuity flags fail, others evaluate',
    flags: [flag('c', { groups: [{}] }, { ensure_experience_continuity: true }), flag('n', { groups: [{}] })],
    req: { distinct_id: 'u' }, stored: { hash_key_overrides_failed: true },
    expect: { c: { failed: true, enabled: false, code: 'hash_key_override_error', index: null, payload: null }, n: { enabled: true } },
    errors: true },

  // Failed flags never spoil the others.
  { name: 'new rule format (filters.version 2) → failed flag_data_parsing_error; sibling fine',
    flags: [flag('v2', { version: 2, groups: [{}] }), flag('ok', { groups: [{}] })],
    req: { distinct_id: 'u' },
    expect: { v2: { failed: true, enabled: false, variant: null, code: 'flag_data_parsing_error', index: null, payload: null,
      description: 'Failed to parse flag data: unsupported feature flag configuration format' }, ok: { enabled: true } },
    errors: true },
  { name: 'unknown operator → failed flag_data_parsing_error',
    flags: [flag('bad', { groups: [{ properties: [{ key: 'a', value: 1, operator: 'frobnicates', type: 'person' }] }] }), flag('ok', { groups: [{}] })],
    req: { distinct_id: 'u' }, expect: { bad: { failed: true, code: 'flag_data_parsing_error' }, ok: { enabled: true } }, errors: true },
  { name: 'malformed rollout → failed', flags: [flag('bad', { groups: [{ rollout_percentage: 'ten' as unknown as number }] })],
    req: { distinct_id: 'u' }, expect: { bad: { failed: true, code: 'flag_data_parsing_error' } }, errors: true },
  { name: 'an inactive failed flag is simply omitted', flags: [flag('bad', { version: 2 }, { active: false })],
    req: { distinct_id: 'u' }, expect: { bad: 'absent' }, errors: false },

  // Flag dependencies.
  { name: 'dependency declared later is evaluated first (stored id form)',
    flags: [flag('child', { groups: [{ properties: [dep(501, true)] }] }), flag('parent', { groups: [{}] }, { id: 501 })],
    req: { distinct_id: 'u' }, expect: { child: { enabled: true, code: 'condition_match' }, parent: { enabled: true } } },
  { name: 'dependency by flag key (feed form with dependency_chain)',
    flags: [flag('parent', { groups: [{ properties: [exact('plan', 'pro')] }] }), flag('child', { groups: [{ properties: [dep('parent', false, { dependency_chain: ['parent', 'child'] })] }] })],
    req: { distinct_id: 'u' }, expect: { child: { enabled: true } } },
  { name: 'dependency on a variant value',
    flags: [flag('checkout-layout', { groups: [{}], multivariate: MV }), flag('a', { groups: [{ properties: [dep('checkout-layout', 'compact', { dependency_chain: [] })] }] }),
      flag('b', { groups: [{ properties: [dep('checkout-layout', 'spacious', { dependency_chain: [] })] }] }),
      flag('c', { groups: [{ properties: [dep('checkout-layout', true, { dependency_chain: [] })] }] })],
    req: { distinct_id: 'user-61' }, expect: { a: { enabled: true }, b: { enabled: false, code: 'no_condition_match' }, c: { enabled: true } } },
  { name: 'dependency filter with another operator never matches',
    flags: [flag('p', { groups: [{}] }, { id: 601 }), flag('c', { groups: [{ properties: [dep(601, true, { operator: 'exact' })] }] })],
    req: { distinct_id: 'u' }, expect: { c: { enabled: false, code: 'no_condition_match' } } },
  { name: 'missing dependency → false / missing_dependency / null (not an error)',
    flags: [flag('c', { groups: [{ properties: [dep(987654, true)] }] })],
    req: { distinct_id: 'u' },
    expect: { c: { enabled: false, code: 'missing_dependency', index: null, description: 'Flag cannot be evaluated due to missing dependency' } }, errors: false },
  { name: 'cycle a→b→a and a dependent of the cycle → missing_dependency',
    flags: [flag('a', { groups: [{ properties: [dep(702, true)] }] }, { id: 701 }), flag('b', { groups: [{ properties: [dep(701, true)] }] }, { id: 702 }),
      flag('c', { groups: [{ properties: [dep(701, true)] }] }), flag('d', { groups: [{}] })],
    req: { distinct_id: 'u' },
    expect: { a: { code: 'missing_dependency' }, b: { code: 'missing_dependency' }, c: { code: 'missing_dependency' }, d: { enabled: true } } },
  { name: 'self-dependency → missing_dependency',
    flags: [flag('s', { groups: [{ properties: [dep(801, true)] }] }, { id: 801 })],
    req: { distinct_id: 'u' }, expect: { s: { code: 'missing_dependency' } } },
  { name: 'dependency on an inactive flag reads false (and the inactive flag is omitted)',
    flags: [flag('off', { groups: [{}] }, { id: 901, active: false }), flag('c', { groups: [{ properties: [dep(901, false)] }] })],
    req: { distinct_id: 'u' }, expect: { off: 'absent', c: { enabled: true } } },
  { name: 'dependency filtered out by runtime reads false',
    flags: [flag('srv', { groups: [{}] }, { id: 911, evaluation_runtime: 'server' }), flag('c', { groups: [{ properties: [dep(911, true)] }] })],
    req: { distinct_id: 'u', runtime: 'client' }, expect: { srv: 'absent', c: { enabled: false, code: 'no_condition_match' } } },

  // Cohorts.
  { name: 'cohort nested OR of ANDs: member',
    cohorts: { 1: { type: 'OR', values: [{ type: 'AND', values: [exact('plan', 'pro')] }, { type: 'AND', values: [exact('plan', 'enterprise')] }] } },
    flags: [flag('c', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 1 }] }] })],
    req: { distinct_id: 'u', person_properties: { plan: 'enterprise' } }, expect: { c: { enabled: true } } },
  { name: 'cohort nested OR of ANDs: non-member',
    cohorts: { 1: { type: 'OR', values: [{ type: 'AND', values: [exact('plan', 'pro')] }, { type: 'AND', values: [exact('plan', 'enterprise')] }] } },
    flags: [flag('c', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 1 }] }] })],
    req: { distinct_id: 'u', person_properties: { plan: 'free' } }, expect: { c: { enabled: false, code: 'no_condition_match' } } },
  { name: 'not_in inverts membership',
    cohorts: { 1: { type: 'AND', values: [exact('plan', 'pro')] } },
    flags: [flag('c', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 1, operator: 'not_in' }] }] })],
    req: { distinct_id: 'u', person_properties: { plan: 'free' } }, expect: { c: { enabled: true } } },
  { name: 'negated leaf',
    cohorts: { 2: { type: 'AND', values: [exact('plan', 'free', { negation: true }), exact('country', 'US')] } },
    flags: [flag('c', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: '2' }] }] })],
    req: { distinct_id: 'u', person_properties: { plan: 'pro', country: 'US' } }, expect: { c: { enabled: true } } },
  { name: 'negated leaf on a missing property: exact → false, negated → true',
    cohorts: { 2: { type: 'AND', values: [exact('plan', 'free', { negation: true })] } },
    flags: [flag('c', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 2 }] }] })],
    req: { distinct_id: 'u' }, expect: { c: { enabled: true } } },
  { name: 'cohort referencing a cohort (Django {properties} wrapper)',
    cohorts: { 1: { type: 'AND', values: [exact('plan', 'pro')] }, 3: { properties: { type: 'AND', values: [{ key: 'id', type: 'cohort', value: 1 }, exact('country', 'US')] } } },
    flags: [flag('c', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 3 }] }] })],
    req: { distinct_id: 'u', person_properties: { plan: 'pro', country: 'US' } }, expect: { c: { enabled: true } } },
  { name: 'static cohort: membership from static_cohort_ids',
    cohorts: { 4: { type: 'AND', values: [], is_static: true } },
    flags: [flag('in', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 4 }] }] }), flag('out', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 99 }] }] })],
    req: { distinct_id: 'u' }, stored: { static_cohort_ids: new Set([4]) }, expect: { in: { enabled: true }, out: { enabled: false } } },
  { name: 'cohort absent from the feed is static: member via static ids',
    flags: [flag('c', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 77 }] }] })],
    req: { distinct_id: 'u' }, stored: { static_cohort_ids: new Set([77]) }, expect: { c: { enabled: true } } },
  { name: 'empty cohort group matches',
    cohorts: { 5: { type: 'OR', values: [] } },
    flags: [flag('c', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 5 }] }] })],
    req: { distinct_id: 'u' }, expect: { c: { enabled: true } } },
  { name: 'cyclic cohorts → failed cohort_filters_parsing_error; other flags fine',
    cohorts: { 6: { type: 'AND', values: [{ key: 'id', type: 'cohort', value: 7 }] }, 7: { type: 'AND', values: [{ key: 'id', type: 'cohort', value: 6 }] } },
    flags: [flag('c', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 6 }] }] }), flag('ok', { groups: [{}] })],
    req: { distinct_id: 'u' }, expect: { c: { failed: true, code: 'cohort_filters_parsing_error' }, ok: { enabled: true } }, errors: true },
  { name: 'cohort filters run after property filters: both must pass',
    cohorts: { 1: { type: 'AND', values: [exact('plan', 'pro')] } },
    flags: [flag('c', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 1 }, exact('country', 'US')] }] })],
    req: { distinct_id: 'u', person_properties: { plan: 'pro', country: 'FR' } }, expect: { c: { enabled: false, code: 'no_condition_match' } } },

  // Which property map a filter reads.
  { name: 'request person properties override stored ones',
    flags: [flag('f', { groups: [{ properties: [exact('plan', 'pro')] }] })],
    req: { distinct_id: 'u', person_properties: { plan: 'pro' } }, stored: { person_properties: { plan: 'free' } }, expect: { f: { enabled: true } } },
  { name: 'stored person properties are used when the request lacks the key',
    flags: [flag('f', { groups: [{ properties: [exact('plan', 'pro')] }] })],
    req: { distinct_id: 'u', person_properties: { other: 1 } }, stored: { person_properties: { plan: 'pro' } }, expect: { f: { enabled: true } } },
  { name: 'distinct_id is a person property',
    flags: [flag('f', { groups: [{ properties: [exact('distinct_id', 'user-1')] }] })],
    req: { distinct_id: 'user-1' }, expect: { f: { enabled: true } } },
  { name: '$initial_ properties are back-filled from the current ones',
    flags: [flag('f', { groups: [{ properties: [exact('$initial_browser', 'Chrome'), exact('$initial_utm_source', 'news')] }] })],
    req: { distinct_id: 'u', person_properties: { $browser: 'Chrome', utm_source: 'news' } }, expect: { f: { enabled: true } } },
  { name: 'an existing $initial_ property is kept',
    flags: [flag('f', { groups: [{ properties: [exact('$initial_browser', 'Chrome')] }] })],
    req: { distinct_id: 'u', person_properties: { $browser: 'Chrome', $initial_browser: 'Firefox' } }, expect: { f: { enabled: false } } },
  { name: 'group filter reads group properties plus $group_key; request overrides stored',
    flags: [flag('g', { aggregation_group_type_index: 0, groups: [{ properties: [
      { key: '$group_key', type: 'group', group_type_index: 0, operator: 'exact', value: 'acme' },
      { key: 'tier', type: 'group', group_type_index: 0, operator: 'exact', value: 'gold' },
      { key: 'size', type: 'group', group_type_index: 0, operator: 'exact', value: 'big' }] }] })],
    req: { distinct_id: 'u', groups: { company: 'acme' }, group_properties: { company: { tier: 'gold' } } },
    stored: { group_properties: { company: { tier: 'silver', size: 'big' } } }, expect: { g: { enabled: true } } },
  { name: 'group filter whose index is not mapped fails closed',
    flags: [flag('g', { groups: [{ properties: [{ key: 'tier', type: 'group', group_type_index: 9, operator: 'is_not', value: 'x' }] }] })],
    req: { distinct_id: 'u' }, expect: { g: { enabled: false, code: 'no_condition_match' } } },
  { name: 'person filter inside a group set still reads person properties',
    flags: [flag('g', { aggregation_group_type_index: 0, groups: [{ properties: [exact('plan', 'pro')] }] })],
    req: { distinct_id: 'u', groups: { company: 'acme' }, person_properties: { plan: 'pro' } }, expect: { g: { enabled: true } } },

  // Candidate set.
  { name: 'inactive and deleted flags are omitted',
    flags: [flag('off', { groups: [{}] }, { active: false }), flag('gone', { groups: [{}] }, { deleted: true }), flag('on', { groups: [{}] })],
    req: { distinct_id: 'u' }, expect: { off: 'absent', gone: 'absent', on: { enabled: true } } },
  { name: 'only_evaluate_survey_feature_flags keeps survey-targeting- keys',
    flags: [flag('survey-targeting-x', { groups: [{}] }), flag('other', { groups: [{}] })],
    req: { distinct_id: 'u', only_evaluate_survey_feature_flags: true }, expect: { 'survey-targeting-x': { enabled: true }, other: 'absent' } },
  { name: 'runtime client keeps client, all and unset',
    flags: [flag('c', { groups: [{}] }, { evaluation_runtime: 'client' }), flag('s', { groups: [{}] }, { evaluation_runtime: 'server' }),
      flag('a', { groups: [{}] }, { evaluation_runtime: 'all' }), flag('n', { groups: [{}] })],
    req: { distinct_id: 'u', runtime: 'client' }, expect: { c: { enabled: true }, s: 'absent', a: { enabled: true }, n: { enabled: true } } },
  { name: 'runtime server keeps server, all and unset',
    flags: [flag('c', { groups: [{}] }, { evaluation_runtime: 'client' }), flag('s', { groups: [{}] }, { evaluation_runtime: 'server' }), flag('n', { groups: [{}] })],
    req: { distinct_id: 'u', runtime: 'server' }, expect: { c: 'absent', s: { enabled: true }, n: { enabled: true } } },
  { name: 'undetermined runtime keeps only all and unset (unknown values count as all)',
    flags: [flag('c', { groups: [{}] }, { evaluation_runtime: 'client' }), flag('s', { groups: [{}] }, { evaluation_runtime: 'server' }),
      flag('weird', { groups: [{}] }, { evaluation_runtime: 'edge' }), flag('n', { groups: [{}] })],
    req: { distinct_id: 'u', runtime: null }, expect: { c: 'absent', s: 'absent', weird: { enabled: true }, n: { enabled: true } } },
  { name: "runtime 'all' (internal callers) keeps every runtime",
    flags: [flag('c', { groups: [{}] }, { evaluation_runtime: 'client' }), flag('s', { groups: [{}] }, { evaluation_runtime: 'server' })],
    req: { distinct_id: 'u', runtime: 'all' }, expect: { c: { enabled: true }, s: { enabled: true } } },
  { name: 'evaluation tags: tagged flag kept only when a tag matches a requested environment',
    flags: [flag('web', { groups: [{}] }, { evaluation_tags: ['web'] }), flag('mobile', { groups: [{}] }, { evaluation_tags: ['ios', 'android'] }), flag('any', { groups: [{}] })],
    req: { distinct_id: 'u', evaluation_environments: ['android'] }, expect: { web: 'absent', mobile: { enabled: true }, any: { enabled: true } } },
  { name: 'evaluation tags: a request without environments keeps only untagged flags',
    flags: [flag('web', { groups: [{}] }, { evaluation_tags: ['web'] }), flag('any', { groups: [{}] }, { evaluation_tags: [] })],
    req: { distinct_id: 'u' }, expect: { web: 'absent', any: { enabled: true } } },
  { name: 'flag_keys_to_evaluate keeps requested keys plus transitive dependencies',
    flags: [flag('root', { groups: [{}] }, { id: 1101 }), flag('mid', { groups: [{ properties: [dep(1101, true)] }] }, { id: 1102 }),
      flag('top', { groups: [{ properties: [dep(1102, true)] }] }), flag('unrelated', { groups: [{}] })],
    req: { distinct_id: 'u', flag_keys_to_evaluate: ['top', 'no-such-flag'] },
    expect: { top: { enabled: true }, mid: { enabled: true }, root: { enabled: true }, unrelated: 'absent' } },
  { name: 'flag_keys_to_evaluate: [] evaluates nothing',
    flags: [flag('a', { groups: [{}] })], req: { distinct_id: 'u', flag_keys_to_evaluate: [] }, expect: { a: 'absent' } },
];

for (const c of cases) {
  test(c.name, () => {
    const compiled = compileProject({ flags: c.flags, group_type_mapping: c.mapping ?? { 0: 'company' }, cohorts: c.cohorts ?? {} });
    const result = evaluateFlags(compiled, { distinct_id: 'u', ...c.req } as EvaluationRequest, c.stored ?? {}, Date.UTC(2026, 0, 1));
    for (const [key, e] of Object.entries(c.expect)) {
      const r = result.flags[key];
      if (e === 'absent') {
        assert.equal(r, undefined, `${key} must be omitted`);
        continue;
      }
      assert.ok(r, `${key} must be present`);
      assert.equal(r.key, key);
      if (e.enabled !== undefined) assert.equal(r.enabled, e.enabled, `${key}.enabled`);
      if (e.variant !== undefined) assert.equal(r.variant, e.variant, `${key}.variant`);
      if (e.code !== undefined) assert.equal(r.reason.code, e.code, `${key}.reason.code`);
      if (e.index !== undefined) assert.equal(r.reason.condition_index, e.index, `${key}.reason.condition_index`);
      if (e.description !== undefined) assert.equal(r.reason.description, e.description, `${key}.reason.description`);
      if (e.payload !== undefined) assert.equal(r.metadata.payload, e.payload, `${key}.metadata.payload`);
      assert.equal(r.failed, e.failed ? true : undefined, `${key}.failed`);
    }
    if (c.errors !== undefined) assert.equal(result.errorsWhileComputingFlags, c.errors, 'errorsWhileComputingFlags');
  });
}

test('metadata: id, version (null → 0), description = flag name', () => {
  const compiled = compileProject({
    flags: [flag('a', { groups: [{}] }, { id: 7, version: 3, name: 'About A' }), flag('b', { groups: [{}] }, { id: 8, version: null })],
    group_type_mapping: {}, cohorts: {},
  });
  const r = evaluateFlags(compiled, { distinct_id: 'u' }, {}, 0).flags;
  assert.deepEqual(r.a!.metadata, { id: 7, version: 3, payload: null, description: 'About A' });
  assert.deepEqual(r.b!.metadata, { id: 8, version: 0, payload: null, description: null });
});

for (const file of ['consistency-simple-flag-45pct.json', 'consistency-multivariate-flag-55pct.json']) {
  test(`consistency vector ${file}: 1000 distinct ids`, () => {
    const v = loadVector(file);
    const compiled = compileProject({ flags: [v.flag], group_type_mapping: {}, cohorts: {} });
    v.expected.forEach((expected: boolean | string, i: number) => {
      const r = evaluateFlags(compiled, { distinct_id: `distinct_id_${i}` }, {}, 0).flags[v.flag.key]!;
      assert.equal(r.variant ?? r.enabled, expected, `distinct_id_${i}`);
      assert.equal(r.reason.code, expected === false ? 'out_of_rollout_bound' : 'condition_match');
    });
  });
}

test('hash vectors end to end: every rollout check of the corpus through a one-set flag', () => {
  const corpus = loadVector('harness-hash_sha1_60_v1.json');
  for (const v of corpus.vectors) {
    if (!v.rollout_checks || v.salt !== '' || !v.prefix.endsWith('.')) continue;
    const key = v.prefix.slice(0, -1);
    const identifier: string = v.identifier_before_truncation ?? v.identifier;
    const grouped = v.identifier_source?.json_group_key !== undefined;
    for (const c of v.rollout_checks) {
      const filters = grouped
        ? { aggregation_group_type_index: 0, groups: [{ rollout_percentage: c.rollout_percentage }] }
        : { groups: [{ rollout_percentage: c.rollout_percentage }] };
      const compiled = compileProject({ flags: [flag(key, filters)], group_type_mapping: { 0: 'company' }, cohorts: {} });
      const req = grouped ? { distinct_id: 'x', groups: { company: v.identifier_source.json_group_key } } : { distinct_id: identifier };
      const r = evaluateFlags(compiled, req, {}, 0).flags[key]!;
      assert.equal(r.enabled, c.included, `${v.id} at ${c.rollout_percentage}%`);
    }
  }
});

test('one bad flag: compile lists the problem naming flag and field', () => {
  const compiled = compileProject({
    flags: [flag('bad', { groups: [{ properties: [{ key: 'a', value: 1, operator: 'frobnicates', type: 'person' }] }] }), flag('ok', { groups: [{}] })],
    group_type_mapping: {}, cohorts: {},
  });
  assert.equal(compiled.problems.length, 1);
  assert.equal(compiled.problems[0]!.flagKey, 'bad');
  assert.match(compiled.problems[0]!.field, /^filters\.groups\[0\]\.properties\[0\]/);
});

test('filters.early_exit: a matching set that misses its rollout ends evaluation (research §1, §4 step 4)', () => {
  const sets = [
    { properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }], rollout_percentage: 0 },
    { properties: [], rollout_percentage: 100 },
  ];
  const compiled = compileProject({
    flags: [flag('exits', { groups: sets, early_exit: true }), flag('falls-through', { groups: sets })],
    group_type_mapping: {}, cohorts: {},
  });
  const matching = evaluateFlags(compiled, { distinct_id: 'u1', person_properties: { email: 'ada@example.com' } }, {}, 0).flags;
  assert.equal(matching.exits!.enabled, false);
  assert.equal(matching.exits!.reason.code, 'out_of_rollout_bound');
  assert.equal(matching.exits!.reason.condition_index, 0);
  assert.equal(matching['falls-through']!.enabled, true, 'without early_exit the next set is tried');
  assert.equal(matching['falls-through']!.reason.condition_index, 1);
  // Properties that do not match are not an exit: the next set decides.
  const other = evaluateFlags(compiled, { distinct_id: 'u1', person_properties: { email: 'ada@other.org' } }, {}, 0).flags;
  assert.equal(other.exits!.enabled, true);
  assert.equal(other.exits!.reason.condition_index, 1);
});
