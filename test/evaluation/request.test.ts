/** requestFromBody: PostHog's body aliases (research §5.1) and its 400 codes. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requestFromBody, RequestBodyError } from '../../src/evaluation/index.js';

const ok: Array<[name: string, body: unknown, expected: Record<string, unknown>]> = [
  ['plain names', { distinct_id: 'u', groups: { company: 'a' }, person_properties: { p: 1 }, group_properties: { company: { q: 2 } },
    flag_keys_to_evaluate: ['f'], evaluation_environments: ['web'] },
    { distinct_id: 'u', groups: { company: 'a' }, person_properties: { p: 1 }, group_properties: { company: { q: 2 } }, flag_keys_to_evaluate: ['f'], evaluation_environments: ['web'] }],
  ['$-aliases', { $distinct_id: 'u', $properties: { p: 1 }, $group_properties: { company: {} }, $anon_distinct_id: 'anon', $device_id: 'dev' },
    { distinct_id: 'u', person_properties: { p: 1 }, group_properties: { company: {} }, anon_distinct_id: 'anon', device_id: 'dev' }],
  ['other aliases', { distinct_id: 'u', anon_distinct_id: 'a', device_id: 'd', flag_keys: ['x'], evaluation_contexts: ['c'] },
    { anon_distinct_id: 'a', device_id: 'd', flag_keys_to_evaluate: ['x'], evaluation_environments: ['c'] }],
  ['numeric distinct_id becomes a string', { distinct_id: 12345 }, { distinct_id: '12345' }],
  ['empty distinct_id is allowed', { distinct_id: '' }, { distinct_id: '' }],
  ['survey-only flag', { distinct_id: 'u', only_evaluate_survey_feature_flags: true }, { only_evaluate_survey_feature_flags: true }],
  ['explicit evaluation_runtime', { distinct_id: 'u', evaluation_runtime: 'server' }, { runtime: 'server' }],
  ['unknown evaluation_runtime is ignored', { distinct_id: 'u', evaluation_runtime: 'edge' }, { runtime: null }],
  ['defaults', { distinct_id: 'u' }, { flag_keys_to_evaluate: null, evaluation_environments: null, anon_distinct_id: null, device_id: null, runtime: null }],
];
for (const [name, body, expected] of ok) {
  test(`requestFromBody: ${name}`, () => {
    const req = requestFromBody(body) as unknown as Record<string, unknown>;
    for (const [k, v] of Object.entries(expected)) assert.deepEqual(req[k], v, k);
  });
}

const bad: Array<[name: string, body: unknown, code: string]> = [
  ['missing distinct_id', { token: 'x' }, 'missing_distinct_id'],
  ['null distinct_id', { distinct_id: null }, 'missing_distinct_id'],
  ['object distinct_id', { distinct_id: {} }, 'missing_distinct_id'],
  ['not an object', [1], 'request_parsing_error'],
  ['groups not an object', { distinct_id: 'u', groups: 'x' }, 'request_parsing_error'],
  ['flag keys not strings', { distinct_id: 'u', flag_keys_to_evaluate: [1] }, 'request_parsing_error'],
];
for (const [name, body, code] of bad) {
  test(`requestFromBody rejects: ${name}`, () => {
    assert.throws(() => requestFromBody(body), (e: unknown) => e instanceof RequestBodyError && e.code === code);
  });
}

test('an explicit evaluation_runtime wins over the detected runtime', () => {
  assert.equal(requestFromBody({ distinct_id: 'u', evaluation_runtime: 'client' }, 'server').runtime, 'client');
  assert.equal(requestFromBody({ distinct_id: 'u' }, 'server').runtime, 'server');
});
