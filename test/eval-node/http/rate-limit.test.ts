/**
 * PostHog's 600/min/team on the local-evaluation feed as a token bucket
 * per project; the 429 carries PostHog's throttled body and Retry-After. The bucket with an
 * injected clock; the endpoint on a real node.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TokenBuckets } from '../../../src/eval-node/http/rate-limit.js';
import { PERSONAL_KEY, PROJECT_TOKEN, request, startTestNode } from './fixture.js';

test('a bucket allows its capacity at once, then refills continuously; keys are independent', () => {
  let now = 0;
  const b = new TokenBuckets(600, 60_000, () => now);
  for (let i = 0; i < 600; i++) assert.equal(b.take('1'), 0, `request ${i}`);
  assert.equal(b.take('1'), 100, 'one token refills every 100 ms at 600/min');
  assert.equal(b.take('2'), 0, 'another project has its own bucket');
  now += 100;
  assert.equal(b.take('1'), 0);
  assert.ok(b.take('1') > 0);
  now += 60_000;
  for (let i = 0; i < 600; i++) assert.equal(b.take('1'), 0, 'full again after a window, never more than capacity');
  assert.ok(b.take('1') > 0);
  assert.equal(new TokenBuckets(0, 60_000).take('x'), 0, 'capacity 0 disables');
});

test('bounded memory: the oldest bucket is dropped first', () => {
  const b = new TokenBuckets(1, 60_000, () => 0, 2);
  assert.equal(b.take('a'), 0);
  assert.ok(b.take('a') > 0);
  b.take('b');
  b.take('c'); // drops 'a'
  assert.equal(b.take('a'), 0, 'a dropped bucket starts full');
});

test('the feed answers 429 throttled with Retry-After past the per-project rate', async () => {
  const node = await startTestNode({ config: { definitionsRatePerMinute: 3 } });
  try {
    const get = () => request(`${node.url}/flags/definitions?token=${PROJECT_TOKEN}`, { headers: { authorization: `Bearer ${PERSONAL_KEY}` } });
    for (let i = 0; i < 3; i++) assert.equal((await get()).status, 200);
    const r = await get();
    assert.equal(r.status, 429);
    assert.equal(r.json().type, 'throttled_error');
    assert.equal(r.json().code, 'throttled');
    assert.match(r.json().detail, /^Request was throttled\. Expected available in \d+ seconds\.$/);
    assert.ok(Number(r.headers['retry-after']) >= 1);
    const flags = await request(`${node.url}/flags/?v=2`, { method: 'POST', body: JSON.stringify({ api_key: PROJECT_TOKEN, distinct_id: 'u' }) });
    assert.equal(flags.status, 200, '/flags is not limited by the feed bucket');
  } finally {
    await node.close();
  }
});
