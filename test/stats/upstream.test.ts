/**
 * PostHog's and GrowthBook's own statistics test suites, ported as vectors
 * (test/stats/vectors/posthog-stats.json, growthbook-stats.json; each vector names its upstream
 * repository, file, test and commit), reproduced through `analyze` — the entry point the CLI and
 * the query endpoint use — within the tolerance of the upstream assertion.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { analyze, InputError } from '../../src/stats/analyze.js';

type Expected = number | string | boolean | null | { gt?: number; lt?: number; value?: number; tolerance?: number };
interface Vector { id: string; source: { repo: string; path: string; test: string; commit: string | null }; tolerance: number; input: unknown; expect?: Record<string, Expected>; expect_error?: string }

const DIR = path.join(PACKAGE_ROOT, 'test', 'stats', 'vectors');
const FILES = ['posthog-stats.json', 'growthbook-stats.json'];

function at(out: unknown, dotted: string): unknown {
  return dotted.split('.').reduce<unknown>((v, k) => (v === null || v === undefined ? undefined : (v as Record<string, unknown>)[k]), out);
}

function check(actual: unknown, expected: Expected, tol: number, where: string): void {
  if (expected !== null && typeof expected === 'object') {
    if (expected.value !== undefined) return check(actual, expected.value, expected.tolerance ?? tol, where);
    assert.equal(typeof actual, 'number', `${where}: ${JSON.stringify(actual)}`);
    if (expected.gt !== undefined) assert.ok((actual as number) > expected.gt, `${where}: ${actual} > ${expected.gt}`);
    if (expected.lt !== undefined) assert.ok((actual as number) < expected.lt, `${where}: ${actual} < ${expected.lt}`);
    return;
  }
  if (expected === 'Infinity' || expected === '-Infinity') return assert.equal(actual, Number(expected), where);
  if (typeof expected === 'number') {
    assert.equal(typeof actual, 'number', `${where}: ${JSON.stringify(actual)}`);
    assert.ok(Math.abs((actual as number) - expected) <= tol, `${where}: ${actual} vs ${expected} (±${tol})`);
    return;
  }
  if (typeof expected === 'string' && typeof actual === 'string' && expected !== actual) {
    assert.ok(actual.includes(expected), `${where}: "${actual}" should contain "${expected}"`);
    return;
  }
  assert.equal(actual, expected, where);
}

const all: Vector[] = [];
for (const file of FILES) {
  const { vectors } = JSON.parse(fs.readFileSync(path.join(DIR, file), 'utf8')) as { vectors: Vector[] };
  for (const v of vectors) {
    all.push(v);
    test(`${file} ${v.id} (${v.source.path.split('/').pop()} ${v.source.test})`, () => {
      if (v.expect_error !== undefined) {
        assert.throws(() => analyze(v.input), (e: unknown) => e instanceof InputError && new RegExp(v.expect_error!).test(e.message), `expected an InputError matching /${v.expect_error}/`);
        return;
      }
      const out = analyze(v.input);
      for (const [field, expected] of Object.entries(v.expect ?? {})) check(at(out, field), expected, v.tolerance, `${v.id}.${field}`);
    });
  }
}

test('every vector names its upstream repository, file and test, and expects something', () => {
  assert.ok(all.length >= 80, `${all.length} vectors`);
  assert.equal(new Set(all.map((v) => v.id)).size, all.length, 'vector ids are unique');
  for (const v of all) {
    assert.ok(v.source.repo && v.source.path && v.source.test, v.id);
    assert.ok(v.expect !== undefined || v.expect_error !== undefined, v.id);
  }
});
