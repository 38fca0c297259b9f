/** ContinuityRecorder as a unit: when a hash-key override record is enqueued, dedupe, failures. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../../src/log.js';
import { ContinuityRecorder } from '../../../src/eval-node/http/continuity.js';
import { OutboxFullError } from '../../../src/eval-node/capture/outbox.js';
import type { CapturedEvent } from '../../../src/contract/events.js';
import { parseHashKeyOverrideRecord } from '../../../src/contract/override-records.js';
import type { FlagsJob } from '../../../src/eval-node/pool/job.js';

function job(distinctId: string, anon: string | null, extra: Partial<FlagsJob> = {}): FlagsJob {
  return { projectId: 3, request: { distinct_id: distinctId, anon_distinct_id: anon }, ip: null, shape: 'flags-v2', config: false,
    onlyOverrideProperties: false, disableFlags: false, requestId: 'r', ...extra };
}

function recorder(opts: { needing?: string[]; overrides?: Record<string, string>; full?: boolean; max?: number } = {}) {
  const appended: CapturedEvent[][] = [];
  let now = 1_000_000;
  const r = new ContinuityRecorder({
    store: {
      personByDistinctId: (_p, d) => (d === 'known' ? { id: 'person-1', project_id: 3, distinct_ids: ['known'], properties: {} } as never : undefined),
      hashKeyOverrides: () => opts.overrides ?? {},
    },
    flagsNeeding: () => opts.needing ?? ['exp'],
    append: async (events) => { if (opts.full) throw new OutboxFullError(1); appended.push(events); },
    log: createLogger('silent'),
    now: () => now,
    dedupeTtlMs: 1000,
    dedupeMax: opts.max,
  });
  return { r, appended, advance: (ms: number) => { now += ms; } };
}
const tick = () => new Promise((res) => setImmediate(res));

test('one record per (distinct_id, anon, flags), valid for ingestion; skipped without anon, same anon, or no flag', async () => {
  const { r, appended } = recorder();
  r.afterFlags(job('user', null));
  r.afterFlags(job('user', 'user'));
  r.afterFlags(job('user', ''));
  r.afterFlags(job('user', 'anon', { disableFlags: true }));
  r.afterFlags(job('user', 'x'.repeat(201)));
  r.afterFlags(job('user', 'anon'));
  r.afterFlags(job('user', 'anon'));
  await tick();
  assert.equal(appended.length, 1);
  assert.deepEqual(r.counters, { enqueued: 1, covered: 0, deduplicated: 1, failed: 0 });
  const rec = parseHashKeyOverrideRecord(appended[0]![0]);
  assert.deepEqual(rec, { projectId: 3, distinctIds: ['user', 'anon'], flagKeys: ['exp'], hashKey: 'anon' });
  const none = recorder({ needing: [] });
  none.r.afterFlags(job('user', 'anon'));
  await tick();
  assert.equal(none.appended.length, 0);
});

test('stored overrides that cover every flag skip the record; partial cover does not', async () => {
  const covered = recorder({ needing: ['exp'], overrides: { exp: 'old' } });
  covered.r.afterFlags(job('known', 'anon'));
  await tick();
  assert.equal(covered.appended.length, 0);
  assert.equal(covered.r.counters.covered, 1);
  const partial = recorder({ needing: ['exp', 'exp2'], overrides: { exp: 'old' } });
  partial.r.afterFlags(job('known', 'anon'));
  await tick();
  assert.equal(partial.appended.length, 1);
});

test('dedupe expires after the TTL and is bounded; an outbox-full failure is counted and forgotten', async () => {
  const { r, appended, advance } = recorder({ max: 2 });
  r.afterFlags(job('a', 'anon'));
  r.afterFlags(job('b', 'anon'));
  r.afterFlags(job('c', 'anon'));
  assert.equal(r.remembered, 2, 'oldest evicted');
  r.afterFlags(job('a', 'anon')); // evicted: enqueued again
  advance(1001);
  r.afterFlags(job('c', 'anon')); // expired: enqueued again
  await tick();
  assert.equal(appended.length, 5);

  const full = recorder({ full: true });
  full.r.afterFlags(job('a', 'anon'));
  await tick();
  assert.equal(full.r.counters.failed, 1);
  assert.equal(full.r.remembered, 0);
  full.r.afterFlags(job('a', 'anon'));
  await tick();
  assert.equal(full.r.counters.failed, 2, 'retried, not deduplicated');
});

test('a throwing dependency never escapes the hook', () => {
  const r = new ContinuityRecorder({
    store: { personByDistinctId: () => { throw new Error('boom'); }, hashKeyOverrides: () => ({}) },
    flagsNeeding: () => ['exp'], append: async () => {}, log: createLogger('silent'),
  });
  assert.doesNotThrow(() => r.afterFlags(job('u', 'a')));
});
