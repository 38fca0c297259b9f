/**
 * The control plane's scan pool against hostile filters, on a real control plane (real Postgres,
 * real HTTP, real worker threads): a regex only the backtracking engine runs (`^(?=(a+)+$)`)
 * over persons whose emails make every search run to its 50 ms limit. The blast radius and the
 * cohort calculation must stop at their deadline (504; cohort `errors_calculating`, count kept),
 * a project past its scan slots gets 429 throttled, ordinary scans still answer exactly, and the
 * event loop hosting the control plane stays free. Prints the event-loop delay (p99, max) and
 * another project's flag-list latency measured meanwhile (figures are noisy on a shared machine).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { seedFlag, seedProject } from '../../support/seed.js';
import { waitFor } from '../../support/wait.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { scanPoolFor } from '../../../src/control-plane/scan-pool/index.js';

/** Persons whose email makes the hostile pattern run to the backtracking limit. */
const HOSTILE = 220;
/** Ordinary persons (email on example.com). */
const ORDINARY = 30;
/**
 * Deadline of a scan and of a cohort calculation (SWITCHYARD_SCAN_TIMEOUT_MS,
 * SWITCHYARD_COHORT_CALCULATION_TIMEOUT_MS), in ms: a seventh of the work the hostile persons
 * make one scan do, so every hostile scan runs into it; long enough that the two scans of the
 * throttling case still hold their slots when the third request comes.
 */
const DEADLINE_MS = 1_500;
/** One worker (the default on 2 cores): 220 searches of ≥ 50 ms need ≥ 11 s of worker time, past the deadline. */
const THREADS = 1;
const HOSTILE_REGEX = [{ key: 'email', type: 'person', operator: 'regex', value: '^(?=(a+)+$)' }];
const ORDINARY_FILTER = [{ key: 'email', type: 'person', operator: 'icontains', value: 'example.com' }];

let t: TestControlPlane;
let other: { id: number; key: string };
let blastUrl: string;

before(async () => {
  t = await startTestControlPlane({
    scanThreads: THREADS, scanProjectConcurrency: 2, scanTimeoutMs: DEADLINE_MS, cohortCalculationTimeoutMs: DEADLINE_MS,
    apiBurstRatePerMinute: 0, apiSustainedRatePerHour: 0,
  });
  blastUrl = `/api/projects/${t.projectId}/feature_flags/user_blast_radius/`;
  const now = new Date().toISOString();
  const people = [
    ...Array.from({ length: HOSTILE }, (_, i) => ({ d: `h-${i}`, email: `${'a'.repeat(28 + (i % 5))}!` })),
    ...Array.from({ length: ORDINARY }, (_, i) => ({ d: `o-${i}`, email: `o${i}@example.com` })),
  ];
  const r = await ingestEvents(t.db.sql, people.map((p) => ({
    uuid: crypto.randomUUID(), project_id: t.projectId, event: '$identify', distinct_id: p.d, properties: { $set: { email: p.email } }, timestamp: now,
  })));
  assert.equal(r.invalid ?? 0, 0);
  const p = await seedProject(t.db.sql, t.organizationId, 'Other');
  for (let i = 0; i < 20; i++) await seedFlag(t.db.sql, p.id, `other-${i}`);
  other = { id: p.id, key: await t.createKey(['feature_flag:read'], [p.id]) };
});
after(async () => { await t?.close(); });

const cohortUrl = (id?: number) => `/api/projects/${t.projectId}/cohorts/${id === undefined ? '' : `${id}/`}`;
const cohortFilters = (values: unknown[]) => ({ properties: { type: 'AND', values } });

function assertTimeout(r: { status: number; body: any; text: string }): void {
  assert.equal(r.status, 504, r.text);
  assert.equal(r.body.type, 'server_error');
  assert.equal(r.body.code, 'error');
  assert.equal(r.body.attr, null);
}

const ms = (ns: number) => (ns / 1e6).toFixed(1);
const percentile = (xs: number[], p: number) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN; };

/**
 * Lists the other project's flags every 20 ms until `work` settles, with the event-loop delay of
 * this process (which hosts the control plane) recorded meanwhile; returns the figures as text.
 */
