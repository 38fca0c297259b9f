/** Request ids: random UUID v4, unique per request, with no structure shared between consecutive ids. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nextRequestId } from '../../../src/eval-node/http/request-id.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('nextRequestId gives distinct random UUID v4s', () => {
  const seen = new Set<string>();
  let sharedNodeField = 0;
  let previous = '';
  for (let i = 0; i < 100_000; i++) {
    const id = nextRequestId();
    assert.match(id, UUID_V4);
    seen.add(id);
    // A counter or a per-process prefix would make consecutive ids share their first 24 characters.
    if (id.slice(0, 24) === previous.slice(0, 24)) sharedNodeField++;
    previous = id;
  }
  assert.equal(seen.size, 100_000);
  assert.equal(sharedNodeField, 0);
});

test('every random hex digit of the ids takes each of its 16 values about equally often', () => {
  const n = 32_000;
  const counts = Array.from({ length: 36 }, () => new Array<number>(16).fill(0));
  for (let i = 0; i < n; i++) {
    const id = nextRequestId();
    for (let j = 0; j < 36; j++) if (id[j] !== '-') counts[j]![parseInt(id[j]!, 16)]!++;
  }
  for (let j = 0; j < 36; j++) {
    if (j === 8 || j === 13 || j === 18 || j === 23) continue; // dashes
    if (j === 14) { assert.equal(counts[j]![4], n, 'version nibble'); continue; }
    const allowed = j === 19 ? [8, 9, 10, 11] : Array.from({ length: 16 }, (_, k) => k);
    const expected = n / allowed.length;
    for (let k = 0; k < 16; k++) {
      const c = counts[j]![k]!;
      // Binomial sd is at most sqrt(n / 4) = ~89 at these sizes; 6 sd either side.
      if (allowed.includes(k)) assert.ok(Math.abs(c - expected) < 6 * Math.sqrt(expected), `position ${j}, digit ${k}: ${c} times, expected ~${expected}`);
      else assert.equal(c, 0, `position ${j} never holds ${k}`);
    }
  }
});
