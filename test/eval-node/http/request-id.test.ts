/** Request ids: UUID v4 shaped, unique per request, counter formatting at its edges. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nextRequestId, requestIdAt } from '../../../src/eval-node/http/request-id.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('nextRequestId gives distinct UUID v4 shaped ids', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 100_000; i++) {
    const id = nextRequestId();
    assert.match(id, UUID_V4);
    seen.add(id);
  }
  assert.equal(seen.size, 100_000);
});

test('requestIdAt writes the counter as the 12-digit node field', () => {
  const p = '01234567-89ab-4cde-8f01-';
  const cases: [number, string][] = [
    [0, '000000000000'],
    [255, '0000000000ff'],
    [2 ** 24 - 1, '000000ffffff'],
    [2 ** 24, '000001000000'],
    [0xabcdef123456, 'abcdef123456'],
    [2 ** 48 - 1, 'ffffffffffff'],
  ];
  for (const [n, node] of cases) {
    const id = requestIdAt(p, n);
    assert.equal(id, p + node, `n=${n}`);
    assert.match(id, UUID_V4);
  }
});
