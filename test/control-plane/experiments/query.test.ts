/**
 * The experiment query endpoint against a real control plane: events go
 * through the real ingestion, and every per-variant figure is checked against a direct
 * computation from the same generated events in plain TypeScript (a separate implementation of
 * research/experiments.md §2–§3), then the statistics against the statistics module fed those
 * figures. Also the shared sample's event-level vector (sem-winsorize-sum), PostHog's validation
 * failures, `$multiple` handling, and errors.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { prng } from '../../support/prng.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { analyze } from '../../../src/stats/analyze.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';

let t: TestControlPlane;
const HOUR = 3600_000;

interface Ev { distinct_id: string; event: string; timestamp: string; properties: Record<string, unknown> }

async function ingest(events: Ev[]): Promise<void> {
  for (let i = 0; i < events.length; i += 2000) {
    await ingestEvents(t.db.sql, events.slice(i, i + 2000).map((e) => ({ uuid: crypto.randomUUID(), project_id: t.projectId, ...e })));
  }
}

async function experiment(name: string, key: string, start: Date, extra: Record<string, unknown> = {}): Promise<number> {
  const r = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, { body: { name, feature_flag_key: key, start_date: start.toISOString(), ...extra } });
  assert.equal(r.status, 201, r.text);
  return r.body.id as number;
}

async function query(experimentId: number | undefined, metric: unknown) {
  return t.request('POST', `/api/projects/${t.projectId}/query/`, { body: { query: { kind: 'ExperimentQuery', experiment_id: experimentId, metric } } });
}

const exposure = (d: string, key: string, variant: string, at: number): Ev => ({
  distinct_id: d, event: '$feature_flag_called', timestamp: new Date(at).toISOString(), properties: { $feature_flag: key, $feature_flag_response: variant },
});

/** 60 persons per variant (`<prefix>-<variant>-<i>`) exposed to `key` at `at`: past the 50-exposure minimum. */
function exposedPairs(prefix: string, key: string, at: number): Ev[] {
  const events: Ev[] = [];
  for (let i = 0; i < 60; i++) for (const v of ['control', 'test']) events.push(exposure(`${prefix}-${v}-${i}`, key, v, at));
  return events;
}

before(async () => { t = await startTestControlPlane(); });
after(async () => { await t?.close(); });