async function measure(work: () => Promise<unknown>, delay = monitorEventLoopDelay({ resolution: 10 })): Promise<string> {
  delay.enable();
  const elu = performance.eventLoopUtilization();
  const latencies: number[] = [];
  let finished = false;
  const settled = work().finally(() => { finished = true; });
  while (!finished) {
    const t0 = performance.now();
    const r = await t.request('GET', `/api/projects/${other.id}/feature_flags/`, { key: other.key });
    latencies.push(performance.now() - t0);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.count, 20);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await settled;
  delay.disable();
  const busy = performance.eventLoopUtilization(elu).utilization;
  return `event-loop delay p99 ${ms(delay.percentile(99))} ms, max ${ms(delay.max)} ms, utilization ${(busy * 100).toFixed(0)} %; other project's flag list ${latencies.length} requests, `
    + `p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${percentile(latencies, 0.99).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`;
}

test('a hostile blast radius and cohort PATCH stop at their deadline without stalling the control plane', async () => {
  const created = await t.request('POST', cohortUrl(), { body: { name: 'Ordinary', filters: cohortFilters(ORDINARY_FILTER) } });
  assert.equal(created.status, 201, created.text);
  const id = created.body.id as number;
  const before = await waitFor('ordinary cohort calculated', async () => {
    const r = await t.request('GET', cohortUrl(id));
    return r.body.is_calculating === false && r.body.count !== null ? r.body : null;
  });
  assert.equal(before.count, ORDINARY);

  const baseline = await measure(async () => { await new Promise((resolve) => setTimeout(resolve, 2_000)); });

  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const started = Date.now();
  const blast = t.request('POST', blastUrl, { body: { condition: { properties: HOSTILE_REGEX } } });
  const patched = await t.request('PATCH', cohortUrl(id), { body: { filters: cohortFilters(HOSTILE_REGEX) } });
  assert.equal(patched.status, 200, patched.text);
  const calculation = waitFor('hostile cohort calculation to end', async () => {
    const r = await t.request('GET', cohortUrl(id));
    return r.body.is_calculating === false && r.body.errors_calculating > before.errors_calculating ? r.body : null;
  }, { timeoutMs: 60_000, intervalMs: 100 });

  const hostile = await measure(() => Promise.allSettled([blast, calculation]), delay);
  const elapsed = Date.now() - started;

  assertTimeout(await blast);
  const after = await calculation;
  assert.equal(after.count, ORDINARY, 'a calculation past its deadline keeps the previous count');
  assert.equal(after.errors_calculating, before.errors_calculating + 1);

  console.log(`# hostile scans over ${HOSTILE + ORDINARY} persons (deadline ${DEADLINE_MS} ms, ${THREADS} scan threads; shared 2-core machine, noisy): `
    + `${elapsed} ms until both ended. During them: ${hostile}. Same run, idle baseline (2 s): ${baseline}`);
});

test('past its scan slots a project gets 429 throttled; another project still scans', async () => {
  const body = { condition: { properties: HOSTILE_REGEX } };
  const otherScan = () => t.request('POST', `/api/projects/${other.id}/feature_flags/user_blast_radius/`, { key: other.key, body: { condition: { properties: ORDINARY_FILTER } } });
  const first = [t.request('POST', blastUrl, { body }), t.request('POST', blastUrl, { body })];
  // The first two hold both slots until their deadline; wait until they are under way.
  await waitFor('two scans running', () => scanPoolFor(t.cp.sql).runningFor(t.projectId) === 2);
  const third = await t.request('POST', blastUrl, { body });
  assert.equal(third.status, 429, third.text);
  assert.deepEqual({ type: third.body.type, code: third.body.code }, { type: 'throttled_error', code: 'throttled' });
  assert.match(third.headers.get('retry-after') ?? '', /^\d+$/);
  const elsewhere = await otherScan();
  assert.equal(elsewhere.status, 200, elsewhere.text);
  assert.deepEqual(elsewhere.body, { users_affected: 0, total_users: 0 });
  for (const r of await Promise.all(first)) assertTimeout(r);
});

test('after hostile scans, ordinary scans answer exactly and evaluation_reasons survives a hostile flag', async () => {
  const r = await t.request('POST', blastUrl, { body: { condition: { properties: ORDINARY_FILTER } } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body, { users_affected: ORDINARY, total_users: HOSTILE + ORDINARY });
  const flag = await t.request('POST', `/api/projects/${t.projectId}/feature_flags/`, {
    body: { key: 'hostile', filters: { groups: [{ properties: HOSTILE_REGEX, rollout_percentage: 100 }] } },
  });
  assert.equal(flag.status, 201, flag.text);
  const reasons = await t.request('GET', `/api/projects/${t.projectId}/feature_flags/evaluation_reasons?distinct_id=h-0`);
  assert.equal(reasons.status, 200, reasons.text);
  assert.deepEqual(reasons.body.hostile, { value: false, evaluation: { reason: 'no_condition_match', condition_index: 0 } });
});
