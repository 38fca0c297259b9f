/**
 * compilePropertyFilter errors as rows: what throws by default (where Rust fails to parse the
 * filter) and what throws only with `strict` (Rust match-time errors, which evaluate to false).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  compilePropertyFilter, PROPERTY_OPERATORS, PropertyFilterError, type PropertyFilter,
} from '../../../src/evaluation/properties/index.js';

type ErrorRow = [name: string, filter: unknown, field: string | null, strictField: string | null, timezone?: string];

const rows: ErrorRow[] = [
  ['valid exact', { key: 'k', value: 'x' }, null, null],
  ['unknown operator', { key: 'k', value: 'x', operator: 'contains' }, 'operator', 'operator'],
  ['operator is case-sensitive', { key: 'k', value: 'x', operator: 'EXACT' }, 'operator', 'operator'],
  ['non-string operator', { key: 'k', value: 'x', operator: 5 }, 'operator', 'operator'],
  ['non-string key', { key: 5, value: 'x' }, 'key', 'key'],
  ['missing key', { value: 'x' }, 'key', 'key'],
  ['not an object', null, 'filter', 'filter'],
  ['string group_type_index', { key: 'k', value: 'x', type: 'group', group_type_index: '0' }, 'group_type_index', 'group_type_index'],
  ['fractional group_type_index', { key: 'k', value: 'x', type: 'group', group_type_index: 1.5 }, 'group_type_index', 'group_type_index'],
  ['null group_type_index', { key: 'k', value: 'x', type: 'group', group_type_index: null }, null, null],
  ['non-string type', { key: 'k', value: 'x', type: 1 }, 'type', 'type'],
  ['null type means person', { key: 'k', value: 'x', type: null }, null, null],
  ['null value', { key: 'k', value: null, operator: 'exact' }, null, 'value'],
  ['absent value', { key: 'k', operator: 'icontains' }, null, 'value'],
  ['is_set without value', { key: 'k', operator: 'is_set' }, null, null],
  ['in on a plain property', { key: 'k', value: 1, operator: 'in' }, null, 'operator'],
  ['not_in on a plain property', { key: 'k', value: 1, operator: 'not_in' }, null, 'operator'],
  ['flag_evaluates_to on a plain property', { key: 'k', value: true, operator: 'flag_evaluates_to' }, null, 'operator'],
  ['between min > max', { key: 'k', value: [5, 1], operator: 'between' }, null, 'value'],
  ['between scalar', { key: 'k', value: 5, operator: 'between' }, null, 'value'],
  ['not_between non-numeric bound', { key: 'k', value: ['a', 1], operator: 'not_between' }, null, 'value'],
  ['between valid', { key: 'k', value: [1, 5], operator: 'between' }, null, null],
  ['gt non-numeric', { key: 'k', value: 'abc', operator: 'gt' }, null, 'value'],
  ['gt numeric string', { key: 'k', value: '10', operator: 'gt' }, null, null],
  ['regex invalid', { key: 'k', value: '(', operator: 'regex' }, null, 'value'],
  ['regex unsupported', { key: 'k', value: '(?i:a)', operator: 'not_regex' }, null, 'value'],
  ['semver invalid', { key: 'k', value: 'abc', operator: 'semver_gt' }, null, 'value'],
  ['semver wildcard invalid', { key: 'k', value: '1.*.3', operator: 'semver_wildcard' }, null, 'value'],
  ['date non-string', { key: 'k', value: 1704067200, operator: 'is_date_before' }, null, 'value'],
  ['date unparseable', { key: 'k', value: 'soon', operator: 'is_date_after' }, null, 'value'],
  ['date relative', { key: 'k', value: '-30d', operator: 'is_date_after' }, null, null],
  ['unknown timezone', { key: 'k', value: '2024-01-01', operator: 'is_date_after' }, null, 'timezone', 'Mars/Base'],
];

for (const [name, filter, field, strictField, timezone] of rows) {
  for (const strict of [false, true]) {
    const expected = strict ? strictField : field;
    test(`compile${strict ? ' (strict)' : ''}: ${name} → ${expected ?? 'ok'}`, () => {
      const run = () => compilePropertyFilter(filter as PropertyFilter, { timezone: timezone ?? 'UTC', strict });
      if (expected === null) {
        assert.doesNotThrow(run);
        return;
      }
      assert.throws(run, (e: unknown) => e instanceof PropertyFilterError && e.field === expected && e.message.length > 0);
    });
  }
}

test('lenient compile of a match-time error evaluates like Rust (false, never throws)', () => {
  const f = compilePropertyFilter({ key: 'k', value: [5, 1], operator: 'between' }, { timezone: 'UTC' });
  assert.equal(f.test({ k: 3 }, 0), false);
});

test('PROPERTY_OPERATORS lists every Rust operator once and is frozen', () => {
  assert.equal(new Set(PROPERTY_OPERATORS).size, PROPERTY_OPERATORS.length);
  assert.equal(PROPERTY_OPERATORS.length, 35);
  assert.ok(Object.isFrozen(PROPERTY_OPERATORS));
  for (const operator of PROPERTY_OPERATORS) {
    assert.doesNotThrow(() => compilePropertyFilter({ key: 'k', value: 'x', operator }, { timezone: 'UTC' }), operator);
  }
});