test('mean, funnel, ratio and retention metrics equal a direct computation from the events, and the statistics follow', async () => {
  const key = 'query-exp';
  const start = Date.now() - 48 * HOUR;
  const id = await experiment('Query', key, new Date(start));
  const rand = prng(42);
  const events: Ev[] = [];
  const users: { d: string; variant: string; exposedAt: number[] }[] = [];
  for (let i = 0; i < 240; i++) {
    const d = `q-${i}`;
    const variant = rand() < 0.5 ? 'control' : 'test';
    const exposedAt = [start + Math.floor(rand() * 10) * HOUR];
    if (rand() < 0.3) exposedAt.push(exposedAt[0]! + 2 * HOUR);
    for (const at of exposedAt) events.push(exposure(d, key, variant, at));
    users.push({ d, variant, exposedAt });
    const lift = variant === 'test' ? 0.25 : 0;
    const purchases = Math.floor(rand() * 4 + lift * 4);
    for (let k = 0; k < purchases; k++) {
      // Some purchases land before exposure or after the 24 h window: they must not count.
      const at = exposedAt[0]! + (rand() * 40 - 4) * HOUR;
      events.push({ distinct_id: d, event: 'purchase', timestamp: new Date(at).toISOString(), properties: { amount: Math.round(rand() * 100) / 2, $session_id: `s-${d}-${k % 2}` } });
    }
    if (rand() < 0.7 + lift) events.push({ distinct_id: d, event: 'view', timestamp: new Date(exposedAt[0]! + 1 * HOUR).toISOString(), properties: {} });
    if (rand() < 0.5 + lift) events.push({ distinct_id: d, event: 'checkout', timestamp: new Date(exposedAt[0]! + 2 * HOUR).toISOString(), properties: {} });
  }
  // Users who saw both variants are left out ('exclude'), and a holdout exposure is no arm.
  events.push(exposure('both-1', key, 'control', start + HOUR), exposure('both-1', key, 'test', start + 2 * HOUR));
  events.push(exposure('held-1', key, 'holdout-9', start + HOUR));
  await ingest(events);

  // Direct computation: per user, events at/after the first exposure and before first exposure + W.
  const W = 24 * HOUR;
  const byUser = new Map<string, Ev[]>();
  for (const e of events) byUser.set(e.distinct_id, [...(byUser.get(e.distinct_id) ?? []), e]);
  const direct = (value: (u: typeof users[number], evs: Ev[]) => number) => {
    const out = new Map<string, { n: number; sum: number; sum_squares: number }>();
    for (const u of users) {
      const first = Math.min(...u.exposedAt);
      const evs = (byUser.get(u.d) ?? []).filter((e) => e.event !== '$feature_flag_called' && Date.parse(e.timestamp) >= first && Date.parse(e.timestamp) < first + W);
      const v = value(u, evs);
      const a = out.get(u.variant) ?? { n: 0, sum: 0, sum_squares: 0 };
      a.n++; a.sum += v; a.sum_squares += v * v;
      out.set(u.variant, a);
    }
    return out;
  };

  const window = { conversion_window: 24, conversion_window_unit: 'hour' };
  const count = await query(id, { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase' }, ...window });
  assert.equal(count.status, 200, count.text);
  const expectCount = direct((_u, evs) => evs.filter((e) => e.event === 'purchase').length);
  const sum = await query(id, { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'sum', math_property: 'amount' }, ...window });
  const expectSum = direct((_u, evs) => evs.filter((e) => e.event === 'purchase').reduce((s, e) => s + (e.properties.amount as number), 0));
  const sessions = await query(id, { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'unique_session' }, ...window });
  const expectSessions = direct((_u, evs) => new Set(evs.filter((e) => e.event === 'purchase').map((e) => e.properties.$session_id)).size);
  // Counts are read from ingestion's per-person event times; with a property filter every event
  // passes, from the events themselves; dau is 1 for a user with any; without a window, every
  // event from the first exposure on counts.
  const filteredCount = await query(id, { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', properties: [{ key: 'amount', operator: 'is_set', type: 'event' }] }, ...window });
  const dau = await query(id, { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase', math: 'dau' }, ...window });
  const expectDau = direct((_u, evs) => (evs.some((e) => e.event === 'purchase') ? 1 : 0));
  const unbounded = await query(id, { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase' } });
  const expectUnbounded = new Map<string, { n: number; sum: number; sum_squares: number }>();
  for (const u of users) {
    const v = (byUser.get(u.d) ?? []).filter((e) => e.event === 'purchase' && Date.parse(e.timestamp) >= Math.min(...u.exposedAt)).length;
    const a = expectUnbounded.get(u.variant) ?? { n: 0, sum: 0, sum_squares: 0 };
    a.n++; a.sum += v; a.sum_squares += v * v;
    expectUnbounded.set(u.variant, a);
  }
  for (const [r, expected] of [[count, expectCount], [filteredCount, expectCount], [dau, expectDau], [unbounded, expectUnbounded], [sum, expectSum], [sessions, expectSessions]] as const) {
    assert.equal(r.status, 200, r.text);
    const arms = [r.body.baseline, ...r.body.variant_results];
    for (const arm of arms) {
      const e = expected.get(arm.key)!;
      assert.equal(arm.number_of_samples, e.n, `${arm.key} n`);
      assert.ok(Math.abs(arm.sum - e.sum) < 1e-9, `${arm.key} sum ${arm.sum} vs ${e.sum}`);
      assert.ok(Math.abs(arm.sum_squares - e.sum_squares) < 1e-6, `${arm.key} sum_squares`);
    }
    // The statistics are the module's on those sums (Bayesian by default).
    const s = analyze({ method: 'bayesian', variants: arms.map((a: any) => ({ key: a.key, n: a.number_of_samples, sum: a.sum, sum_squares: a.sum_squares })), config: { baseline_key: 'control' } });
    const v = (s.variant_results as any[])[0];
    assert.equal(r.body.variant_results[0].method, 'bayesian');
    assert.ok(Math.abs(r.body.variant_results[0].chance_to_win - v.chance_to_win) < 1e-12);
    assert.deepEqual(r.body.variant_results[0].credible_interval, v.credible_interval);
    assert.deepEqual(r.body.variant_results[0].validation_failures, []);
  }

  // Ordered funnel view → checkout (no window): step counts and conversions.
  const funnel = await query(id, { kind: 'ExperimentMetric', metric_type: 'funnel', series: [{ kind: 'EventsNode', event: 'view' }, { kind: 'EventsNode', event: 'checkout' }] });
  assert.equal(funnel.status, 200, funnel.text);
  for (const arm of [funnel.body.baseline, ...funnel.body.variant_results]) {
    const mine = users.filter((u) => u.variant === arm.key);
    const reach = (u: typeof users[number]) => {
      const first = Math.min(...u.exposedAt);
      const evs = (byUser.get(u.d) ?? []).filter((e) => Date.parse(e.timestamp) >= first);
      const view = evs.find((e) => e.event === 'view');
      if (!view) return 0;
      return evs.some((e) => e.event === 'checkout' && Date.parse(e.timestamp) >= Date.parse(view.timestamp)) ? 2 : 1;
    };
    assert.deepEqual(arm.step_counts, [mine.filter((u) => reach(u) >= 1).length, mine.filter((u) => reach(u) >= 2).length]);
    assert.equal(arm.sum, mine.filter((u) => reach(u) === 2).length);
    assert.equal(arm.sum_squares, arm.sum);
  }

  // Unordered funnel checkout, view: every step after the exposure, in any order.
  const unordered = await query(id, { kind: 'ExperimentMetric', metric_type: 'funnel', funnel_order_type: 'unordered',
    series: [{ kind: 'EventsNode', event: 'checkout' }, { kind: 'EventsNode', event: 'view' }] });
  assert.equal(unordered.status, 200, unordered.text);
  for (const arm of [unordered.body.baseline, ...unordered.body.variant_results]) {
    const done = users.filter((u) => u.variant === arm.key).map((u) => {
      const first = Math.min(...u.exposedAt);
      const evs = (byUser.get(u.d) ?? []).filter((e) => Date.parse(e.timestamp) >= first);
      return ['checkout', 'view'].filter((name) => evs.some((e) => e.event === name)).length;
    });
    assert.deepEqual(arm.step_counts, [done.filter((n) => n >= 1).length, done.filter((n) => n >= 2).length]);
    assert.equal(arm.sum, done.filter((n) => n === 2).length);
  }

  // Ratio: purchase amount per purchase.
  const ratio = await query(id, { kind: 'ExperimentMetric', metric_type: 'ratio', ...window,
    numerator: { kind: 'EventsNode', event: 'purchase', math: 'sum', math_property: 'amount' }, denominator: { kind: 'EventsNode', event: 'purchase' } });
  assert.equal(ratio.status, 200, ratio.text);
  for (const arm of [ratio.body.baseline, ...ratio.body.variant_results]) {
    assert.ok(Math.abs(arm.sum - expectSum.get(arm.key)!.sum) < 1e-9);
    assert.equal(arm.denominator_sum, expectCount.get(arm.key)!.sum);
    assert.equal(arm.denominator_sum_squares, expectCount.get(arm.key)!.sum_squares);
  }

  // Retention: users with a view at/after exposure; retained when a later checkout falls on the same UTC day (window 0..0 days).
  const retention = await query(id, { kind: 'ExperimentMetric', metric_type: 'retention', start_event: { kind: 'EventsNode', event: 'view' },
    completion_event: { kind: 'EventsNode', event: 'checkout' }, retention_window_start: 0, retention_window_end: 0, retention_window_unit: 'day' });
  assert.equal(retention.status, 200, retention.text);
  const day = (ts: string) => ts.slice(0, 10);
  for (const arm of [retention.body.baseline, ...retention.body.variant_results]) {
    const started = users.filter((u) => u.variant === arm.key).map((u) => {
      const first = Math.min(...u.exposedAt);
      const evs = (byUser.get(u.d) ?? []).filter((e) => Date.parse(e.timestamp) >= first);
      const view = evs.filter((e) => e.event === 'view').sort((a, b) => a.timestamp.localeCompare(b.timestamp))[0];
      if (!view) return null;
      return evs.some((e) => e.event === 'checkout' && e.timestamp > view.timestamp && day(e.timestamp) === day(view.timestamp)) ? 1 : 0;
    }).filter((x): x is 0 | 1 => x !== null);
    assert.equal(arm.number_of_samples, started.length);
    assert.equal(arm.sum, started.filter((x) => x === 1).length);
    assert.equal(arm.denominator_sum, started.length);
  }

  // The same answer from the raw exposure events: an exposure before the start date makes the
  // pre-aggregate unusable (it would fold that call in), so the events path runs — and the early
  // exposure of a new person is outside the window either way.
  await ingest([exposure('early-bird', key, 'control', start - HOUR)]);
  const raw = await query(id, { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase' }, ...window });
  assert.deepEqual(raw.body.baseline, count.body.baseline);
  assert.deepEqual(raw.body.variant_results, count.body.variant_results);

  // Frequentist settings are the experiment's.
  await t.request('PATCH', `/api/projects/${t.projectId}/experiments/${id}/`, { body: { stats_config: { method: 'frequentist' } } });
  const freq = await query(id, { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase' }, ...window });
  assert.equal(freq.body.variant_results[0].method, 'frequentist');
  assert.equal(typeof freq.body.variant_results[0].p_value, 'number');
  assert.equal(freq.body.variant_results[0].confidence_interval.length, 2);
});

test('funnels whose events span several month partitions: ordered (3 steps) and unordered equal a direct computation', async () => {
  // Exposures over 50 days and events over 90: each person's steps fall in three or four months,
  // so the per-person event times (and the probes) cross months in both directions (earliest step
  // first, latest for the last). Four heavy persons send more first-step events around their
  // exposure than a month's row keeps times for, so that row falls back to probing the events.
  // The same funnels with a property filter that every event passes take the probe path alone.
  const DAY = 24 * HOUR;
  const key = 'months-exp';
  const start = Date.now() - 85 * DAY;
  const id = await experiment('Months', key, new Date(start));
  const rand = prng(7);
  const steps = ['m-a', 'm-b', 'm-c'];
  const events: Ev[] = [];
  const users: { d: string; variant: string; first: number }[] = [];
  for (let i = 0; i < 164; i++) {
    const d = `mo-${i}`;
    const variant = i % 2 === 0 ? 'control' : 'test';
    const first = start + Math.floor(rand() * 50 * DAY);
    events.push(exposure(d, key, variant, first));
    users.push({ d, variant, first });
    // The heavy persons (the last four): 70 first-step events within six hours of the exposure.
    if (i >= 160) for (let k = 0; k < 70; k++) events.push({ distinct_id: d, event: steps[0]!, timestamp: new Date(first + (rand() - 0.5) * 6 * HOUR).toISOString(), properties: {} });
    for (let k = 0; k < 6; k++) {
      const at = Math.min(Date.now() - HOUR, first + (rand() * 80 - 10) * DAY);
      events.push({ distinct_id: d, event: steps[Math.floor(rand() * 3)]!, timestamp: new Date(at).toISOString(), properties: {} });
    }
  }
  await ingest(events);
  const months = await t.db.sql<{ n: number }[]>`SELECT count(DISTINCT tableoid)::int AS n FROM events WHERE project_id = ${t.projectId} AND event LIKE 'm-%'`;
  assert.ok(months[0]!.n >= 3, `events in ${months[0]!.n} month partitions`);
  const overflowed = await t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM person_event_times WHERE project_id = ${t.projectId} AND event = 'm-a' AND times IS NULL`;
  assert.ok(overflowed[0]!.n >= 1, 'a heavy person\'s month keeps no times');
  const byUser = new Map<string, number[][]>();
  for (const u of users) byUser.set(u.d, steps.map(() => []));
  for (const e of events) if (e.event !== '$feature_flag_called') byUser.get(e.distinct_id)![steps.indexOf(e.event)]!.push(Date.parse(e.timestamp));
  const W = 30 * DAY;
  const orderedReach = (u: typeof users[number]) => {
    let at = u.first;
    for (let j = 0; j < steps.length; j++) {
      const next = byUser.get(u.d)![j]!.filter((ts) => ts >= at && ts <= u.first + W).sort((a, b) => a - b)[0];
      if (next === undefined) return j;
      at = next;
    }
    return steps.length;
  };
  const unorderedReach = (u: typeof users[number]) => byUser.get(u.d)!.filter((ts) => ts.some((x) => x >= u.first && x <= u.first + W)).length;
  const plain = steps.map((event) => ({ kind: 'EventsNode', event }));
  const filtered = steps.map((event) => ({ kind: 'EventsNode', event, properties: [{ key: 'absent', operator: 'is_not_set', type: 'event' }] }));
  // A count of the first step in each person's 30 days from the exposure (the heavy persons'
  // months keep no times: counted from the events), from the per-person times and from the events.
  const counts = users.map((u) => byUser.get(u.d)![0]!.filter((ts) => ts >= u.first && ts < u.first + W).length);
  for (const source of [{ kind: 'EventsNode', event: 'm-a' }, filtered[0]]) {
    const r = await query(id, { kind: 'ExperimentMetric', metric_type: 'mean', source, conversion_window: 30, conversion_window_unit: 'day' });
    assert.equal(r.status, 200, r.text);
    for (const arm of [r.body.baseline, ...r.body.variant_results]) {
      const mine = counts.filter((_c, i) => users[i]!.variant === arm.key);
      assert.equal(arm.number_of_samples, mine.length);
      assert.equal(arm.sum, mine.reduce((a, b) => a + b, 0), `count ${JSON.stringify(source)} ${arm.key}`);
      assert.equal(arm.sum_squares, mine.reduce((a, b) => a + b * b, 0));
    }
  }
  for (const [order, reach] of [['ordered', orderedReach], ['unordered', unorderedReach]] as const) {
    for (const [path, series] of [['per-person times', plain], ['probes', filtered]] as const) {
      const r = await query(id, { kind: 'ExperimentMetric', metric_type: 'funnel', funnel_order_type: order, series, conversion_window: 30, conversion_window_unit: 'day' });
      assert.equal(r.status, 200, r.text);
      for (const arm of [r.body.baseline, ...r.body.variant_results]) {
        const reached = users.filter((u) => u.variant === arm.key).map(reach);
        assert.deepEqual(arm.step_counts, steps.map((_s, j) => reached.filter((n) => n >= j + 1).length), `${order} ${path} ${arm.key}`);
        assert.equal(arm.sum, reached.filter((n) => n === steps.length).length, `${order} ${path} ${arm.key} conversions`);
      }
    }
  }
});

test('validation failures: fewer than 50 exposures, funnels under 5 conversions, a zero baseline', async () => {
  const key = 'tiny-exp';
  const start = Date.now() - 10 * HOUR;
  const id = await experiment('Tiny', key, new Date(start));
  const events: Ev[] = [];
  for (let i = 0; i < 20; i++) events.push(exposure(`t-${i}`, key, i % 2 ? 'test' : 'control', start + HOUR));
  events.push({ distinct_id: 't-1', event: 'buy', timestamp: new Date(start + 2 * HOUR).toISOString(), properties: {} });
  await ingest(events);
  const r = await query(id, { kind: 'ExperimentMetric', metric_type: 'funnel', series: [{ kind: 'EventsNode', event: 'buy' }] });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.baseline.validation_failures, ['not-enough-exposures', 'not-enough-metric-data', 'baseline-mean-is-zero']);
  assert.deepEqual(r.body.variant_results[0].validation_failures, ['not-enough-exposures', 'not-enough-metric-data']);
  assert.equal(r.body.variant_results[0].chance_to_win, null);
  assert.equal(r.body.variant_results[0].credible_interval, null);
  assert.equal(r.body.variant_results[0].significant, false);
});

test('a person merged after exposure counts once, with the events of both former persons (person overrides)', async () => {
  const key = 'merge-exp';
  const start = Date.now() - 10 * HOUR;
  const id = await experiment('Merge', key, new Date(start));
  const events = exposedPairs('m', key, start + HOUR);
  // anon-m is exposed and buys twice; later it identifies as m-control-0, who bought once.
  events.push(exposure('anon-m', key, 'control', start + HOUR));
  events.push({ distinct_id: 'anon-m', event: 'buy', timestamp: new Date(start + 2 * HOUR).toISOString(), properties: {} });
  events.push({ distinct_id: 'anon-m', event: 'buy', timestamp: new Date(start + 3 * HOUR).toISOString(), properties: {} });
  events.push({ distinct_id: 'm-control-0', event: 'buy', timestamp: new Date(start + 2 * HOUR).toISOString(), properties: {} });
  await ingest(events);
  const metric = { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'buy' } };
  const before = await query(id, metric);
  assert.deepEqual([before.body.baseline.number_of_samples, before.body.baseline.sum], [61, 3]);
  await ingest([{ distinct_id: 'm-control-0', event: '$identify', timestamp: new Date(start + 4 * HOUR).toISOString(), properties: { $anon_distinct_id: 'anon-m' } }]);
  const [override] = await t.db.sql`SELECT count(*)::int AS n FROM person_overrides WHERE project_id = ${t.projectId}`;
  assert.equal(override!.n, 1);
  const after = await query(id, metric);
  assert.deepEqual([after.body.baseline.number_of_samples, after.body.baseline.sum, after.body.baseline.sum_squares], [60, 3, 9]);
});

test('exposure criteria: first_seen keeps users who saw both variants, a custom exposure event replaces $feature_flag_called', async () => {
  const key = 'criteria-exp';
  const start = Date.now() - 10 * HOUR;
  const id = await experiment('Criteria', key, new Date(start));
  const events = exposedPairs('c', key, start + HOUR);
  // switcher saw test first, then control: excluded by default, test under first_seen.
  events.push(exposure('switcher', key, 'test', start + HOUR), exposure('switcher', key, 'control', start + 2 * HOUR));
  events.push({ distinct_id: 'switcher', event: 'buy', timestamp: new Date(start + 3 * HOUR).toISOString(), properties: {} });
  // Custom exposure: `viewed_pricing` with the flag's value in $feature/<key>, only on the pricing page.
  for (let i = 0; i < 55; i++) {
    for (const v of ['control', 'test']) {
      events.push({ distinct_id: `p-${v}-${i}`, event: 'viewed_pricing', timestamp: new Date(start + HOUR).toISOString(),
        properties: { [`$feature/${key}`]: v, page: i < 52 ? 'pricing' : 'home' } });
    }
  }
  await ingest(events);
  const metric = { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'buy' } };
  const excluded = await query(id, metric);
  assert.deepEqual([excluded.body.baseline.number_of_samples, excluded.body.variant_results[0].number_of_samples], [60, 60]);
  await t.request('PATCH', `/api/projects/${t.projectId}/experiments/${id}/`, { body: { exposure_criteria: { multiple_variant_handling: 'first_seen' } } });
  const firstSeen = await query(id, metric);
  assert.deepEqual([firstSeen.body.baseline.number_of_samples, firstSeen.body.variant_results[0].number_of_samples, firstSeen.body.variant_results[0].sum], [60, 61, 1]);
  await t.request('PATCH', `/api/projects/${t.projectId}/experiments/${id}/`, { body: { exposure_criteria: {
    exposure_config: { kind: 'ExperimentEventExposureConfig', event: 'viewed_pricing', properties: [{ key: 'page', type: 'event', operator: 'exact', value: ['pricing'] }] } } } });
  const custom = await query(id, metric);
  assert.deepEqual([custom.body.baseline.number_of_samples, custom.body.variant_results[0].number_of_samples], [52, 52]);
});

test('group aggregation: the entity is the group of the flag\'s group type', async () => {
  // Group type `company` at some index, and a flag aggregated by it.
  await ingestEvents(t.db.sql, [{ uuid: crypto.randomUUID(), project_id: t.projectId, event: '$groupidentify', distinct_id: 'g-admin',
    properties: { $group_type: 'company', $group_key: 'acme', $group_set: {} }, timestamp: new Date().toISOString() }]);
  const [m] = await t.db.sql<{ i: number }[]>`SELECT group_type_index AS i FROM group_type_mappings WHERE project_id = ${t.projectId} AND group_type = 'company'`;
  const i = m!.i;
  const key = 'group-exp';
  const start = Date.now() - 10 * HOUR;
  const id = await experiment('Groups', key, new Date(start), { parameters: { aggregation_group_type_index: i } });
  const events: Ev[] = [];
  // 55 companies per variant, two users each; each company buys once per user.
  for (let c = 0; c < 55; c++) {
    for (const v of ['control', 'test']) {
      for (const u of [0, 1]) {
        const d = `g-${v}-${c}-${u}`;
        events.push({ ...exposure(d, key, v, start + HOUR), properties: { $feature_flag: key, $feature_flag_response: v, [`$group_${i}`]: `co-${v}-${c}` } });
        events.push({ distinct_id: d, event: 'buy', timestamp: new Date(start + 2 * HOUR).toISOString(), properties: { [`$group_${i}`]: `co-${v}-${c}` } });
      }
    }
  }
  await ingest(events);
  const r = await query(id, { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'buy' } });
  assert.equal(r.status, 200, r.text);
  for (const arm of [r.body.baseline, ...r.body.variant_results]) {
    assert.deepEqual([arm.number_of_samples, arm.sum, arm.sum_squares], [55, 110, 55 * 4], arm.key);
  }
});

test('the shared event-level vector sem-winsorize-sum: pooled percentile bounds, floor(p·N)', async () => {
  const vectors = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'test', 'stats', 'vectors', 'experiment-stats-sample.json'), 'utf8')) as { vectors: any[] };
  const v = vectors.vectors.find((x) => x.id === 'sem-winsorize-sum');
  const cfg = v.config.experiment;
  const id = await experiment('Winsorize', cfg.flag_key, new Date(cfg.start_date), { end_date: cfg.end_date, stats_config: cfg.stats_config });
  await ingest(v.inputs.events);
  const r = await query(id, v.config.metric);
  assert.equal(r.status, 200, r.text);
  for (const arm of [r.body.baseline, ...r.body.variant_results]) {
    assert.equal(arm.number_of_samples, v.expected[arm.key].number_of_samples);
    assert.equal(arm.sum, v.expected[arm.key].sum);
  }
});

test('errors: no experiment_id, unknown experiment, a draft, another kind, a bad metric; scope query:read', async () => {
  const missing = await query(undefined, {});
  assert.deepEqual([missing.status, missing.body.detail], [400, 'experiment_id is required']);
  const unknown = await query(999999, {});
  assert.deepEqual([unknown.status, unknown.body.detail], [400, 'Experiment with id 999999 not found']);
  const draft = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, { body: { name: 'Draft q', feature_flag_key: 'draft-q' } });
  const d = await query(draft.body.id, { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'x' } });
  assert.equal(d.status, 400);
  assert.match(d.body.detail, /not started/);
  const kind = await t.request('POST', `/api/projects/${t.projectId}/query/`, { body: { query: { kind: 'HogQLQuery', query: 'select 1' } } });
  assert.equal(kind.status, 400);
  const id = await experiment('Bad metric', 'bad-metric', new Date(Date.now() - HOUR));
  const bad = await query(id, { kind: 'ExperimentMetric', metric_type: 'mean' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.attr, 'metric__source');
  const reader = await t.createKey(['experiment:read']);
  const noScope = await t.request('POST', `/api/projects/${t.projectId}/query/`, { key: reader, body: { query: { kind: 'ExperimentQuery', experiment_id: id } } });
  assert.equal(noScope.body.detail, "API key missing required scope 'query:read'");
});
