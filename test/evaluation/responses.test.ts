/**
 * Response shapes (research/posthog-flag-evaluation.md §5.2–§5.3): each shape on a fixed result,
 * quota limiting, and a seeded property-based check that /flags v1 and every /decide version are
 * projections of the v2 answer built from the same EvaluationResult.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  compileProject, evaluateFlags, serializeFlagsV1, serializeFlagsV2, toDecide, toFlagsV1, toFlagsV2, type EvaluationResult,
  type FlagDefinition,
} from '../../src/evaluation/index.js';
import { prng } from '../support/prng.js';

const reason = (code: string, index: number | null, description: string) => ({ code, condition_index: index, description });
const meta = (id: number, payload: string | null) => ({ id, version: 1, payload, description: null });

/** A hand-built result: a variant flag, a boolean true with payload, a false, and a failed entry. */
const RESULT: EvaluationResult = {
  errorsWhileComputingFlags: true,
  flags: {
    mv: { key: 'mv', enabled: true, variant: 'test', reason: reason('condition_match', 0, 'Matched condition set 1'), metadata: meta(1, '{"v":1}') },
    on: { key: 'on', enabled: true, variant: null, reason: reason('condition_match', 1, 'Matched condition set 2'), metadata: meta(2, '"x"') },
    off: { key: 'off', enabled: false, variant: null, reason: reason('no_condition_match', 0, 'No matching condition set'), metadata: meta(3, null) },
    bad: { key: 'bad', enabled: false, variant: null, failed: true, reason: reason('flag_data_parsing_error', null, 'Failed to parse flag data: x'), metadata: meta(4, null) },
  },
};
const EXTRA = { requestId: 'req-1', evaluatedAt: 1700000000000 };

const shapeCases: Array<{ name: string; build: () => unknown; expected: unknown }> = [
  { name: '/flags v2', build: () => toFlagsV2(RESULT, EXTRA),
    expected: { errorsWhileComputingFlags: true, flags: RESULT.flags, requestId: 'req-1', evaluatedAt: 1700000000000 } },
  { name: '/flags v1: every flag, failed as false; payloads only where present',
    build: () => toFlagsV1(RESULT, EXTRA),
    expected: { errorsWhileComputingFlags: true, featureFlags: { mv: 'test', on: true, off: false, bad: false },
      featureFlagPayloads: { mv: '{"v":1}', on: '"x"' }, requestId: 'req-1', evaluatedAt: 1700000000000 } },
  { name: '/decide v1: list of enabled keys', build: () => toDecide(RESULT, 1, { requestId: 'r' }),
    expected: { errorsWhileComputingFlags: true, featureFlags: ['mv', 'on'], requestId: 'r' } },
  { name: '/decide v2: enabled keys → values', build: () => toDecide(RESULT, 2, { requestId: 'r' }),
    expected: { errorsWhileComputingFlags: true, featureFlags: { mv: 'test', on: true }, requestId: 'r' } },
  { name: '/decide v3 = /flags v1', build: () => toDecide(RESULT, 3, EXTRA), expected: toFlagsV1(RESULT, EXTRA) },
  { name: '/decide v4 = /flags v2', build: () => toDecide(RESULT, 4, EXTRA), expected: toFlagsV2(RESULT, EXTRA) },
  { name: '/decide v5 = /flags v2', build: () => toDecide(RESULT, 5, EXTRA), expected: toFlagsV2(RESULT, EXTRA) },
  { name: 'quota limited v2: empty flags, quotaLimited, no errors flag',
    build: () => toFlagsV2(RESULT, { requestId: 'r', quotaLimited: true }),
    expected: { errorsWhileComputingFlags: false, flags: {}, quotaLimited: ['feature_flags'], requestId: 'r' } },
  { name: 'quota limited v1',
    build: () => toFlagsV1(RESULT, { requestId: 'r', quotaLimited: true }),
    expected: { errorsWhileComputingFlags: false, featureFlags: {}, featureFlagPayloads: {}, quotaLimited: ['feature_flags'], requestId: 'r' } },
];

for (const c of shapeCases) {
  test(`shape: ${c.name}`, () => {
    assert.deepEqual(JSON.parse(JSON.stringify(c.build())), JSON.parse(JSON.stringify(c.expected)));
  });
}

test('fast serialisers equal JSON.stringify on the hand-built result (escaping, failed entries)', () => {
  const tricky: EvaluationResult = { ...RESULT, flags: { ...RESULT.flags, 'a"b\\c': { ...RESULT.flags.on!, key: 'a"b\\c' }, 123: { ...RESULT.flags.off!, key: '123' } } };
  for (const r of [RESULT, tricky]) {
    assert.equal(serializeFlagsV2(r, EXTRA), JSON.stringify(toFlagsV2(r, EXTRA)));
    assert.equal(serializeFlagsV1(r, EXTRA), JSON.stringify(toFlagsV1(r, EXTRA)));
  }
});

