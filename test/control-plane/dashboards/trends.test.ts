/**
 * TrendsQuery on `POST /query/` against a real control plane: events go through
 * the real ingestion with timestamps spread over days and hours, and every series is checked
 * against a direct count of the same generated events in plain TypeScript (buckets in the
 * project's time zone, breakdown ranking and folding, dau, cumulative, aggregated displays,
 * property groups), plus the date-range rules and the refusals.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { prng } from '../../support/prng.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { parseDateBound, zonedInstant } from '../../../src/control-plane/insights/date-range.js';
import { BREAKDOWN_NULL, BREAKDOWN_OTHER } from '../../../src/control-plane/insights/trends.js';

let t: TestControlPlane;
const DAY = 86_400_000;
const NOW = Date.now();

interface Ev { distinct_id: string; event: string; timestamp: string; properties: Record<string, unknown> }
const sent: Ev[] = [];

/** A local calendar day `YYYY-MM-DD` of an instant in a time zone. */
function localDay(at: number, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(at));
}

async function trends(query: Record<string, unknown>) {
  return t.request('POST', `/api/projects/${t.projectId}/query/`, { body: { query: { kind: 'TrendsQuery', ...query } } });
}

before(async () => {
  t = await startTestControlPlane();
  const rand = prng(11);
  const plans = ['free', 'pro', 'team', 'enterprise', ''];
  for (let i = 0; i < 600; i++) {
    const at = NOW - Math.floor(rand() * 9 * DAY);
    const user = `tr-${Math.floor(rand() * 40)}`;
    const plan = plans[Math.floor(rand() * plans.length)]!;
    const props: Record<string, unknown> = { amount: Math.floor(rand() * 50), $session_id: `s-${user}-${Math.floor(at / (6 * 3600_000))}` };
    if (plan !== '') props.plan = plan;
    sent.push({ distinct_id: user, event: rand() < 0.7 ? 'pageview' : 'purchase', timestamp: new Date(at).toISOString(), properties: props });
  }
  for (let i = 0; i < sent.length; i += 200) {
    await ingestEvents(t.db.sql, sent.slice(i, i + 200).map((e) => ({ uuid: crypto.randomUUID(), project_id: t.projectId, ...e })));
  }
});
after(async () => { await t?.close(); });

test('counts per day, unique users and sums equal a direct count, over -7d with today included', async () => {
  const r = await trends({
    series: [{ kind: 'EventsNode', event: 'pageview' }, { kind: 'EventsNode', event: 'pageview', math: 'dau' }, { kind: 'EventsNode', event: 'purchase', math: 'sum', math_property: 'amount' }],
    dateRange: { date_from: '-7d' }, interval: 'day',
  });
  assert.equal(r.status, 200, r.text);
  const [total, dau, sum] = r.body.results;
  assert.equal(total.days.length, 8, 'seven days back and today');
  assert.equal(total.days[7], localDay(NOW, 'UTC'));
  assert.match(total.labels[7], /^\d{1,2}-[A-Z][a-z]{2}-\d{4}$/);
  const from = zonedInstant('UTC', ...(localDay(NOW - 7 * DAY, 'UTC').split('-').map(Number) as [number, number, number])).getTime();
  for (const [k, day] of (total.days as string[]).entries()) {
    const inDay = sent.filter((e) => localDay(Date.parse(e.timestamp), 'UTC') === day && Date.parse(e.timestamp) >= from);
    assert.equal(total.data[k], inDay.filter((e) => e.event === 'pageview').length, `total ${day}`);
    assert.equal(dau.data[k], new Set(inDay.filter((e) => e.event === 'pageview').map((e) => e.distinct_id)).size, `dau ${day}`);
    assert.equal(sum.data[k], inDay.filter((e) => e.event === 'purchase').reduce((s, e) => s + (e.properties.amount as number), 0), `sum ${day}`);
  }
  assert.equal(total.count, (total.data as number[]).reduce((a, b) => a + b, 0));
  assert.deepEqual([total.label, total.action.id, total.action.math, dau.action.math], ['pageview', 'pageview', 'total', 'dau']);
});

