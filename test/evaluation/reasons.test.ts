/**
 * Reason codes, scores and descriptions pinned against research/posthog-flag-evaluation.md §4
 * ("Priority scores" and the "Reason codes and description strings" table) and Rust
 * `flags/flag_match_reason.rs`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_CODES, REASONS } from '../../src/evaluation/index.js';
import { conditionMatchDescription, NO_CONDITION_MATCH_GROUPS_NOT_EVALUATED } from '../../src/evaluation/reasons.js';

const EXPECTED: Array<[code: string, score: number, description: string]> = [
  ['super_condition_value', 6, 'Super condition value'],
  ['holdout_condition_value', 5, 'Holdout condition value'],
  ['condition_match', 4, 'Matched condition set'],
  ['out_of_rollout_bound', 3, 'Out of rollout bound'],
  ['no_condition_match', 2, 'No matching condition set'],
  ['no_group_type', 1, 'No group type'],
  ['flag_disabled', 0, 'Feature flag is disabled'],
  ['missing_dependency', -1, 'Flag cannot be evaluated due to missing dependency'],
];

test('every reason code with its score and description, and no others', () => {
  assert.deepEqual(Object.keys(REASONS).sort(), EXPECTED.map((e) => e[0]).sort());
  for (const [code, score, description] of EXPECTED) {
    assert.deepEqual({ ...(REASONS as Record<string, { score: number; description: string }>)[code] }, { score, description }, code);
  }
});

test('condition_match description is 1-based', () => {
  assert.equal(conditionMatchDescription(0), 'Matched condition set 1');
  assert.equal(conditionMatchDescription(4), 'Matched condition set 5');
});

test('groups-not-evaluated description (research §4)', () => {
  assert.equal(NO_CONDITION_MATCH_GROUPS_NOT_EVALUATED,
    'No matching condition set (group conditions were not evaluated because no group type was provided)');
});

test('error codes used by failed entries', () => {
  assert.deepEqual(Object.keys(ERROR_CODES).sort(),
    ['cohort_filters_parsing_error', 'flag_data_parsing_error', 'hash_key_override_error', 'internal_error', 'timeout:evaluation_budget']);
  assert.equal(ERROR_CODES.flag_data_parsing_error, 'Failed to parse flag data');
  assert.match(ERROR_CODES['timeout:evaluation_budget'], /^Timeout: /, "PostHog's timeout:<kind> codes");
});

test('the reason objects are frozen', () => {
  assert.ok(Object.isFrozen(REASONS));
  for (const r of Object.values(REASONS)) assert.ok(Object.isFrozen(r));
});
