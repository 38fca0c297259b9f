/** The v2 fast serializer equals JSON.stringify(toFlagsV2(...)) byte for byte. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileProject, evaluateFlags, toFlagsV2, type FlagDefinition } from '../../../src/evaluation/index.js';
import { flagsV2Json } from '../../../src/eval-node/pool/respond.js';

test('flagsV2Json matches JSON.stringify(toFlagsV2()) for matches, misses, variants, payloads, failures and odd keys', () => {
  const flags: FlagDefinition[] = [
    { id: 1, key: 'on', active: true, version: 3, filters: { groups: [{ rollout_percentage: 100 }], payloads: { true: '{"a":"\\u00e9"}' } } },
    { id: 2, key: 'mv "quoted" \\ key', active: true, filters: { groups: [{}], multivariate: { variants: [{ key: 'a"b', rollout_percentage: 50 }, { key: 'c', rollout_percentage: 50 }] }, payloads: { 'a"b': '1', c: '"x"' } } },
    { id: 3, key: 'half', active: true, filters: { groups: [{ rollout_percentage: 50 }] } },
    { id: 4, key: 'email', active: true, filters: { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@x' }] }] } },
    { id: 5, key: 'bad', active: true, filters: { version: 2, groups: [] } as never },
    { id: 6, key: '__proto__', active: true, filters: { groups: [{}] } },
    { id: 7, key: 'ünï', active: true, filters: { aggregation_group_type_index: 0, groups: [{}] } },
  ];
  const project = compileProject({ flags, group_type_mapping: { 0: 'org' }, cohorts: {} });
  for (let n = 0; n < 200; n++) {
    const result = evaluateFlags(project, { distinct_id: `u${n}`, person_properties: n % 2 ? { email: 'a@x' } : {}, groups: n % 3 ? { org: 'o' } : {} }, {}, 0);
    const expected = JSON.stringify(toFlagsV2(result, { requestId: 'r"id', evaluatedAt: 1700000000000 + n }));
    assert.equal(flagsV2Json(result, 'r"id', 1700000000000 + n), expected);
  }
});
