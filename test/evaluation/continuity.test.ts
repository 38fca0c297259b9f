/** flagsNeedingHashKeyOverrides: which answered continuity flags hash persons (research §2.6). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileProject, flagsNeedingHashKeyOverrides } from '../../src/evaluation/index.js';
import { flag } from './support.js';

const MV = { variants: [{ key: 'a', rollout_percentage: 50 }, { key: 'b', rollout_percentage: 50 }] };
const C = { ensure_experience_continuity: true };

const cases: Array<[name: string, f: ReturnType<typeof flag>, needs: boolean]> = [
  ['continuity + partial rollout', flag('f', { groups: [{ rollout_percentage: 50 }] }, C), true],
  ['continuity + 100 % boolean', flag('f', { groups: [{ rollout_percentage: 100 }] }, C), false],
  ['continuity + 100 % hash-split variants', flag('f', { groups: [{}], multivariate: MV }, C), true],
  ['continuity + 100 % with a variant override', flag('f', { groups: [{ variant: 'a' }], multivariate: MV }, C), false],
  ['continuity + single 100 % variant', flag('f', { groups: [{}], multivariate: { variants: [{ key: 'only', rollout_percentage: 100 }] } }, C), false],
  ['no continuity + partial rollout', flag('f', { groups: [{ rollout_percentage: 50 }] }), false],
  ['continuity on a group flag', flag('f', { aggregation_group_type_index: 0, groups: [{ rollout_percentage: 50 }] }, C), false],
  ['continuity with device_id bucketing', flag('f', { groups: [{ rollout_percentage: 50 }] }, { ...C, bucketing_identifier: 'device_id' }), false],
  ['inactive continuity flag', flag('f', { groups: [{ rollout_percentage: 50 }] }, { ...C, active: false }), false],
];
for (const [name, f, needs] of cases) {
  test(`hash-key overrides needed: ${name}`, () => {
    const compiled = compileProject({ flags: [f], group_type_mapping: { 0: 'company' }, cohorts: {} });
    assert.deepEqual(flagsNeedingHashKeyOverrides(compiled, { distinct_id: 'u' }), needs ? ['f'] : []);
  });
}

test('only flags the request answers count (flag_keys_to_evaluate)', () => {
  const compiled = compileProject({ flags: [flag('x', { groups: [{ rollout_percentage: 5 }] }, C), flag('y', { groups: [{}] })], group_type_mapping: {}, cohorts: {} });
  assert.deepEqual(flagsNeedingHashKeyOverrides(compiled, { distinct_id: 'u', flag_keys_to_evaluate: ['y'] }), []);
  assert.deepEqual(flagsNeedingHashKeyOverrides(compiled, { distinct_id: 'u' }), ['x']);
});
