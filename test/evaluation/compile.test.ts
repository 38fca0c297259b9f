/** compileProject: definition-shape errors, per-flag problems, dependency order. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileProject, DefinitionError, type ProjectDefinitions } from '../../src/evaluation/index.js';
import { flag } from './support.js';

const shapeErrors: Array<[name: string, defs: unknown, field: string]> = [
  ['not an object', 42, 'definitions'],
  ['null', null, 'definitions'],
  ['flags missing', { group_type_mapping: {}, cohorts: {} }, 'flags'],
  ['flags not an array', { flags: {}, group_type_mapping: {}, cohorts: {} }, 'flags'],
  ['group_type_mapping not an object', { flags: [], group_type_mapping: [], cohorts: {} }, 'group_type_mapping'],
  ['cohorts not an object', { flags: [], group_type_mapping: {}, cohorts: 'x' }, 'cohorts'],
];
for (const [name, defs, field] of shapeErrors) {
  test(`DefinitionError: ${name}`, () => {
    assert.throws(() => compileProject(defs as ProjectDefinitions), (e: unknown) => e instanceof DefinitionError && e.field === field);
  });
}

test('absent group_type_mapping and cohorts are empty', () => {
  assert.equal(compileProject({ flags: [] } as unknown as ProjectDefinitions).flags.length, 0);
});

const flagProblems: Array<[name: string, raw: unknown, flagKey: string, field: RegExp]> = [
  ['entry without key', { id: 1, active: true, filters: {} }, 'flags[0]', /^key$/],
  ['non-integer id', { id: 'x', key: 'k', active: true, filters: {} }, 'k', /^id$/],
  ['filters not an object', { id: 1, key: 'k', active: true, filters: null }, 'k', /^filters$/],
  ['groups not an array', { id: 1, key: 'k', active: true, filters: { groups: {} } }, 'k', /^filters\.groups$/],
  ['bad rollout', { id: 1, key: 'k', active: true, filters: { groups: [{ rollout_percentage: '5' }] } }, 'k', /^filters\.groups\[0\]\.rollout_percentage$/],
  ['bad variant share', { id: 1, key: 'k', active: true, filters: { multivariate: { variants: [{ key: 'a' }] } } }, 'k', /^filters\.multivariate\.variants\[0\]\.rollout_percentage$/],
  ['unknown property type', { id: 1, key: 'k', active: true, filters: { groups: [{ properties: [{ key: 'a', type: 'weird' }] }] } }, 'k', /^filters\.groups\[0\]\.properties\[0\]\.type$/],
  ['bad cohort id', { id: 1, key: 'k', active: true, filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 'abc' }] }] } }, 'k', /\.value$/],
  ['bad holdout', { id: 1, key: 'k', active: true, filters: { holdout: { id: 1 } } }, 'k', /^filters\.holdout\.exclusion_percentage$/],
  ['new rule format', { id: 1, key: 'k', active: true, filters: { version: 2 } }, 'k', /^filters\.version$/],
];
for (const [name, raw, flagKey, field] of flagProblems) {
  test(`problem: ${name}`, () => {
    const compiled = compileProject({ flags: [raw as never, flag('fine', { groups: [{}] })], group_type_mapping: {}, cohorts: {} });
    assert.equal(compiled.problems.length, 1, JSON.stringify(compiled.problems));
    assert.equal(compiled.problems[0]!.flagKey, flagKey);
    assert.match(compiled.problems[0]!.field, field);
    assert.equal(compiled.byKey.get('fine')!.failure, null, 'the other flag compiles');
  });
}

test('duplicate keys: the first wins, the second is a problem', () => {
  const compiled = compileProject({ flags: [flag('k', { groups: [{}] }), flag('k', { groups: [] })], group_type_mapping: {}, cohorts: {} });
  assert.equal(compiled.flags.length, 1);
  assert.equal(compiled.problems[0]!.field, 'key');
});

test('dependency order: every flag follows its dependencies; independent flags keep stored order', () => {
  const dep = (id: number) => ({ key: String(id), type: 'flag', operator: 'flag_evaluates_to', value: true });
  const compiled = compileProject({
    flags: [
      flag('c', { groups: [{ properties: [dep(2)] }] }, { id: 3 }),
      flag('x', { groups: [{}] }, { id: 10 }),
      flag('b', { groups: [{ properties: [dep(1)] }] }, { id: 2 }),
      flag('a', { groups: [{}] }, { id: 1 }),
      flag('y', { groups: [{}] }, { id: 11 }),
    ],
    group_type_mapping: {}, cohorts: {},
  });
  const order = compiled.flags.map((f) => f.key);
  assert.ok(order.indexOf('a') < order.indexOf('b') && order.indexOf('b') < order.indexOf('c'), order.join(','));
  assert.ok(order.indexOf('x') < order.indexOf('y'), order.join(','));
  for (const f of compiled.flags) for (const d of f.dependencySlots) assert.ok(d < f.slot, `${f.key} after its dependency`);
});

test('compiled project is frozen', () => {
  const compiled = compileProject({ flags: [flag('a', { groups: [{}] })], group_type_mapping: {}, cohorts: {} });
  assert.ok(Object.isFrozen(compiled) && Object.isFrozen(compiled.flags) && Object.isFrozen(compiled.flags[0]));
});
