/** Pure helpers: Python-style JSON text, filter dates, dependency walk, list query parsing. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pythonJsonDumps } from '../../../src/control-plane/feature-flags/json-text.js';
import { isValidFilterDate } from '../../../src/control-plane/feature-flags/dates.js';
import { checkFlagDependencies, parseFlagId, type DependencyFlag } from '../../../src/control-plane/feature-flags/dependencies.js';
import { parseFlagListQuery } from '../../../src/control-plane/feature-flags/list-query.js';
import { isApiError } from '../../../src/errors.js';

test('pythonJsonDumps matches json.dumps defaults', () => {
  const cases: [unknown, string][] = [
    [{ a: 1, b: [true, null, 'x'] }, '{"a": 1, "b": [true, null, "x"]}'],
    ['é"\n', '"\\u00e9\\"\\n"'],
    [1.5, '1.5'],
    [1e-7, '1e-07'],
    [[], '[]'],
    [{}, '{}'],
    ['😀', '"\\ud83d\\ude00"'],
  ];
  for (const [v, want] of cases) assert.equal(pythonJsonDumps(v), want);
  assert.throws(() => pythonJsonDumps(NaN));
});

test('isValidFilterDate', () => {
  for (const ok of ['-7d', '1w', '24h', '-3m', '1y', '2024-01-31', '2024-01-31T10:00:00Z', '2024-01-31 10:00:00', '2024-01-31T10:00:00.123+02:00', 'Jan 5 2024']) {
    assert.equal(isValidFilterDate(ok), true, ok);
  }
  for (const bad of ['', 'not-a-date', '2024-02-30', '7', 7, null, '-7x', '2024-13-01', '10000d']) {
    assert.equal(isValidFilterDate(bad), false, String(bad));
  }
});

test('parseFlagId: ints and integer strings only', () => {
  assert.equal(parseFlagId(5), 5);
  assert.equal(parseFlagId(' 12 '), 12);
  assert.equal(parseFlagId('1.5'), null);
  assert.equal(parseFlagId(1.5), null);
  assert.equal(parseFlagId('abc'), null);
});

function graph(flags: DependencyFlag[]) {
  const byId = new Map(flags.map((f) => [f.id, f]));
  let calls = 0;
  return { lookup: async (id: number) => { calls++; return byId.get(id) ?? null; }, calls: () => calls };
}
const dep = (...ids: number[]) => ({ groups: [{ properties: ids.map((id) => ({ key: String(id), type: 'flag', value: true, operator: 'flag_evaluates_to' })) }] });

test('dependency walk: cycle through the written flag, reported with keys', async () => {
  const g = graph([
    { id: 1, key: 'a', active: true, filters: {} },
    { id: 2, key: 'b', active: true, filters: dep(3) },
    { id: 3, key: 'c', active: true, filters: dep(1) },
  ]);
  await assert.rejects(checkFlagDependencies(dep(2), { id: 1, key: 'a' }, g.lookup),
    (e: unknown) => isApiError(e) && e.message === 'Circular dependency detected: a → b → c → a' && e.attr === 'filters');
  await checkFlagDependencies(dep(2), { id: null, key: 'new' }, g.lookup); // a new flag cannot be on a cycle
});

test('dependency walk: a wide diamond lattice expands each node once', async () => {
  // 20 layers of 2 nodes, each depending on both nodes of the next layer: 2^20 paths, 40 nodes.
  const flags: DependencyFlag[] = [];
  for (let layer = 0; layer < 20; layer++) {
    for (let k = 0; k < 2; k++) {
      const id = layer * 2 + k + 10;
      flags.push({ id, key: `n${id}`, active: true, filters: layer < 19 ? dep((layer + 1) * 2 + 10, (layer + 1) * 2 + 11) : {} });
    }
  }
  const g = graph(flags);
  await checkFlagDependencies(dep(10, 11), { id: 1, key: 'root' }, g.lookup);
  assert.ok(g.calls() < 200, `lookups: ${g.calls()}`);
});

test('parseFlagListQuery', () => {
  const q = parseFlagListQuery(new URLSearchParams('active=STALE&type=multivariant&search= x &tags=["A "]&excluded_properties=["k"]&created_by_id=1,2,x&evaluation_runtime=both&order=-key'));
  assert.deepEqual(q, {
    active: 'stale', type: 'multivariant', search: 'x', tags: ['a'], excludedKeys: ['k'], createdByIds: [1, 2],
    evaluationRuntime: 'all', order: { field: 'key', desc: true },
  });
  assert.deepEqual(parseFlagListQuery(new URLSearchParams('')), { order: { field: 'created_at', desc: true } });
  assert.throws(() => parseFlagListQuery(new URLSearchParams('order=secret')), (e: unknown) => isApiError(e) && e.attr === 'order' && e.status === 400);
});
