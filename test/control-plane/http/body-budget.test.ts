/**
 * Management API bodies are checked against their budget before they are parsed
 * (control-plane/http/json-body.ts, src/json-budget.ts), over real HTTP and Postgres:
 *
 * - a 10,000-level value on holdouts, experiments, saved metrics, insights, dashboards (and
 *   cohorts, flags) answers 400 in PostHog's validation shape naming the field, and writes
 *   nothing (unchecked, it reaches postgres.js, whose JSON.stringify overflows the stack: 500);
 * - with the body limit raised to 20 MiB, 6 M nested arrays and a 1.5 M-key object are refused
 *   (400, 413) after one pass over the text, two at once included; the test prints the time and
 *   the RSS growth (figures are noisy on a shared machine) and holds the growth of two at once
 *   under {@link TWO_AT_ONCE_RSS_CEILING_MB};
 * - a large legitimate body (a flag with 500 groups) is still accepted.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { MAX_BODY_MEMBERS, MAX_JSON_DEPTH } from '../../../src/limits.js';

/**
 * Most the process's RSS may grow while two hostile 20 MiB bodies are refused at once: the raw
 * bodies and their text (about 4 × 20 MB on the server side), plus fastify's buffers and slack.
 * Parsing them instead takes gigabytes.
 */
const TWO_AT_ONCE_RSS_CEILING_MB = 256;
const BIG_LIMIT = 20 * 1024 * 1024;

let t: TestControlPlane;
let big: TestControlPlane;

before(async () => {
  t = await startTestControlPlane();
  big = await startTestControlPlane({ maxApiBodyBytes: BIG_LIMIT });
});
after(async () => { await t.close(); await big.close(); });

const deepObject = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
const JSON_HEADERS = { 'content-type': 'application/json' };

test('a 10,000-level value answers 400 validation_error naming the field on every resource, and nothing is written', async () => {
  const deep = deepObject(10_000);
  const P = `/api/projects/${t.projectId}`;
  const cases: { path: string; body: string; attr: string }[] = [
    { path: `${P}/experiment_holdouts/`, body: `{"name":"deep-h","filters":[{"properties":[${deep}],"rollout_percentage":10}]}`, attr: 'filters' },
    { path: `${P}/experiments/`, body: `{"name":"deep-e","feature_flag_key":"deep-e","parameters":${deep}}`, attr: 'parameters' },
    { path: `${P}/experiments/`, body: `{"name":"deep-e2","feature_flag_key":"deep-e2","exposure_criteria":${deep}}`, attr: 'exposure_criteria' },
    { path: `${P}/experiment_saved_metrics/`, body: `{"name":"deep-s","query":{"kind":"ExperimentMetric","metric_type":"mean","source":${deep}}}`, attr: 'query' },
    { path: `${P}/insights/`, body: `{"name":"deep-i","query":{"kind":"x","a":${deep}}}`, attr: 'query' },
    { path: `${P}/dashboards/`, body: `{"name":"deep-d","filters":${deep}}`, attr: 'filters' },
    { path: `${P}/cohorts/`, body: `{"name":"deep-c","filters":${deep}}`, attr: 'filters' },
    { path: `${P}/feature_flags/`, body: `{"key":"deep-f","filters":${deep}}`, attr: 'filters' },
  ];
  for (const c of cases) {
    const r = await t.request('POST', c.path, { rawBody: c.body, headers: JSON_HEADERS });
    assert.equal(r.status, 400, `${c.path}: ${r.text}`);
    assert.deepEqual(r.body, { type: 'validation_error', code: 'invalid_input', detail: `Value may not nest deeper than ${MAX_JSON_DEPTH} levels.`, attr: c.attr }, c.path);
  }
  // The same on update, and for a body that is deep at its top level.
  const d = await t.request('POST', `${P}/dashboards/`, { body: { name: 'shallow' } });
  assert.equal(d.status, 201, d.text);
  const patched = await t.request('PATCH', `${P}/dashboards/${d.body.id}/`, { rawBody: `{"filters":${deep}}`, headers: JSON_HEADERS });
  assert.equal(patched.status, 400, patched.text);
  assert.equal(patched.body.attr, 'filters');
  const bare = await t.request('POST', `${P}/dashboards/`, { rawBody: '['.repeat(10_000) + ']'.repeat(10_000), headers: JSON_HEADERS });
  assert.equal(bare.status, 400, bare.text);
  assert.deepEqual(bare.body, { type: 'validation_error', code: 'invalid_input', detail: `Request body may not nest deeper than ${MAX_JSON_DEPTH + 1} levels.`, attr: null });

  const [{ n }] = await t.db.sql<{ n: number }[]>`
    SELECT (SELECT count(*) FROM experiment_holdouts) + (SELECT count(*) FROM experiments) + (SELECT count(*) FROM experiment_saved_metrics)
      + (SELECT count(*) FROM insights) + (SELECT count(*) FROM cohorts WHERE name LIKE 'deep-%')
      + (SELECT count(*) FROM feature_flags WHERE key LIKE 'deep-%') + (SELECT count(*) FROM dashboards WHERE name LIKE 'deep-%') AS n`;
  assert.equal(Number(n), 0);
  const kept = await t.request('GET', `${P}/dashboards/${d.body.id}/`);
  assert.deepEqual(kept.body.filters, {});
});