test('v2 wire JSON: failed appears only on error entries; top-level key order', () => {
  const body = JSON.stringify(toFlagsV2(RESULT, EXTRA));
  assert.equal((body.match(/"failed":true/g) ?? []).length, 1);
  assert.deepEqual(Object.keys(JSON.parse(body)), ['errorsWhileComputingFlags', 'flags', 'requestId', 'evaluatedAt']);
});


function randomProject(rnd: () => number): FlagDefinition[] {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const n = 1 + Math.floor(rnd() * 12);
  const flags: FlagDefinition[] = [];
  for (let i = 0; i < n; i++) {
    const groups = Array.from({ length: Math.floor(rnd() * 3) }, () => ({
      properties: rnd() < 0.5 ? [] : [{ key: 'plan', type: 'person', operator: 'exact', value: pick(['pro', 'free', ['pro', 'team']]) }],
      rollout_percentage: pick([null, 0, 10, 50, 99.5, 100]),
      ...(rnd() < 0.2 ? { variant: pick(['a', 'b', 'zzz']) } : {}),
      ...(rnd() < 0.2 ? { aggregation_group_type_index: pick([0, null]) } : {}),
    }));
    const multivariate = rnd() < 0.4 ? { variants: [{ key: 'a', rollout_percentage: 50 }, { key: 'b', rollout_percentage: pick([50, 30]) }] } : null;
    const payloads: Record<string, string> = {};
    if (rnd() < 0.5) payloads.true = JSON.stringify({ p: i });
    if (rnd() < 0.5) payloads.a = '"pa"';
    flags.push({
      id: i + 1, key: `f${i}`, active: rnd() < 0.9,
      filters: {
        groups, multivariate, payloads,
        ...(rnd() < 0.2 ? { aggregation_group_type_index: 0 } : {}),
        ...(rnd() < 0.1 ? { version: 2 } : {}),
        ...(rnd() < 0.15 ? { holdout: { id: 9, exclusion_percentage: pick([0, 20, 100]) } } : {}),
      },
      ensure_experience_continuity: rnd() < 0.2,
    });
  }
  return flags;
}

test('property: v1 and every /decide shape are projections of the v2 result (500 seeded cases)', () => {
  const rnd = prng(2024);
  for (let iter = 0; iter < 500; iter++) {
    const flags = randomProject(rnd);
    const compiled = compileProject({ flags, group_type_mapping: { 0: 'company' }, cohorts: {} });
    const req = {
      distinct_id: `user-${Math.floor(rnd() * 1000)}`,
      person_properties: rnd() < 0.5 ? { plan: rnd() < 0.5 ? 'pro' : 'free' } : {},
      groups: rnd() < 0.5 ? { company: `c${Math.floor(rnd() * 10)}` } : {},
    };
    const result = evaluateFlags(compiled, req, { hash_key_overrides_failed: rnd() < 0.1 }, 0);
    const extra = { requestId: `r${iter}`, evaluatedAt: iter };
    const v2 = toFlagsV2(result, extra);
    const v1 = toFlagsV1(result, extra);
    const entries = Object.values(v2.flags);
    const ctx = `case ${iter}`;
    assert.equal(v1.errorsWhileComputingFlags, v2.errorsWhileComputingFlags, ctx);
    assert.equal(v2.errorsWhileComputingFlags, entries.some((e) => e.failed === true), ctx);
    assert.deepEqual(Object.keys(v1.featureFlags), Object.keys(v2.flags), ctx);
    for (const e of entries) {
      assert.equal(v1.featureFlags[e.key], e.variant ?? e.enabled, ctx);
      assert.equal(v1.featureFlagPayloads[e.key], e.metadata.payload ?? undefined, ctx);
      if (e.failed) assert.deepEqual([e.enabled, e.variant, e.metadata.payload, e.reason.condition_index], [false, null, null, null], ctx);
      if (!e.enabled) assert.equal(e.variant, null, ctx);
    }
    const enabled = entries.filter((e) => e.enabled);
    assert.deepEqual(toDecide(result, 1, extra), { errorsWhileComputingFlags: v2.errorsWhileComputingFlags, featureFlags: enabled.map((e) => e.key), requestId: extra.requestId, evaluatedAt: extra.evaluatedAt }, ctx);
    assert.deepEqual((toDecide(result, 2, extra) as { featureFlags: unknown }).featureFlags, Object.fromEntries(enabled.map((e) => [e.key, e.variant ?? true])), ctx);
    assert.deepEqual(toDecide(result, 3, extra), v1, ctx);
    assert.deepEqual(toDecide(result, 4, extra), v2, ctx);
    // The fast serialisers print exactly what JSON.stringify prints for the same shapes.
    for (const e of [extra, { requestId: 'q"uote', quotaLimited: true }, { requestId: 'x' }]) {
      assert.equal(serializeFlagsV2(result, e), JSON.stringify(toFlagsV2(result, e)), ctx);
      assert.equal(serializeFlagsV1(result, e), JSON.stringify(toFlagsV1(result, e)), ctx);
    }
    // Inactive flags are never answered.
    for (const f of flags) if (!f.active) assert.equal(v2.flags[f.key], undefined, ctx);
  }
});
