import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pageEnvelope, parseLimitOffset } from '../../../src/control-plane/http/pages.js';

test('parseLimitOffset: defaults and bad values fall back (DRF)', () => {
  const rows: [string, { limit: number; offset: number }][] = [
    ['', { limit: 100, offset: 0 }],
    ['limit=5&offset=10', { limit: 5, offset: 10 }],
    ['limit=-1&offset=-3', { limit: 100, offset: 0 }],
    ['limit=abc&offset=1.5', { limit: 100, offset: 0 }],
    ['limit=0', { limit: 100, offset: 0 }],
  ];
  for (const [q, want] of rows) assert.deepEqual(parseLimitOffset(new URLSearchParams(q)), want, q);
});

test('pageEnvelope: next/previous links keep other params; previous drops offset at the start', () => {
  const url = new URL('http://h/api/x/?search=a&limit=2&offset=2');
  const p = pageEnvelope(url, 5, 2, 2, [1, 2]);
  assert.equal(p.next, 'http://h/api/x/?search=a&limit=2&offset=4');
  assert.equal(p.previous, 'http://h/api/x/?search=a&limit=2');
  const last = pageEnvelope(new URL('http://h/x?limit=2&offset=4'), 5, 2, 4, [5]);
  assert.equal(last.next, null);
  assert.equal(last.previous, 'http://h/x?limit=2&offset=2');
  assert.equal(pageEnvelope(new URL('http://h/x'), 5, 2, 0, []).previous, null);
});
