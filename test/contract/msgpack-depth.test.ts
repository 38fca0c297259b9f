/**
 * msgpack-depth.ts measures what msgpackr wrote as deep as limits.ts `jsonDepth` measures the
 * value (random JSON-like values, seeded), stops early past the limit, and refuses truncated
 * bytes; payload.ts refuses too-deep values on both sides instead of overflowing the stack.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Packr } from 'msgpackr';
import { msgpackDepth, MsgpackFormatError } from '../../src/contract/msgpack-depth.js';
import { decodePayload, encodePayload, PayloadError, UNENCODABLE_PAYLOAD } from '../../src/contract/payload.js';
import { jsonDepth, MAX_PAYLOAD_DEPTH } from '../../src/limits.js';
import { prng } from '../support/prng.js';

const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

function randomValue(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth <= 0 || r < 0.3) {
    const pick = Math.floor(rand() * 8);
    return [null, true, 1, -7, 2 ** 40, 1.5, 'x'.repeat(Math.floor(rand() * 300)), 'é'][pick];
  }
  const n = Math.floor(rand() * (r < 0.05 ? 40 : 4));
  if (r < 0.65) return Array.from({ length: n }, () => randomValue(rand, depth - 1));
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}${'y'.repeat(Math.floor(rand() * 40))}`, randomValue(rand, depth - 1)]));
}

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { a: v };
  return v;
}

test('msgpackDepth agrees with jsonDepth on 500 random values', () => {
  const rand = prng(11);
  for (let i = 0; i < 500; i++) {
    const v = randomValue(rand, 1 + Math.floor(rand() * 12));
    assert.equal(msgpackDepth(packr.pack(v), 1_000), jsonDepth(v, 1_000), JSON.stringify(v).slice(0, 200));
  }
});

test('msgpackDepth stops at limit + 1 and refuses truncated bytes', () => {
  // 5,000 one-element arrays around 1 (msgpackr itself cannot pack this: its packer overflows).
  const deep = Buffer.concat([Buffer.alloc(5_000, 0x91), Buffer.from([0x01])]);
  assert.equal(msgpackDepth(deep, 300), 301);
  assert.throws(() => decodePayload(deep), PayloadError);
  const bytes = packr.pack({ a: [1, 2, 'three'], b: 'x'.repeat(100) });
  for (const cut of [1, 5, bytes.length - 1]) assert.throws(() => msgpackDepth(bytes.subarray(0, cut), 100), MsgpackFormatError);
});

test('payloads deeper than MAX_PAYLOAD_DEPTH are refused on encode and decode, shallower ones round-trip', () => {
  assert.deepEqual(decodePayload(encodePayload(nested(MAX_PAYLOAD_DEPTH))), nested(MAX_PAYLOAD_DEPTH));
  assert.throws(() => encodePayload(nested(MAX_PAYLOAD_DEPTH + 1)), PayloadError);
  assert.throws(() => encodePayload(nested(1_500)), PayloadError);
  assert.throws(() => decodePayload(packr.pack(nested(MAX_PAYLOAD_DEPTH + 1))), PayloadError);
  assert.throws(() => decodePayload(UNENCODABLE_PAYLOAD), PayloadError);
});

test('a __proto__ key round-trips as an own property without touching any prototype', () => {
  const v = JSON.parse('{"__proto__": {"polluted": true}, "list": [{"__proto__": 1}]}') as Record<string, unknown>;
  const back = decodePayload(encodePayload(v)) as Record<string, unknown>;
  assert.deepEqual(Object.keys(back), ['__proto__', 'list']);
  assert.deepEqual(Object.getOwnPropertyDescriptor(back, '__proto__')?.value, { polluted: true });
  assert.equal(Object.getPrototypeOf(back), Object.prototype);
  assert.equal(Object.keys((back.list as object[])[0]!)[0], '__proto__');
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});
