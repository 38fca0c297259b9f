/**
 * The one-pass JSON budget scan (src/json-budget.ts) and the node's budgets built on it
 * (src/eval-node/json-scan.ts): depth, member and event counts, strings with brackets and
 * escapes, the top-level key named in a refusal, and invalid text.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkJsonBudget, describeExcess, type JsonBudget, type JsonBudgetExcess } from '../../src/json-budget.js';
import { CAPTURE_BODY_BUDGET, FLAGS_BODY_BUDGET } from '../../src/eval-node/json-scan.js';
import { MAX_BODY_MEMBERS, MAX_CAPTURE_EVENTS, MAX_CAPTURE_MEMBERS, MAX_PAYLOAD_DEPTH } from '../../src/limits.js';
import { prng } from '../support/prng.js';

const LOOSE = { maxDepth: 1000, maxMembers: 1000, maxEvents: 1000 };

interface Case { name: string; text: string; budget: Partial<JsonBudget>; want: JsonBudgetExcess | null }

const CASES: Case[] = [
  // depth
  { name: 'depth at the limit', text: '[[[]]]', budget: { maxDepth: 3 }, want: null },
  { name: 'depth past the limit', text: '[[[]]]', budget: { maxDepth: 2 }, want: { kind: 'depth', limit: 2, key: null } },
  { name: 'objects and arrays both count', text: '{"a":[{"b":1}]}', budget: { maxDepth: 2 }, want: { kind: 'depth', limit: 2, key: 'a' } },
  { name: 'siblings do not add up', text: '[[1],[2],[3],{"a":1}]', budget: { maxDepth: 2 }, want: null },
  { name: 'brackets inside strings do not count', text: '["[[[[{{{{", "]]]]"]', budget: { maxDepth: 1 }, want: null },
  { name: 'an escaped quote does not end a string', text: '["\\"[[[[", 1]', budget: { maxDepth: 1 }, want: null },
  { name: 'an escaped backslash does end it', text: '["\\\\", [[1]]]', budget: { maxDepth: 2 }, want: { kind: 'depth', limit: 2, key: null } },
  { name: 'an escaped backslash then an escaped quote', text: '["\\\\\\\"[[[", 1]', budget: { maxDepth: 1 }, want: null },
  { name: 'a string of backslashes only', text: '["\\\\\\\\", [[1]]]', budget: { maxDepth: 2 }, want: { kind: 'depth', limit: 2, key: null } },
  { name: 'unicode escapes are skipped', text: '["\\u005b\\u007b", "é[", "😀{"]', budget: { maxDepth: 1 }, want: null },
  { name: 'the refusal names the top-level field', text: '{"name":"x","filters":{"groups":[[[1]]]}}', budget: { maxDepth: 3 }, want: { kind: 'depth', limit: 3, key: 'filters' } },
  { name: 'an escaped top-level key is decoded', text: '{"fil\\u0074ers":[[[1]]]}', budget: { maxDepth: 3 }, want: { kind: 'depth', limit: 3, key: 'filters' } },
  { name: 'a string value at the top level is not a key', text: '{"k":"other","v":[[[1]]]}', budget: { maxDepth: 3 }, want: { kind: 'depth', limit: 3, key: 'v' } },
  // members
  { name: 'members at the limit', text: '[1,2,3]', budget: { maxMembers: 3 }, want: null },
  { name: 'members past the limit', text: '[1,2,3]', budget: { maxMembers: 2 }, want: { kind: 'members', limit: 2, key: null } },
  { name: 'object members and nested elements add up', text: '{"a":1,"b":[1,2]}', budget: { maxMembers: 4 }, want: null },
  { name: 'the fifth member is refused, under its key', text: '{"a":1,"b":[1,2,3]}', budget: { maxMembers: 4 }, want: { kind: 'members', limit: 4, key: 'b' } },
  { name: 'empty containers have no members', text: '[[],{},[ ],{\n}]', budget: { maxMembers: 4 }, want: null },
  { name: 'whitespace before the first member', text: '[ \n\t1 , 2 ]', budget: { maxMembers: 1 }, want: { kind: 'members', limit: 1, key: null } },
  { name: 'commas inside strings are not members', text: '["a,b,c,d,e,f"]', budget: { maxMembers: 1 }, want: null },
  // events
  { name: 'a top-level array is the event list', text: '[{"event":"a"},{"event":"b"}]', budget: { maxEvents: 2 }, want: null },
  { name: 'a top-level array over the event limit', text: '[{"event":"a"},{"event":"b"},{"event":"c"}]', budget: { maxEvents: 2 }, want: { kind: 'events', limit: 2, key: null } },
  { name: 'the batch envelope', text: '{"api_key":"k","batch":[{},{},{}]}', budget: { maxEvents: 2 }, want: { kind: 'events', limit: 2, key: 'batch' } },
  { name: 'only the batch array counts', text: '{"batch":[{"properties":{"a":[1,2,3,4]}},{}],"x":[1,2,3,4]}', budget: { maxEvents: 2 }, want: null },
  { name: 'an escaped batch key counts', text: '{"ba\\u0074ch":[1,2,3]}', budget: { maxEvents: 2 }, want: { kind: 'events', limit: 2, key: 'batch' } },
  { name: 'a nested batch key does not', text: '{"properties":{"batch":[1,2,3]}}', budget: { maxEvents: 2 }, want: null },
  { name: 'a batch value that is not an array does not', text: '{"batch":{"a":1,"b":2,"c":3}}', budget: { maxEvents: 2 }, want: null },
  { name: 'a string "batch" that is a value does not', text: '{"k":"batch","v":[1,2,3]}', budget: { maxEvents: 2 }, want: null },
  { name: 'one event object', text: '{"event":"x","properties":{"a":1,"b":2,"c":3}}', budget: { maxEvents: 1 }, want: null },
  // invalid JSON: counted as far as it goes, left for JSON.parse to refuse
  { name: 'an unterminated string', text: '["abc', budget: { maxDepth: 1 }, want: null },
  { name: 'a truncated object', text: '{"a":', budget: {}, want: null },
  { name: 'stray closers do not lower the depth below zero', text: ']]]]][[[', budget: { maxDepth: 2 }, want: { kind: 'depth', limit: 2, key: null } },
  { name: 'not JSON at all', text: 'hello, world, again', budget: { maxMembers: 1, maxEvents: 0 }, want: null },
  { name: 'empty text', text: '', budget: { maxDepth: 0, maxMembers: 0 }, want: null },
];

for (const c of CASES) {
  test(`checkJsonBudget: ${c.name}`, () => {
    assert.deepEqual(checkJsonBudget(c.text, { ...LOOSE, ...c.budget }), c.want);
  });
}

/** A random JSON value: nested arrays and objects, strings full of brackets, quotes and escapes. */
function randomValue(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth > 6 || r < 0.3) {
    const scalars = [0, -1.5e10, true, false, null, '', 'a"b', '[{', '\\', '\\"]}', 'é😀', '\u0000,'];
    return scalars[Math.floor(rand() * scalars.length)];
  }
  const n = Math.floor(rand() * 5);
  if (r < 0.65) return Array.from({ length: n }, () => randomValue(rand, depth + 1));
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}${rand() < 0.2 ? '"[' : ''}`, randomValue(rand, depth + 1)]));
}

/** Depth and member count of a parsed value, by walking it. */
function measure(v: unknown): { depth: number; members: number } {
  if (typeof v !== 'object' || v === null) return { depth: 0, members: 0 };
  const children = Array.isArray(v) ? v : Object.values(v);
  let depth = 0;
  let members = children.length;
  for (const c of children) { const m = measure(c); depth = Math.max(depth, m.depth); members += m.members; }
  return { depth: depth + 1, members };
}

test('on random JSON, the scan agrees with a walk of the parsed value, to the unit', () => {
  const rand = prng(20_240_501);
  for (let i = 0; i < 300; i++) {
    const value = randomValue(rand, 0);
    const text = JSON.stringify(value, null, rand() < 0.5 ? 1 : undefined);
    const { depth, members } = measure(JSON.parse(text));
    assert.equal(checkJsonBudget(text, { maxDepth: depth, maxMembers: members }), null, text);
    if (depth > 0) assert.equal(checkJsonBudget(text, { maxDepth: depth - 1, maxMembers: members })?.kind, 'depth', text);
    if (members > 0) assert.equal(checkJsonBudget(text, { maxDepth: depth, maxMembers: members - 1 })?.kind, 'members', text);
  }
});

test('without maxEvents, events are not counted', () => {
  assert.equal(checkJsonBudget('[1,2,3]', { maxDepth: 5, maxMembers: 5 }), null);
});

test('refusals describe the limit they passed', () => {
  assert.equal(describeExcess({ kind: 'depth', limit: 256, key: null }), 'JSON nests deeper than 256 levels');
  assert.equal(describeExcess({ kind: 'members', limit: 10, key: 'a' }), 'JSON holds more than 10 array elements and object members');
  assert.equal(describeExcess({ kind: 'events', limit: 3, key: 'batch' }), 'batch holds more than 3 events');
});

test('the node budgets use the documented limits', () => {
  assert.deepEqual({ ...FLAGS_BODY_BUDGET }, { maxDepth: MAX_PAYLOAD_DEPTH, maxMembers: MAX_BODY_MEMBERS });
  assert.deepEqual({ ...CAPTURE_BODY_BUDGET }, { maxDepth: MAX_PAYLOAD_DEPTH, maxMembers: MAX_CAPTURE_MEMBERS, maxEvents: MAX_CAPTURE_EVENTS });
});

test('hostile texts are refused at the first character past the budget', () => {
  const nested = '['.repeat(1_000_000) + ']'.repeat(1_000_000);
  assert.deepEqual(checkJsonBudget(nested, CAPTURE_BODY_BUDGET), { kind: 'depth', limit: MAX_PAYLOAD_DEPTH, key: null });
  const wide = `{"event":"x","properties":{${Array.from({ length: MAX_CAPTURE_MEMBERS + 1 }, (_, i) => `"k${i}":1`).join(',')}}}`;
  assert.deepEqual(checkJsonBudget(wide, CAPTURE_BODY_BUDGET), { kind: 'members', limit: MAX_CAPTURE_MEMBERS, key: 'properties' });
  const events = `{"batch":[${'{"event":"e","distinct_id":"d"},'.repeat(MAX_CAPTURE_EVENTS)}{"event":"e","distinct_id":"d"}]}`;
  assert.deepEqual(checkJsonBudget(events, CAPTURE_BODY_BUDGET), { kind: 'events', limit: MAX_CAPTURE_EVENTS, key: 'batch' });
  // The same batch at the limit passes: nothing but the count refused it.
  const atLimit = `{"batch":[${'{"event":"e","distinct_id":"d"},'.repeat(MAX_CAPTURE_EVENTS - 1)}{"event":"e","distinct_id":"d"}]}`;
  assert.equal(checkJsonBudget(atLimit, CAPTURE_BODY_BUDGET), null);
});

