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