test('a value at the depth limit is accepted', async () => {
  const r = await t.request('POST', `/api/projects/${t.projectId}/dashboards/`, { rawBody: `{"name":"at-limit","filters":${deepObject(MAX_JSON_DEPTH)}}`, headers: JSON_HEADERS });
  assert.equal(r.status, 201, r.text);
});

test('more members than MAX_BODY_MEMBERS → 413 payload_too_large; a flag with 500 groups is accepted', async () => {
  const many = `{"name":"wide","filters":{"ids":[${'0,'.repeat(MAX_BODY_MEMBERS)}0]}}`;
  const r = await t.request('POST', `/api/projects/${t.projectId}/dashboards/`, { rawBody: many, headers: JSON_HEADERS });
  assert.equal(r.status, 413, r.text);
  assert.deepEqual(r.body, { type: 'invalid_request', code: 'payload_too_large', detail: `Request body JSON holds more than ${MAX_BODY_MEMBERS} array elements and object members.`, attr: null });

  const groups = Array.from({ length: 500 }, (_, i) => ({
    properties: [{ key: 'email', type: 'person', operator: 'exact', value: Array.from({ length: 20 }, (_, j) => `user-${i}-${j}@example.com`) }],
    rollout_percentage: 50,
  }));
  const flag = await t.request('POST', `/api/projects/${t.projectId}/feature_flags/`, { body: { key: 'many-groups', filters: { groups } } });
  assert.equal(flag.status, 201, flag.text);
  assert.equal(flag.body.filters.groups.length, 500);
});

/** Sends `body` and reports status, elapsed ms. */
async function timed(path: string, body: string): Promise<{ status: number; ms: number; text: string }> {
  const t0 = performance.now();
  const r = await big.request('POST', path, { rawBody: body, headers: JSON_HEADERS });
  return { status: r.status, ms: Math.round(performance.now() - t0), text: r.text.slice(0, 160) };
}

const mb = (bytes: number): number => Math.round(bytes / 1e6);

test('hostile 20 MiB bodies are refused after one pass, two at once within the RSS ceiling', async () => {
  const path = `/api/projects/${big.projectId}/dashboards/`;
  const N = 6_000_000;
  const nested = '['.repeat(N) + ']'.repeat(N);
  const wide = `{"name":"w","filters":{${Array.from({ length: 1_500_000 }, (_, i) => `"k${i}":1`).join(',')}}}`;
  // Warm the route so the figures are the refusals' own.
  assert.equal((await timed(path, '{"name":"warm"}')).status, 201);

  for (const [name, body, status] of [['6 M nested arrays', nested, 400], ['1.5 M-key object', wide, 413]] as const) {
    const rss0 = process.memoryUsage().rss;
    const r = await timed(path, body);
    assert.equal(r.status, status, `${name}: ${r.text}`);
    console.log(`control plane, ${name} (${mb(body.length)} MB): ${r.status} in ${r.ms} ms, RSS +${mb(process.memoryUsage().rss - rss0)} MB`);
  }
  const rss0 = process.memoryUsage().rss;
  let peak = rss0;
  const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 5);
  const both = await Promise.all([timed(path, nested), timed(path, wide)]);
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  assert.deepEqual(both.map((r) => r.status), [400, 413]);
  const grew = mb(peak - rss0);
  console.log(`control plane, both at once: ${both.map((r) => `${r.status} in ${r.ms} ms`).join(', ')}; peak RSS +${grew} MB (ceiling ${TWO_AT_ONCE_RSS_CEILING_MB} MB; figures noisy on a shared machine)`);
  assert.ok(grew < TWO_AT_ONCE_RSS_CEILING_MB, `RSS grew ${grew} MB`);
});
