import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatRevision, parseInt64MapKey, parseRevision, RevisionError } from '../../src/contract/messages.js';
import { decodePayload, encodePayload } from '../../src/contract/payload.js';

const revisions: { name: string; input: string | number | undefined | null; expected: number | 'error' }[] = [
  { name: 'decimal string', input: '42', expected: 42 },
  { name: 'zero', input: '0', expected: 0 },
  { name: 'empty string is the proto default', input: '', expected: 0 },
  { name: 'missing', input: undefined, expected: 0 },
  { name: 'number', input: 7, expected: 7 },
  { name: 'largest safe integer', input: String(Number.MAX_SAFE_INTEGER), expected: Number.MAX_SAFE_INTEGER },
  { name: 'beyond 2^53', input: '9007199254740993', expected: 'error' },
  { name: 'negative', input: '-1', expected: 'error' },
  { name: 'not a number', input: 'abc', expected: 'error' },
  { name: 'fraction', input: 1.5, expected: 'error' },
];

for (const c of revisions) {
  test(`parseRevision: ${c.name}`, () => {
    if (c.expected === 'error') assert.throws(() => parseRevision(c.input), RevisionError);
    else assert.equal(parseRevision(c.input), c.expected);
  });
}

test('formatRevision is the inverse of parseRevision', () => {
  for (const n of [0, 1, 123456789, Number.MAX_SAFE_INTEGER]) assert.equal(parseRevision(formatRevision(n)), n);
});

test('payload codec round-trips JSON-like entities and decodes empty bytes to null', () => {
  const flag = { id: 1, key: 'a', filters: { groups: [{ properties: [], rollout_percentage: 33.5, variant: null }], multivariate: { variants: [{ key: 'x', rollout_percentage: 100 }] } }, evaluation_tags: [], deleted: false };
  assert.deepEqual(decodePayload(encodePayload(flag)), flag);
  assert.equal(decodePayload(new Uint8Array(0)), null);
});

const hash = (bytes: number[]): string => String.fromCharCode(...bytes);
const mapKeys: { name: string; key: string; expected: number | 'error' }[] = [
  { name: 'decimal', key: '42', expected: 42 },
  { name: 'long hash of 1', key: hash([1, 0, 0, 0, 0, 0, 0, 0]), expected: 1 },
  { name: 'long hash of 2^32 + 258', key: hash([2, 1, 0, 0, 1, 0, 0, 0]), expected: 2 ** 32 + 258 },
  { name: 'long hash of -1', key: hash([255, 255, 255, 255, 255, 255, 255, 255]), expected: 'error' },
  { name: 'neither', key: 'abc', expected: 'error' },
];
for (const c of mapKeys) {
  test(`parseInt64MapKey: ${c.name}`, () => {
    if (c.expected === 'error') assert.throws(() => parseInt64MapKey(c.key), RevisionError);
    else assert.equal(parseInt64MapKey(c.key), c.expected);
  });
}
