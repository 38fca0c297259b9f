/**
 * String forms, Rust f64 parsing and case folding (Rust `to_string_representation`,
 * `to_f64_representation`; research/posthog-flag-evaluation.md §3.3, §8).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { asciiLower, jsonNumberText, parseRustF64, stringForm } from '../../../src/evaluation/properties/coerce.js';

const numbers: [number, string][] = [
  [0, '0'], [-0, '0'], [1, '1'], [-7, '-7'], [1.5, '1.5'], [0.1, '0.1'], [-0.25, '-0.25'],
  [123456789.123, '123456789.123'], [0.00001, '0.00001'], [0.0001234, '0.0001234'],
  [1e-6, '1e-6'], [2.5e-6, '2.5e-6'], [1e-7, '1e-7'], [-1.5e-10, '-1.5e-10'], [5e-324, '5e-324'],
  [1e16, '10000000000000000'], [9007199254740993, '9007199254740992'], [1e21, '1e21'],
  [2 ** 64, '1.8446744073709552e19'], [-(2 ** 63), '-9223372036854775808'], [1.7976931348623157e308, '1.7976931348623157e308'],
  [NaN, 'null'], [Infinity, 'null'],
];
for (const [n, text] of numbers) {
  test(`jsonNumberText(${n})`, () => assert.equal(jsonNumberText(n), text));
}

const forms: [string, unknown, string][] = [
  ['string raw', 'Hello "x"', 'Hello "x"'],
  ['true', true, 'true'],
  ['false', false, 'false'],
  ['null', null, 'null'],
  ['undefined as null', undefined, 'null'],
  ['array compact', [1, 'a', null, true], '[1,"a",null,true]'],
  ['nested numbers in ryu layout', [1.5, 1e21, 2.5e-6, { a: 1e-7 }], '[1.5,1e21,2.5e-6,{"a":1e-7}]'],
  ['object keeps insertion order (gap: serde_json sorts)', { b: 1, a: 2 }, '{"b":1,"a":2}'],
  ['string escapes', ['a"b\\c\n'], '["a\\"b\\\\c\\n"]'],
  ['user text resembling the internal sentinel', ['\u0000#n:1:n#\u0000'], '["\\u0000#n:1:n#\\u0000"]'],
];
for (const [name, value, text] of forms) {
  test(`stringForm: ${name}`, () => assert.equal(stringForm(value), text));
}

const floats: [string, number | null][] = [
  ['1', 1], ['-1', -1], ['+2', 2], ['1.', 1], ['.5', 0.5], ['1.5e3', 1500], ['1E-2', 0.01], ['007', 7],
  ['inf', Infinity], ['-Infinity', -Infinity], ['+INF', Infinity], ['1e400', Infinity],
  ['', null], [' 1', null], ['1 ', null], ['.', null], ['e5', null], ['1e', null], ['0x10', null],
  ['1_000', null], ['10px', null], ['infinit', null], ['--1', null], ['1,5', null], ['true', null],
];
for (const [s, n] of floats) {
  test(`parseRustF64(${JSON.stringify(s)})`, () => assert.equal(parseRustF64(s), n));
}
test('parseRustF64 NaN spellings', () => {
  for (const s of ['NaN', 'nan', '-nan', '+NAN']) assert.ok(Number.isNaN(parseRustF64(s)), s);
});

const lowers: [string, string][] = [
  ['ABC', 'abc'], ['abc', 'abc'], ['ÉCOLE', 'École'], ['İI', 'İi'], ['ΣΑ', 'ΣΑ'], ['MiXeD 123', 'mixed 123'],
];
for (const [s, lower] of lowers) {
  test(`asciiLower(${JSON.stringify(s)})`, () => assert.equal(asciiLower(s), lower));
}
