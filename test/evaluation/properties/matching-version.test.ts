/**
 * `property_matching_version` 2 (explicit boolean equality) for `exact` and `is_not`, through
 * the whole compile → evaluate path. The rows are posthog-go's published matching-version
 * table (filter value, person property, legacy result, version-2 result for `exact`; `is_not`
 * is the negation), minus its `null = null` row, where Rust (followed here) and posthog-go's
 * legacy matcher differ. Legacy is the Rust behaviour this evaluator already pins elsewhere.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileProject, evaluateFlags } from '../../../src/evaluation/index.js';
import { flag } from '../support.js';

const ROWS: [name: string, filter: unknown, property: unknown, legacy: boolean, v2: boolean][] = [
  ['false banana', false, 'banana', true, false],
  ['false zero', false, 0, true, false],
  ['boolean list true', ['true', 'false'], 'true', false, true],
  ['boolean list pro', ['true', 'false'], 'pro', true, false],
  ['empty true', [], true, true, true],
  ['empty array', [], [], true, true],
  ['true array', true, [true], true, false],
  ['false uppercase', false, 'FALSE', true, true],
  ['false null', false, null, true, false],
  ['false empty string', false, '', true, false],
  ['true empty property array', true, [], true, false],
  ['nested filter member', [[true], 'pro'], [true], true, true],
  ['empty nested truthy', [], [true, 'TRUE', []], true, true],
  ['empty false', [], false, false, false],
  ['empty number', [], 1, false, false],
  ['empty arbitrary string', [], 'banana', false, false],
  ['mixed members', [true, 'pro'], 'TRUE', true, true],
  ['normalized strings', ['FREE', 'PRO'], 'pro', true, true],
  ['unicode lowercase', 'İ', 'i̇', true, true],
];

function evaluate(version: number | undefined, operator: string, filter: unknown, property: unknown): boolean {
  const project = compileProject({
    flags: [flag('t', { groups: [{ properties: [{ key: 'value', type: 'person', operator, value: filter }], rollout_percentage: 100 }] })],
    group_type_mapping: {}, cohorts: {}, ...(version === undefined ? {} : { property_matching_version: version }),
  });
  assert.deepEqual(project.problems, []);
  return evaluateFlags(project, { distinct_id: 'person', person_properties: { value: property } }, {}, 0).flags.t!.enabled;
}

for (const [name, filter, property, legacy, v2] of ROWS) {
  test(`matching version: ${name}`, () => {
    for (const version of [undefined, 1, 3]) {
      assert.equal(evaluate(version, 'exact', filter, property), legacy, `legacy (${version}) exact`);
      assert.equal(evaluate(version, 'is_not', filter, property), !legacy, `legacy (${version}) is_not`);
    }
    assert.equal(evaluate(2, 'exact', filter, property), v2, 'v2 exact');
    assert.equal(evaluate(2, 'is_not', filter, property), !v2, 'v2 is_not');
  });
}

test('matching version 2 reaches cohort properties too', () => {
  const project = compileProject({
    flags: [flag('c', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 5 }], rollout_percentage: 100 }] })],
    group_type_mapping: {}, property_matching_version: 2,
    cohorts: { 5: { properties: { type: 'AND', values: [{ key: 'value', type: 'person', operator: 'exact', value: false }] } } as never },
  });
  const on = (value: unknown) => evaluateFlags(project, { distinct_id: 'p', person_properties: { value } }, {}, 0).flags.c!.enabled;
  assert.equal(on('banana'), false);
  assert.equal(on(false), true);
});
