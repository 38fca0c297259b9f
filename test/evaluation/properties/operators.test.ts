/**
 * Operator × value-type table for compilePropertyFilter (Rust /flags semantics,
 * research/posthog-flag-evaluation.md §3.2–§3.3). Each row: filter, property map, expectation.
 * `MISSING` is an empty map (key absent); `null` rows hold a JSON null.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  compilePropertyFilter, PERSON_METADATA_KEY_PREFIX, propertyLookupKey, type PropertyFilter,
} from '../../../src/evaluation/properties/index.js';
import { MAX_MATCH_SUBJECT_CHARS } from '../../../src/limits.js';

const NOW = Date.UTC(2024, 0, 15, 12, 0, 0);
const MISSING = Symbol('missing');

type Row = [name: string, operator: string | null | undefined, value: unknown, actual: unknown, expected: boolean];

function run(group: string, rows: Row[]): void {
  for (const [name, operator, value, actual, expected] of rows) {
    test(`${group}: ${name}`, () => {
      const filter: PropertyFilter = { key: 'k', value, operator };
      const props: Record<string, unknown> = actual === MISSING ? {} : { k: actual };
      const got = compilePropertyFilter(filter, { timezone: 'UTC' }).test(props, NOW);
      assert.equal(got, expected, `${operator} ${JSON.stringify(value)} vs ${actual === MISSING ? '<missing>' : JSON.stringify(actual)}`);
    });
  }
}

run('exact', [
  ['default operator is exact', undefined, 'Value', 'value', true],
  ['null operator is exact', null, 'Value', 'VALUE', true],
  ['string case-insensitive', 'exact', 'Value', 'vALUE', true],
  ['string differs', 'exact', 'Value', 'other', false],
  ['empty string actual', 'exact', 'value', '', false],
  ['number actual vs string filter', 'exact', '5', 5, true],
  ['number filter vs string actual', 'exact', 5, '5', true],
  ['float filter string form', 'exact', 1.5, '1.5', true],
  ['integer filter is "1" not "1.0"', 'exact', 1, '1.0', false],
  ['boolean actual vs non-boolean filter', 'exact', 'yes', true, false],
  ['null actual has string form "null"', 'exact', 'null', null, true],
  ['null actual vs other string', 'exact', 'x', null, false],
  ['missing key', 'exact', 'x', MISSING, false],
  ['array actual uses JSON text', 'exact', '["a",1]', ['a', 1], true],
  ['array actual vs element', 'exact', 'a', ['a'], false],
  ['object actual uses JSON text', 'exact', '{"a":1}', { a: 1 }, true],
  ['array filter: any element', 'exact', ['US', 'CA', 'Uk'], 'uk', true],
  ['array filter: none', 'exact', ['US', 'CA'], 'de', false],
  ['array filter: number element', 'exact', [1, 2], '2', true],
  ['array filter vs missing', 'exact', ['a'], MISSING, false],
  ['array filter vs array actual', 'exact', ['a'], ['a'], false],
  ['Unicode folding', 'exact', 'ÉCOLE', 'école', true],
  ['Unicode folding, dotted capital I', 'exact', 'İSTANBUL', 'i̇stanbul', true],
  ['null filter value never matches', 'exact', null, 'x', false],
]);

run('exact with booleans (truthiness)', [
  ['true vs true', 'exact', true, true, true],
  ['true vs "True"', 'exact', true, 'True', true],
  ['true vs "TRUE"', 'exact', true, 'TRUE', true],
  ['true vs 1 (not truthy)', 'exact', true, 1, false],
  ['true vs "yes"', 'exact', true, 'yes', false],
  ['true vs [true,"true"]', 'exact', true, [true, 'true'], true],
  ['true vs [] (vacuously truthy)', 'exact', true, [], true],
  ['true vs null', 'exact', true, null, false],
  ['true vs missing', 'exact', true, MISSING, false],
  ['false vs false', 'exact', false, false, true],
  ['false vs "no"', 'exact', false, 'no', true],
  ['false vs 0', 'exact', false, 0, true],
  ['false vs ""', 'exact', false, '', true],
  ['false vs null', 'exact', false, null, true],
  ['false vs {}', 'exact', false, {}, true],
  ['false vs "true"', 'exact', false, 'true', false],
  ['false vs missing', 'exact', false, MISSING, false],
  ['"False" string filter vs false', 'exact', 'False', false, true],
  ['"TRUE" string filter vs "true"', 'exact', 'TRUE', 'true', true],
  ['["true"] filter vs true', 'exact', ['true'], true, true],
  ['["true","false"] filter is falsy', 'exact', ['true', 'false'], 'x', true],
  ['["true","false"] filter vs "true"', 'exact', ['true', 'false'], 'true', false],
  ['[] filter is truthy: vs "true"', 'exact', [], 'true', true],
  ['[] filter vs "us"', 'exact', [], 'us', false],
  ['is_not true vs "no"', 'is_not', true, 'no', true],
  ['is_not false vs 0', 'is_not', false, 0, false],
]);

run('is_not', [
  ['string differs', 'is_not', 'value', 'value2', true],
  ['string equal, case-insensitive', 'is_not', 'value', 'VALUE', false],
  ['empty string', 'is_not', 'value', '', true],
  ['number', 'is_not', 5, 5, false],
  ['null actual', 'is_not', 'value', null, true],
  ['missing key', 'is_not', 'value', MISSING, true],
  ['array actual', 'is_not', 'a', ['a'], true],
  ['object actual', 'is_not', 'a', { a: 1 }, true],
  ['array filter: not any', 'is_not', ['v1', 'v2'], 'v3', true],
  ['array filter: one of', 'is_not', ['v1', 'v2'], 'V2', false],
  ['null filter value: false even when missing', 'is_not', null, MISSING, false],
  ['null filter value: false when present', 'is_not', null, 'x', false],
]);

run('is_set / is_not_set', [
  ['is_set string', 'is_set', 'is_set', 'x', true],
  ['is_set number', 'is_set', 'is_set', 0, true],
  ['is_set false', 'is_set', 'is_set', false, true],
  ['is_set null counts as set', 'is_set', 'is_set', null, true],
  ['is_set array', 'is_set', 'is_set', [], true],
  ['is_set object', 'is_set', 'is_set', {}, true],
  ['is_set missing', 'is_set', 'is_set', MISSING, false],
  ['is_set ignores a null value', 'is_set', null, 'x', true],
  ['is_not_set string', 'is_not_set', 'is_not_set', 'x', false],
  ['is_not_set null', 'is_not_set', 'is_not_set', null, false],
  ['is_not_set missing', 'is_not_set', 'is_not_set', MISSING, true],
  ['is_not_set ignores a null value', 'is_not_set', null, MISSING, true],
]);

run('icontains / not_icontains', [
  ['substring, ASCII case-insensitive', 'icontains', 'LuE', 'blue sky', true],
  ['no substring', 'icontains', 'LuE', 'red', false],
  ['number actual', 'icontains', '2', 123, true],
  ['number filter', 'icontains', 3, 'val3', true],
  ['boolean actual', 'icontains', 'RU', true, true],
  ['null actual', 'icontains', 'nul', null, true],
  ['array actual JSON text', 'icontains', 'blue', ['Blue'], true],
  ['object actual JSON text', 'icontains', '"k":"v"', { k: 'V' }, true],
  ['missing', 'icontains', 'x', MISSING, false],
  ['ASCII-only folding: É vs é', 'icontains', 'É', 'école', false],
  ['ASCII-only folding: same non-ASCII', 'icontains', 'ÉCOLE', 'École', true],
  ['empty needle', 'icontains', '', 'anything', true],
  ['not_icontains present', 'not_icontains', 'x', 'abc', true],
  ['not_icontains contained', 'not_icontains', 'B', 'abc', false],
  ['not_icontains null actual', 'not_icontains', 'x', null, true],
  ['not_icontains missing', 'not_icontains', 'x', MISSING, true],
  ['not_icontains null value', 'not_icontains', null, MISSING, false],
]);

run('starts_with / ends_with', [
  ['starts_with', 'starts_with', 'Val', 'value', true],
  ['starts_with no', 'starts_with', 'Val', 'a value', false],
  ['starts_with number', 'starts_with', '12', 123, true],
  ['starts_with boolean', 'starts_with', 'tr', true, true],
  ['starts_with null', 'starts_with', 'nu', null, true],
  ['starts_with array', 'starts_with', '["a', ['a'], true],
  ['starts_with object', 'starts_with', '{', {}, true],
  ['starts_with missing', 'starts_with', 'x', MISSING, false],
  ['starts_with ASCII-only folding', 'starts_with', 'É', 'é', false],
  ['not_starts_with', 'not_starts_with', 'x', 'value', true],
  ['not_starts_with prefix', 'not_starts_with', 'VA', 'value', false],
  ['not_starts_with missing', 'not_starts_with', 'x', MISSING, true],
  ['ends_with', 'ends_with', '.COM', 'a@b.com', true],
  ['ends_with no', 'ends_with', '.com', 'a@b.org', false],
  ['ends_with number', 'ends_with', '23', 123, true],
  ['ends_with boolean', 'ends_with', 'lse', false, true],
  ['ends_with null', 'ends_with', 'll', null, true],
  ['ends_with array', 'ends_with', ']', [1], true],
  ['ends_with missing', 'ends_with', 'x', MISSING, false],
  ['not_ends_with', 'not_ends_with', 'x', 'value', true],
  ['not_ends_with suffix', 'not_ends_with', 'UE', 'value', false],
  ['not_ends_with missing', 'not_ends_with', 'x', MISSING, true],
]);

run('icontains_multi / not_icontains_multi', [
  ['any element', 'icontains_multi', ['foo', 'BAR'], 'xbarx', true],
  ['none', 'icontains_multi', ['foo', 'bar'], 'baz', false],
  ['scalar filter', 'icontains_multi', 'OO', 'food', true],
  ['number element vs number actual', 'icontains_multi', [4, 2], 123, true],
  ['boolean actual', 'icontains_multi', ['ue'], true, true],
  ['null actual', 'icontains_multi', ['ul'], null, true],
  ['array actual', 'icontains_multi', ['"x"'], ['x'], true],
  ['object actual', 'icontains_multi', ['{}'], {}, true],
  ['empty filter array', 'icontains_multi', [], 'x', false],
  ['missing', 'icontains_multi', ['x'], MISSING, false],
  ['not: none contained', 'not_icontains_multi', ['foo', 'bar'], 'baz', true],
  ['not: one contained', 'not_icontains_multi', ['foo', 'bar'], 'FOOD', false],
  ['not: empty filter array', 'not_icontains_multi', [], 'x', true],
  ['not: missing', 'not_icontains_multi', ['x'], MISSING, true],
]);

run('regex / not_regex', [
  ['unanchored search', 'regex', 'b.c', 'ab-cd', true],
  ['anchored', 'regex', '^a.c$', 'abc', true],
  ['case-sensitive', 'regex', 'ABC', 'abc', false],
  ['inline (?i)', 'regex', '(?i)ABC', 'xabcx', true],
  ['number actual', 'regex', '^\\d+$', 123, true],
  ['number filter is a pattern', 'regex', 12, 'x12', true],
  ['boolean actual', 'regex', '^true$', true, true],
  ['null actual', 'regex', '^null$', null, true],
  ['array actual', 'regex', '^\\["x"\\]$', ['x'], true],
  ['object actual', 'regex', '"a":1', { a: 1 }, true],
  ['missing', 'regex', '.*', MISSING, false],
  ['not_regex no match', 'not_regex', '^x', 'abc', true],
  ['not_regex match', 'not_regex', 'b', 'abc', false],
  ['not_regex missing', 'not_regex', '.*', MISSING, true],
  ['invalid pattern: regex false', 'regex', '(', 'anything', false],
  ['invalid pattern: not_regex false', 'not_regex', '(', 'anything', false],
  ['invalid pattern: not_regex missing still true', 'not_regex', '(', MISSING, true],
  ['invalid pattern: regex missing', 'regex', '(', MISSING, false],
  ['email domain', 'regex', '@posthog\\.com$', 'ben@posthog.com', true],
  ['subject of MAX_MATCH_SUBJECT_CHARS', 'regex', 'a$', 'a'.repeat(MAX_MATCH_SUBJECT_CHARS), true],
  ['subject of MAX_MATCH_SUBJECT_CHARS, not_regex', 'not_regex', 'b', 'a'.repeat(MAX_MATCH_SUBJECT_CHARS), true],
  ['subject past the bound: regex false', 'regex', 'a$', 'a'.repeat(MAX_MATCH_SUBJECT_CHARS + 1), false],
  ['subject past the bound: not_regex false too', 'not_regex', 'b', 'a'.repeat(MAX_MATCH_SUBJECT_CHARS + 1), false],
]);

run('gt / gte / lt / lte', [
  ['gt number', 'gt', 10, 11, true],
  ['gt equal', 'gt', 10, 10, false],
  ['gt numeric string', 'gt', 10, '11', true],
  ['gt string filter', 'gt', '10', 11, true],
  ['gt compares numerically, not as text', 'gt', 9, '10', true],
  ['gt exponent string', 'gt', 10, '1e2', true],
  ['gt inf string', 'gt', 10, 'inf', true],
  ['gt NaN string', 'gt', 10, 'NaN', false],
  ['gt lenient suffix rejected', 'gt', 5, '10px', false],
  ['gt whitespace rejected', 'gt', 5, ' 10', false],
  ['gt boolean actual', 'gt', 0, true, false],
  ['gt null actual', 'gt', -1, null, false],
  ['gt array actual', 'gt', 0, [1], false],
  ['gt object actual', 'gt', 0, {}, false],
  ['gt missing', 'gt', 0, MISSING, false],
  ['gt non-numeric filter', 'gt', 'abc', 5, false],
  ['gte equal', 'gte', 10, 10, true],
  ['gte below', 'gte', 10, 9.99, false],
  ['lt', 'lt', 10, 9, true],
  ['lt equal', 'lt', 10, 10, false],
  ['lt negative string', 'lt', 0, '-0.5', true],
  ['lt missing', 'lt', 10, MISSING, false],
  ['lte equal', 'lte', 10, '10.0', true],
  ['lte above', 'lte', 10, 10.5, false],
  ['lte non-numeric filter', 'lte', 'x', 1, false],
]);

run('between / not_between', [
  ['inside', 'between', [1, 5], 3, true],
  ['lower bound inclusive', 'between', [1, 5], 1, true],
  ['upper bound inclusive', 'between', [1, 5], 5, true],
  ['below', 'between', [1, 5], 0.99, false],
  ['above', 'between', [1, 5], 5.01, false],
  ['numeric string actual', 'between', [1, 5], '3', true],
  ['string bounds', 'between', ['1', '5'], 3, true],
  ['infinite bound', 'between', [0, 'inf'], 1e300, true],
  ['non-numeric actual', 'between', [1, 5], 'x', false],
  ['boolean actual', 'between', [0, 5], true, false],
  ['null actual', 'between', [0, 5], null, false],
  ['array actual', 'between', [0, 5], [1], false],
  ['NaN actual', 'between', [0, 5], 'NaN', false],
  ['missing', 'between', [1, 5], MISSING, false],
  ['min > max', 'between', [5, 1], 3, false],
  ['one bound', 'between', [1], 1, false],
  ['three bounds', 'between', [1, 2, 3], 2, false],
  ['non-numeric bound', 'between', ['a', 5], 3, false],
  ['NaN bound', 'between', ['NaN', 5], 3, false],
  ['scalar value', 'between', 5, 5, false],
  ['not_between outside', 'not_between', [1, 5], 0, true],
  ['not_between inside', 'not_between', [1, 5], 3, false],
  ['not_between bound', 'not_between', [1, 5], 5, false],
  ['not_between non-numeric actual is an error: false', 'not_between', [1, 5], 'x', false],
  ['not_between NaN actual: false', 'not_between', [1, 5], 'nan', false],
  ['not_between missing', 'not_between', [1, 5], MISSING, true],
  ['not_between malformed bounds: false', 'not_between', [5, 1], 0, false],
  ['not_between malformed bounds, missing key: true', 'not_between', [5, 1], MISSING, true],
]);

run('semver (value types)', [
  ['eq string', 'semver_eq', '1.2.3', '1.2.3', true],
  ['eq v prefix', 'semver_eq', '1.2.3', 'v1.2.3', true],
  ['eq number actual', 'semver_eq', '1.2.0', 1.2, true],
  ['eq integer actual', 'semver_eq', '3.0.0', 3, true],
  ['eq boolean actual', 'semver_eq', '1.0.0', true, false],
  ['eq null actual', 'semver_eq', '1.0.0', null, false],
  ['eq array actual', 'semver_eq', '1.0.0', ['1.0.0'], false],
  ['eq object actual', 'semver_eq', '1.0.0', {}, false],
  ['eq missing', 'semver_eq', '1.0.0', MISSING, false],
  ['neq missing is false', 'semver_neq', '1.0.0', MISSING, false],
  ['neq invalid actual is false', 'semver_neq', '1.0.0', 'abc', false],
  ['gt invalid filter', 'semver_gt', 'abc', '1.0.0', false],
  ['tilde missing', 'semver_tilde', '1.2.3', MISSING, false],
  ['caret number filter', 'semver_caret', 1, '1.9.0', true],
  ['wildcard missing', 'semver_wildcard', '1.*', MISSING, false],
]);

run('cohort and flag operators on a plain property', [
  ['in', 'in', 5, 5, false],
  ['in missing', 'in', 5, MISSING, false],
  ['not_in', 'not_in', 5, 'x', false],
  ['not_in missing', 'not_in', 5, MISSING, false],
  ['flag_evaluates_to', 'flag_evaluates_to', true, true, false],
]);

test('missing-key table of research §3.2: negated operators true, others false', () => {
  const values: Record<string, unknown> = {
    exact: 'x', is_not: 'x', is_set: null, is_not_set: null, icontains: 'x', not_icontains: 'x',
    icontains_multi: ['x'], not_icontains_multi: ['x'], starts_with: 'x', not_starts_with: 'x',
    ends_with: 'x', not_ends_with: 'x', regex: 'x', not_regex: 'x', gt: 1, gte: 1, lt: 1, lte: 1,
    between: [1, 2], not_between: [1, 2], is_date_before: '2024-01-01', is_date_after: '-1d',
    is_date_exact: '2024-01-01', semver_eq: '1.0.0', semver_neq: '1.0.0', semver_gt: '1.0.0',
    semver_gte: '1.0.0', semver_lt: '1.0.0', semver_lte: '1.0.0', semver_tilde: '1.0.0',
    semver_caret: '1.0.0', semver_wildcard: '1.*', in: 1, not_in: 1, flag_evaluates_to: true,
  };
  const trueWhenMissing = new Set(['is_not', 'is_not_set', 'not_icontains', 'not_icontains_multi',
    'not_starts_with', 'not_ends_with', 'not_regex', 'not_between']);
  for (const [operator, value] of Object.entries(values)) {
    const f = compilePropertyFilter({ key: 'k', operator, value }, { timezone: 'UTC' });
    assert.equal(f.test({}, NOW), trueWhenMissing.has(operator), operator);
    assert.equal(f.test({ other: 1 }, NOW), trueWhenMissing.has(operator), `${operator} (other keys)`);
  }
});

test('presence is an own, defined property', () => {
  const isSet = compilePropertyFilter({ key: 'toString', operator: 'is_set' }, { timezone: 'UTC' });
  assert.equal(isSet.test({}, NOW), false, 'inherited Object.prototype keys are not properties');
  assert.equal(isSet.test({ toString: 'x' }, NOW), true);
  assert.equal(isSet.test({ toString: undefined } as Record<string, unknown>, NOW), false, 'undefined counts as missing');
  const proto = compilePropertyFilter({ key: '__proto__', operator: 'exact', value: 'x' }, { timezone: 'UTC' });
  assert.equal(proto.test(JSON.parse('{"__proto__":"x"}') as Record<string, unknown>, NOW), true);
  const nullProto = Object.assign(Object.create(null) as Record<string, unknown>, { k: 'x' });
  assert.equal(compilePropertyFilter({ key: 'k', value: 'X' }, { timezone: 'UTC' }).test(nullProto, NOW), true);
});

test('compiled filter exposes key, type and group type index', () => {
  const person = compilePropertyFilter({ key: 'email', value: 'x' }, { timezone: 'UTC' });
  assert.deepEqual([person.key, person.type, person.groupTypeIndex], ['email', 'person', null]);
  const group = compilePropertyFilter({ key: 'plan', value: 'x', type: 'group', group_type_index: 2 }, { timezone: 'UTC' });
  assert.deepEqual([group.key, group.type, group.groupTypeIndex], ['plan', 'group', 2]);
  assert.ok(Object.isFrozen(group));
});

test('person_metadata filters read the prefixed key (Rust lookup_key_for)', () => {
  const f = compilePropertyFilter({ key: 'created_at', type: 'person_metadata', operator: 'is_date_after', value: '2024-01-01' }, { timezone: 'UTC' });
  assert.equal(f.key, 'created_at');
  assert.equal(f.lookupKey, `${PERSON_METADATA_KEY_PREFIX}created_at`);
  assert.equal(propertyLookupKey('created_at', 'person_metadata'), '__posthog_person_metadata__created_at');
  assert.equal(f.test({ created_at: '2099-01-01' }, NOW), false, 'a user-set property of the same name is ignored');
  assert.equal(f.test({ [`${PERSON_METADATA_KEY_PREFIX}created_at`]: '2025-06-01' }, NOW), true);
  const person = compilePropertyFilter({ key: 'created_at', operator: 'is_set' }, { timezone: 'UTC' });
  assert.equal(person.lookupKey, 'created_at');
});

test('test() never throws, whatever the property value', () => {
  const deep: unknown[] = [];
  let cur = deep;
  for (let i = 0; i < 200; i++) { const next: unknown[] = []; cur.push(next); cur = next; }
  const weird: unknown[] = [
    '', ' ', '\u0000', '\ud800', '😀', 'İ', 'x'.repeat(100_000), -0, 1e308, -1e-308, Number.MAX_SAFE_INTEGER + 2,
    true, false, null, [], {}, deep, { a: { b: [1, { c: null }] } }, ['\ud800'], '-1d', '9999y', 'nan', 'inf',
    '1.0.0-rc.1+build', '2024-02-30', '2024-03-10 02:30', 'v', '*',
  ];
  const values: Record<string, unknown> = {
    exact: 'x', is_not: ['a', 1], icontains: 'É', not_icontains: 1, icontains_multi: ['a'], starts_with: '',
    ends_with: null, regex: '^(?:a|b)+$', not_regex: '(?i)x', gt: '1e3', lte: 0, between: ['-inf', 'inf'],
    not_between: [0, 1], is_date_before: '-1m', is_date_after: '2024-01-01', is_date_exact: '2024-01-01T00:00:00Z',
    semver_eq: '1.0.0', semver_caret: '0', semver_wildcard: '*', in: 1, flag_evaluates_to: true,
  };
  for (const [operator, value] of Object.entries(values)) {
    for (const timezone of ['UTC', 'America/New_York', 'Australia/Lord_Howe']) {
      const f = compilePropertyFilter({ key: 'k', operator, value }, { timezone });
      for (const w of weird) {
        assert.equal(typeof f.test({ k: w }, NOW), 'boolean', `${operator} ${timezone}`);
      }
    }
  }
});
