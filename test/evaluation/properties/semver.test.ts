/**
 * semver_* operators: Rust normalisation, the semver crate's precedence and VersionReq matching
 * (research/posthog-flag-evaluation.md §3.3).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePropertyFilter } from '../../../src/evaluation/properties/index.js';
import { parseVersion, parseVersionReq } from '../../../src/evaluation/properties/semver.js';

function check(operator: string, filter: unknown, actual: unknown): boolean {
  return compilePropertyFilter({ key: 'v', operator, value: filter }, { timezone: 'UTC' }).test({ v: actual }, 0);
}

type NormRow = [input: string, canonical: string | null];
const normalisation: NormRow[] = [
  ['1.2.3', '1.2.3'],
  ['v1.2.3', '1.2.3'],
  [' 1.2.3 ', '1.2.3'],
  ['v 1.2.3', '1.2.3'],
  [' v1.2.3', null], // Rust strips `v` before trimming
  ['V1.2.3', null],
  ['vv1.2.3', null],
  ['1', '1.0.0'],
  ['1.2', '1.2.0'],
  ['3.08', '3.8.0'],
  ['01.02.03', '1.2.3'],
  ['000.0.0', '0.0.0'],
  ['1.2.3.4', null],
  ['1.2.3-alpha.1', '1.2.3-alpha.1'],
  ['1.2-beta', '1.2.0-beta'],
  ['1.2.3+build.007', '1.2.3+build.007'],
  ['1.2.3-rc.1+build', '1.2.3-rc.1+build'],
  ['1.0.0-01', null], // numeric pre-release identifiers may not have leading zeros
  ['1.0.0-', null],
  ['1.0.0-a..b', null],
  ['1.0.0+', null],
  ['1.0.0-a_b', null],
  ['1..3', null],
  ['', null],
  ['abc', null],
  ['1.x', null],
  ['1.2.3 ', '1.2.3'],
  ['1. 2.3', null],
  ['18446744073709551615.0.0', '18446744073709551615.0.0'],
  ['18446744073709551616.0.0', null],
  // Rust's test_semver_invalid_versions
  ['1.2.abc', null],
  ['1.2.3.', null],
  ['.1.2.3', null],
  ['1.-2.3', null],
  ['3.07', '3.7.0'],
];

for (const [input, canonical] of normalisation) {
  test(`parseVersion: ${JSON.stringify(input)}`, () => {
    const v = parseVersion(input);
    const text = v === null ? null
      : `${v.major}.${v.minor}.${v.patch}${v.pre.length ? '-' + v.pre.join('.') : ''}${v.build.length ? '+' + v.build.join('.') : ''}`;
    assert.equal(text, canonical);
  });
}

// Strictly increasing (semver.org §11 example plus numbers and build metadata).
const ascending = [
  '0.9.9', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2',
  '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0', '1.0.0+build', '1.0.1', '1.2.0', '1.10.0', '2.0.0',
  '10.0.0', '18446744073709551615.0.0',
];

test('semver precedence: every ordered pair', () => {
  for (let i = 0; i < ascending.length; i++) {
    for (let j = 0; j < ascending.length; j++) {
      const a = ascending[i], b = ascending[j];
      assert.equal(check('semver_lt', b, a), i < j, `${a} < ${b}`);
      assert.equal(check('semver_lte', b, a), i <= j, `${a} <= ${b}`);
      assert.equal(check('semver_gt', b, a), i > j, `${a} > ${b}`);
      assert.equal(check('semver_gte', b, a), i >= j, `${a} >= ${b}`);
      assert.equal(check('semver_eq', b, a), i === j, `${a} == ${b}`);
      assert.equal(check('semver_neq', b, a), i !== j, `${a} != ${b}`);
    }
  }
});

type Row = [name: string, operator: string, filter: unknown, actual: unknown, expected: boolean];
const rows: Row[] = [
  ['eq with padding', 'semver_eq', '1.2', '1.2.0', true],
  ['eq leading zeros on both sides', 'semver_eq', '3.08', '3.8', true],
  ['eq v on filter', 'semver_eq', 'v2.0.0', '2.0.0', true],
  ['eq build metadata is significant', 'semver_eq', '1.0.0', '1.0.0+build', false],
  ['gt numeric, not lexical', 'semver_gt', '1.2.0', '1.10.0', true],
  ['gt pre-release below release', 'semver_gt', '1.0.0', '1.0.0-rc.1', false],
  ['lt invalid actual', 'semver_lt', '9.9.9', 'not-a-version', false],
  ['gt invalid filter', 'semver_gt', '1.x', '2.0.0', false],
  ['gte empty filter', 'semver_gte', '', '1.0.0', false],
  // tilde: ~X.Y.Z := >=X.Y.Z <X.(Y+1).0; the filter is padded first, so ~1 is ~1.0.0
  ['tilde lower bound', 'semver_tilde', '1.2.3', '1.2.3', true],
  ['tilde within minor', 'semver_tilde', '1.2.3', '1.2.99', true],
  ['tilde below', 'semver_tilde', '1.2.3', '1.2.2', false],
  ['tilde next minor', 'semver_tilde', '1.2.3', '1.3.0', false],
  ['tilde two parts', 'semver_tilde', '1.2', '1.2.7', true],
  ['tilde one part is padded: ~1.0.0', 'semver_tilde', '1', '1.1.0', false],
  ['tilde one part lower', 'semver_tilde', '1', '1.0.5', true],
  ['tilde leading zeros', 'semver_tilde', '3.08', '3.8.4', true],
  ['tilde excludes pre-release of the bound', 'semver_tilde', '1.2.3', '1.2.3-beta', false],
  ['tilde excludes other pre-releases', 'semver_tilde', '1.2.3', '1.2.4-beta', false],
  ['tilde pre-release filter: later pre-release', 'semver_tilde', '1.2.3-beta.2', '1.2.3-beta.3', true],
  ['tilde pre-release filter: earlier pre-release', 'semver_tilde', '1.2.3-beta.2', '1.2.3-beta.1', false],
  ['tilde pre-release filter: release', 'semver_tilde', '1.2.3-beta.2', '1.2.4', true],
  ['tilde pre-release filter: other patch pre-release', 'semver_tilde', '1.2.3-beta.2', '1.2.4-alpha', false],
  ['tilde invalid filter', 'semver_tilde', 'x.y', '1.0.0', false],
  // caret
  ['caret major', 'semver_caret', '1.2.3', '1.99.0', true],
  ['caret next major', 'semver_caret', '1.2.3', '2.0.0', false],
  ['caret below', 'semver_caret', '1.2.3', '1.2.2', false],
  ['caret 0.y', 'semver_caret', '0.2.3', '0.2.9', true],
  ['caret 0.y next minor', 'semver_caret', '0.2.3', '0.3.0', false],
  ['caret 0.0.z exact', 'semver_caret', '0.0.3', '0.0.3', true],
  ['caret 0.0.z next patch', 'semver_caret', '0.0.3', '0.0.4', false],
  ['caret 0 is ^0.0.0', 'semver_caret', '0', '0.0.1', false],
  ['caret 0 matches 0.0.0', 'semver_caret', '0', '0.0.0', true],
  ['caret 1 is ^1.0.0', 'semver_caret', '1', '1.5.0', true],
  ['caret excludes pre-release', 'semver_caret', '1.2.3', '1.3.0-beta', false],
  ['caret v prefix', 'semver_caret', 'v1.2', '1.4.0', true],
  // wildcard
  ['wildcard X.Y.*', 'semver_wildcard', '1.2.*', '1.2.0', true],
  ['wildcard X.Y.* high patch', 'semver_wildcard', '1.2.*', '1.2.99', true],
  ['wildcard X.Y.* next minor', 'semver_wildcard', '1.2.*', '1.3.0', false],
  ['wildcard X.Y.* excludes pre-release', 'semver_wildcard', '1.2.*', '1.2.5-beta', false],
  ['wildcard X.*', 'semver_wildcard', '1.*', '1.99.0', true],
  ['wildcard X.* next major', 'semver_wildcard', '1.*', '2.0.0', false],
  ['wildcard X.*.*', 'semver_wildcard', '1.*.*', '1.5.5', true],
  ['wildcard *', 'semver_wildcard', '*', '5.0.0', true],
  ['wildcard *.* is rejected by the crate', 'semver_wildcard', '*.*', '5.0.0', false],
  ['wildcard * excludes pre-release', 'semver_wildcard', '*', '1.0.0-beta', false],
  ['wildcard x spelling', 'semver_wildcard', '1.2.x', '1.2.3', true],
  ['wildcard X spelling', 'semver_wildcard', '1.2.X', '1.2.3', true],
  ['wildcard leading zeros', 'semver_wildcard', '3.08.*', '3.8.1', true],
  ['wildcard v prefix', 'semver_wildcard', 'v1.2.*', '1.2.1', true],
  ['wildcard 1.*.3 is invalid', 'semver_wildcard', '1.*.3', '1.0.3', false],
  ['wildcard without * is a caret requirement', 'semver_wildcard', '1.2.3', '1.9.0', true],
  ['wildcard comparator syntax passes through', 'semver_wildcard', '>=1.2.0, <1.5.0', '1.4.0', true],
  ['wildcard empty', 'semver_wildcard', '', '1.0.0', false],
  ['wildcard invalid actual', 'semver_wildcard', '1.*', 'one', false],
];

for (const [name, operator, filter, actual, expected] of rows) {
  test(`${operator}: ${name}`, () => {
    assert.equal(check(operator, filter, actual), expected);
  });
}

type ReqRow = [req: string, valid: boolean];
const reqs: ReqRow[] = [
  ['~1.2.3', true], ['^0.0.0', true], ['1.2.x', true], ['*', true], ['x', true], ['>= 1.2, < 2', true],
  ['=1.2.3-beta', true], ['', false], ['1.*.3', false], ['01.2.3', false], ['1.2.*-beta', false],
  ['^1.2.3.4', false], ['>=*', false], ['=*', false], ['*.*', false], ['1.2.3,', false], ['*, 1.0.0', false],
  ['X', true], [' * ', true], ['>=\t1.0.0', false], ['>=  1.0.0 ,  <2', true], ['1.2.3+build', true], ['1.2-beta', false],
];
for (const [req, valid] of reqs) {
  test(`parseVersionReq: ${JSON.stringify(req)}`, () => {
    assert.equal(parseVersionReq(req) !== null, valid);
  });
}
