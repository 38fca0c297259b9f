/**
 * Condition sets of different flags with the same filters are tested once per request
 * (match-flag.ts `filtersPass`, CompiledCondition.sharedFilter). Sharing must never merge sets
 * whose outcome can differ: the expected answers below follow from the rules of
 * research/posthog-flag-evaluation.md §3.1 (group filters read the group type of the set's
 * aggregation when they name none) and §3.5 (dependency filters), not from this implementation.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileProject, evaluateFlags, type EvaluationRequest, type FlagDefinition } from '../../src/evaluation/index.js';
import { flag } from './support.js';

const NOW = Date.UTC(2026, 0, 1);
const run = (flags: FlagDefinition[], req: Partial<EvaluationRequest>, mapping: Record<string, string> = { 0: 'company' }) =>
  evaluateFlags(compileProject({ flags, group_type_mapping: mapping, cohorts: {} }), { distinct_id: 'u', ...req } as EvaluationRequest, {}, NOW).flags;

test('same person filter in many flags: each answers from it, for a passing and a failing person', () => {
  const email = { key: 'email', type: 'person', operator: 'icontains', value: '@example.com' };
  const flags = Array.from({ length: 5 }, (_, i) => flag(`email-${i}`, { groups: [{ properties: [email], rollout_percentage: 100 }] }));
  const isIn = run(flags, { person_properties: { email: 'a@example.com' } });
  const isOut = run(flags, { person_properties: { email: 'a@mail.test' } });
  for (let i = 0; i < 5; i++) {
    assert.equal(isIn[`email-${i}`]!.enabled, true);
    assert.equal(isIn[`email-${i}`]!.reason.code, 'condition_match');
    assert.equal(isOut[`email-${i}`]!.enabled, false);
    assert.equal(isOut[`email-${i}`]!.reason.code, 'no_condition_match');
  }
});

test('same group filter JSON under different aggregations reads each set\'s own group type', () => {
  const size = { key: 'size', type: 'group', operator: 'exact', value: 'big' };
  const flags = [
    flag('by-company', { aggregation_group_type_index: 0, groups: [{ properties: [size], rollout_percentage: 100 }] }),
    flag('by-team', { aggregation_group_type_index: 1, groups: [{ properties: [size], rollout_percentage: 100 }] }),
    // Back to the first group type after the second (a request keeps each type's properties and key).
    flag('company-again', { aggregation_group_type_index: 0, groups: [{ properties: [{ ...size, operator: 'icontains', value: 'BI' }], rollout_percentage: 100 }] }),
    flag('team-again', { aggregation_group_type_index: 1, groups: [{ properties: [{ ...size, operator: 'icontains', value: 'SMALL' }], rollout_percentage: 100 }] }),
  ];
  const req = { groups: { company: 'acme', team: 't1' }, group_properties: { company: { size: 'big' }, team: { size: 'small' } } };
  const out = run(flags, req, { 0: 'company', 1: 'team' });
  assert.equal(out['by-company']!.enabled, true);
  assert.equal(out['by-team']!.enabled, false);
  assert.equal(out['by-team']!.reason.code, 'no_condition_match');
  assert.equal(out['company-again']!.enabled, true);
  assert.equal(out['team-again']!.enabled, true);
  const noTeam = run(flags, { groups: { company: 'acme' }, group_properties: { company: { size: 'big' } } }, { 0: 'company', 1: 'team' });
  assert.equal(noTeam['company-again']!.enabled, true);
  assert.equal(noTeam['team-again']!.reason.code, 'no_group_type');
});

test('a set with a dependency filter is evaluated against the dependency\'s answer in this request', () => {
  const plan = { key: 'plan', type: 'person', operator: 'exact', value: 'pro' };
  const flags = [
    flag('base', { groups: [{ properties: [], rollout_percentage: 0 }] }, { id: 9101 }),
    flag('plain', { groups: [{ properties: [plan], rollout_percentage: 100 }] }),
    flag('gated', { groups: [{ properties: [plan, { key: '9101', type: 'flag', operator: 'flag_evaluates_to', value: true }], rollout_percentage: 100 }] }),
  ];
  const out = run(flags, { person_properties: { plan: 'pro' } });
  assert.equal(out.plain!.enabled, true);
  assert.equal(out.base!.enabled, false);
  assert.equal(out.gated!.enabled, false);
});