test('a breakdown ranks values by total, folds the rest into "other" and names the missing value', async () => {
  const r = await trends({ series: [{ kind: 'EventsNode', event: null }], dateRange: { date_from: '-14d' }, breakdownFilter: { breakdown: 'plan', breakdown_type: 'event', breakdown_limit: 2 } });
  assert.equal(r.status, 200, r.text);
  const byValue = new Map<string, number>();
  for (const e of sent) {
    const v = typeof e.properties.plan === 'string' ? e.properties.plan : BREAKDOWN_NULL;
    byValue.set(v, (byValue.get(v) ?? 0) + 1);
  }
  const ranked = [...byValue.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const results = r.body.results as { breakdown_value: string; count: number; label: string }[];
  assert.deepEqual(results.map((x) => x.breakdown_value), [ranked[0]![0], ranked[1]![0], BREAKDOWN_OTHER]);
  assert.deepEqual(results.map((x) => x.count), [ranked[0]![1], ranked[1]![1], ranked.slice(2).reduce((s, [, n]) => s + n, 0)]);
  assert.equal(results[0]!.label, ranked[0]![0]);
});

test('aggregated displays give one value over the range (dau: distinct users, not a sum of days); cumulative sums', async () => {
  const series = [{ kind: 'EventsNode', event: 'purchase', math: 'dau' }];
  const table = await trends({ series, dateRange: { date_from: '-14d' }, trendsFilter: { display: 'ActionsTable' } });
  assert.equal(table.status, 200, table.text);
  assert.equal(table.body.results[0].aggregated_value, new Set(sent.filter((e) => e.event === 'purchase').map((e) => e.distinct_id)).size);
  assert.deepEqual(table.body.results[0].data, []);
  const cumulative = await trends({ series: [{ kind: 'EventsNode', event: 'purchase' }], dateRange: { date_from: '-14d' }, trendsFilter: { display: 'ActionsLineGraphCumulative' } });
  const data = cumulative.body.results[0].data as number[];
  assert.equal(data[data.length - 1], sent.filter((e) => e.event === 'purchase').length);
  assert.ok(data.every((v, i) => i === 0 || v >= data[i - 1]!));
  const cumulativeUsers = await trends({ series, dateRange: { date_from: '-14d' }, trendsFilter: { display: 'ActionsLineGraphCumulative' } });
  const users = cumulativeUsers.body.results[0].data as number[];
  assert.equal(users[users.length - 1], table.body.results[0].aggregated_value, 'each user counts once, from their first day');
});

test('property groups (OR of ANDs) filter the events; hourly and weekly buckets; unique sessions', async () => {
  const properties = { type: 'OR', values: [{ type: 'AND', values: [{ key: 'plan', operator: 'exact', value: 'pro', type: 'event' }] }, { type: 'AND', values: [{ key: 'amount', operator: 'gt', value: 45, type: 'event' }] }] };
  const r = await trends({ series: [{ kind: 'EventsNode', event: null }], dateRange: { date_from: '-14d' }, properties, trendsFilter: { display: 'BoldNumber' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.results[0].aggregated_value, sent.filter((e) => e.properties.plan === 'pro' || (e.properties.amount as number) > 45).length);
  const hourly = await trends({ series: [{ kind: 'EventsNode', event: 'pageview' }], dateRange: { date_from: '-24h' }, interval: 'hour' });
  assert.equal(hourly.status, 200, hourly.text);
  assert.ok(hourly.body.results[0].days.length >= 24 && hourly.body.results[0].days.length <= 26);
  assert.match(hourly.body.results[0].days[0], /^\d{4}-\d{2}-\d{2} \d{2}:00:00$/);
  const since = Date.parse(hourly.body.resolved_date_range.date_from);
  assert.equal(hourly.body.results[0].count, sent.filter((e) => e.event === 'pageview' && Date.parse(e.timestamp) >= since).length);
  const weekly = await trends({ series: [{ kind: 'EventsNode', event: null, math: 'unique_session' }], dateRange: { date_from: '-30d' }, interval: 'week' });
  assert.equal(weekly.status, 200, weekly.text);
  for (const day of weekly.body.results[0].days as string[]) assert.equal(new Date(`${day}T00:00:00Z`).getUTCDay(), 0, 'weeks start on Sunday');
  assert.ok(weekly.body.results[0].count >= new Set(sent.map((e) => e.properties.$session_id)).size);
});

test('dates follow the project time zone; invalid queries answer 400 naming the field', async () => {
  const now = new Date('2026-03-10T03:30:00Z');
  // 23:30 on 9 March in New York (EDT since the 8th); a day back is 23:30 on the 8th, still EDT.
  assert.equal((parseDateBound('-1d', now, 'America/New_York', false) as { at: Date }).at.toISOString(), '2026-03-09T03:30:00.000Z');
  assert.equal((parseDateBound('-2d', now, 'America/New_York', false) as { at: Date }).at.toISOString(), '2026-03-08T04:30:00.000Z', 'across the change: 23:30 EST');
  assert.equal((parseDateBound('dStart', now, 'America/New_York', false) as { at: Date }).at.toISOString(), '2026-03-09T04:00:00.000Z');
  assert.equal((parseDateBound('2026-03-01', now, 'Europe/Paris', false) as { at: Date }).at.toISOString(), '2026-02-28T23:00:00.000Z');
  assert.equal((parseDateBound('2026-03-01', now, 'UTC', true) as { at: Date }).at.toISOString(), '2026-03-01T23:59:59.999Z');
  assert.deepEqual(parseDateBound('all', now, 'UTC', false), { all: true });
  for (const [query, attr] of [
    [{ series: [] }, 'series'],
    [{ series: [{ kind: 'ActionsNode', id: 1 }] }, 'series__0'],
    [{ series: [{ kind: 'EventsNode', event: 'x', math: 'weekly_active' }] }, 'series__0__math'],
    [{ series: [{ kind: 'EventsNode', event: 'x', math: 'sum' }] }, 'series__0__math_property'],
    [{ series: [{ kind: 'EventsNode', event: 'x' }], interval: 'minute' }, 'interval'],
    [{ series: [{ kind: 'EventsNode', event: 'x' }], dateRange: { date_from: 'yesterday' } }, 'dateRange'],
    [{ series: [{ kind: 'EventsNode', event: 'x' }], breakdownFilter: { breakdown: 'plan', breakdown_type: 'person' } }, 'breakdownFilter'],
    [{ series: [{ kind: 'EventsNode', event: 'x' }], dateRange: { date_from: '-3y' }, interval: 'hour' }, 'dateRange'],
  ] as [Record<string, unknown>, string][]) {
    const r = await trends(query);
    assert.deepEqual([r.status, r.body.type, r.body.attr], [400, 'validation_error', attr], JSON.stringify(query));
  }
  const unknown = await t.request('POST', `/api/projects/${t.projectId}/query/`, { body: { query: { kind: 'HogQLQuery', query: 'select 1' } } });
  assert.deepEqual([unknown.status, unknown.body.attr], [400, 'query']);
  const wrapped = await t.request('POST', `/api/projects/${t.projectId}/query/`, { body: { query: { kind: 'InsightVizNode', source: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'purchase' }], dateRange: { date_from: '-14d' } } } } });
  assert.equal(wrapped.status, 200, wrapped.text);
  assert.equal(wrapped.body.results[0].count, sent.filter((e) => e.event === 'purchase').length);
});
