import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffDelayMs, BACKOFF_BASE_MS, BACKOFF_CAP_MS, BACKOFF_JITTER, DEFAULT_BACKOFF } from '../../../src/eval-node/sync/backoff.js';

const cases: { name: string; attempt: number; random: number; expected: number }[] = [
  { name: 'first retry, no jitter drawn', attempt: 0, random: 0, expected: BACKOFF_BASE_MS },
  { name: 'doubles per attempt', attempt: 3, random: 0, expected: BACKOFF_BASE_MS * 8 },
  { name: 'full jitter draw removes BACKOFF_JITTER of the delay', attempt: 2, random: 1, expected: Math.round(BACKOFF_BASE_MS * 4 * (1 - BACKOFF_JITTER)) },
  { name: 'capped', attempt: 20, random: 0, expected: BACKOFF_CAP_MS },
  { name: 'huge attempt counts stay capped (no overflow)', attempt: 10_000, random: 0, expected: BACKOFF_CAP_MS },
];

for (const c of cases) {
  test(`backoffDelayMs: ${c.name}`, () => {
    assert.equal(backoffDelayMs(c.attempt, DEFAULT_BACKOFF, () => c.random), c.expected);
  });
}

test('backoffDelayMs honours a custom policy', () => {
  assert.equal(backoffDelayMs(5, { baseMs: 10, capMs: 100, jitter: 0 }), 100);
  assert.equal(backoffDelayMs(1, { baseMs: 10, capMs: 100, jitter: 0 }), 20);
});
