/** The v2 fast serializer equals JSON.stringify(toFlagsV2(...)) byte for byte. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileProject, evaluateFlags, orderedResultsOf, serializeFlagsV2, toFlagsV2, type FlagDefinition } from '../../../src/evaluation/index.js';
import { flagsV2Bytes, flagsV2Json } from '../../../src/eval-node/pool/respond.js';

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

test('flagsV2Bytes is the UTF-8 of flagsV2Json, including failed entries, odd keys and a buffer that must grow', () => {
  const flags: FlagDefinition[] = [
    { id: 1, key: 'on', active: true, version: 3, filters: { groups: [{ rollout_percentage: 100 }], payloads: { true: '{"a":"\\u00e9"}' } } },
    { id: 2, key: 'mv "quoted" \\ key', active: true, filters: { groups: [{}], multivariate: { variants: [{ key: 'a"b', rollout_percentage: 50 }, { key: 'c', rollout_percentage: 50 }] }, payloads: { 'a"b': '1', c: '"x"' } } },
    { id: 3, key: 'half', active: true, filters: { groups: [{ rollout_percentage: 50 }] } },
    { id: 5, key: 'bad', active: true, filters: { version: 2, groups: [] } as never },
    { id: 6, key: '__proto__', active: true, filters: { groups: [{}] } },
    { id: 7, key: 'ünï', active: true, filters: { aggregation_group_type_index: 0, groups: [{}] } },
    // Enough large members to need more than the initial 64 KB buffer.
    ...Array.from({ length: 40 }, (_, i): FlagDefinition => ({ id: 100 + i, key: `big-${i}-${'é'.repeat(300)}`, active: true, filters: { groups: [{}], payloads: { true: JSON.stringify('x'.repeat(2000)) } } })),
  ];
  const project = compileProject({ flags, group_type_mapping: { 0: 'org' }, cohorts: {} });
  for (let n = 0; n < 50; n++) {
    const result = evaluateFlags(project, { distinct_id: `u${n}`, groups: n % 3 ? { org: 'o' } : {} }, {}, 0);
    const expected = Buffer.from(flagsV2Json(result, `req-${n}`, 1700000000000 + n));
    const bytes = flagsV2Bytes(result, `req-${n}`, 1700000000000 + n);
    assert.ok(expected.equals(bytes), `request ${n}`);
  }
  const small = evaluateFlags(compileProject({ flags: flags.slice(0, 3), group_type_mapping: {}, cohorts: {} }), { distinct_id: 'x' }, {}, 0);
  assert.ok(Buffer.from(flagsV2Json(small, 'r', 1)).equals(flagsV2Bytes(small, 'r', 1)));
  // The tail: request ids that need escaping or are not ASCII, and times of every digit count or not integers.
  const ids = ['0b7c2c4e-54a1-4c47-9d7a-6f3bb5d3a1c2', '', 'a"b', 'back\\slash', 'tab\t', '\u0000', 'é', '日本', '😀', '\u2028', '~ !'];
  const times = [0, 7, 10, 99, 1700000000000, Number.MAX_SAFE_INTEGER, 1.5, -3, 1e21];
  for (const id of ids) {
    for (const t of times) {
      assert.ok(Buffer.from(JSON.stringify(toFlagsV2(small, { requestId: id, evaluatedAt: t }))).equals(flagsV2Bytes(small, id, t)), `${JSON.stringify(id)} ${t}`);
    }
  }
});

test('answers without failed entries are serialized from the ordered results, and equal JSON.stringify whatever was evaluated since', () => {
  const plain = (id: number, key: string, filters: FlagDefinition['filters']): FlagDefinition => ({ id, key, active: true, filters });
  const mix = (n: number, suffix: string): FlagDefinition[] => Array.from({ length: n }, (_, i) => i % 3 === 0
    ? plain(i + 1, `mv-${i}${suffix}`, { groups: [{}], multivariate: { variants: [{ key: 'a', rollout_percentage: 50 }, { key: 'b"é', rollout_percentage: 50 }] }, payloads: { a: '{"p":1}' } })
    : plain(i + 1, `r-${i}${suffix}`, { groups: [{ properties: i % 3 === 1 ? [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }] : [], rollout_percentage: 40 }] }));
  const big = compileProject({ flags: mix(30, '-big'), group_type_mapping: {}, cohorts: {} });
  const small = compileProject({ flags: mix(7, ''), group_type_mapping: {}, cohorts: {} });
  // Integer-like keys are enumerated first, ahead of slot order: those answers take the object walk.
  const numeric = compileProject({ flags: [...mix(4, ''), plain(50, '12', { groups: [{}] }), plain(51, '3', { groups: [{ rollout_percentage: 50 }] })], group_type_mapping: {}, cohorts: {} });
  const check = (result: ReturnType<typeof evaluateFlags>, n: number) => {
    const expected = JSON.stringify(toFlagsV2(result, { requestId: `q${n}`, evaluatedAt: n }));
    assert.equal(flagsV2Json(result, `q${n}`, n), expected);
    assert.ok(Buffer.from(expected).equals(flagsV2Bytes(result, `q${n}`, n)));
    assert.equal(serializeFlagsV2(result, { requestId: `q${n}`, evaluatedAt: n }), expected);
  };
  let orderedSeen = 0;
  for (let n = 0; n < 60; n++) {
    const req = { distinct_id: `user-${n}`, person_properties: { plan: n % 2 ? 'pro' : 'free' } };
    const a = evaluateFlags(big, req, {}, 0);
    const b = evaluateFlags(small, req, {}, 0); // smaller after larger: the reused array must not carry big's tail
    if (orderedResultsOf(b) !== null) orderedSeen++;
    assert.equal(orderedResultsOf(a), null, 'only the latest result is ordered');
    check(b, n);
    check(a, n); // an earlier result: serialized by walking its object
    const c = evaluateFlags(numeric, req, {}, 0);
    assert.equal(orderedResultsOf(c), null);
    assert.deepEqual(Object.keys(c.flags).slice(0, 2), ['3', '12']);
    check(c, n);
  }
  assert.equal(orderedSeen, 60);
});
