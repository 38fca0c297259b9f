/**
 * Every statistics vector of the shared sample (test/stats/vectors/experiment-stats-sample.json,
 * copied from research/vectors; PostHog's and GrowthBook's test suites) reproduced within its
 * tolerance through the `switchyard stats` command: its `run` with the input on stdin, in this
 * process; two real `node dist/src/cli.js stats` processes check stdin piped in, the printed JSON
 * and the exit codes (0, and 2 for bad input). The event-level vector (sem-*) is reproduced through
 * the query endpoint instead (test/control-plane/experiments/query.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { KNOWN_KEYS } from '../../src/stats/config.js';
import * as statsCommand from '../../src/commands/stats.js';
import { runCli, runInProcess, type CommandRun } from '../support/cli.js';

interface Vector { id: string; engine: string; category: string; method: string; config: Record<string, any>; inputs: Record<string, any>; expected: Record<string, any>; tolerance: { abs: number; per_field_tolerance?: Record<string, number> } }

const file = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'test', 'stats', 'vectors', 'experiment-stats-sample.json'), 'utf8')) as { vectors: Vector[] };

const stdinText = (input: unknown) => (typeof input === 'string' ? input : JSON.stringify(input));

/** Exit code, stdout JSON (undefined when it is not JSON) and stderr of a run. */
function parsed(r: CommandRun): { code: number; out: any; err: string } {
  let out: unknown;
  try { out = r.stdout ? JSON.parse(r.stdout) : undefined; } catch { out = undefined; }
  return { code: r.code ?? -1, out, err: r.stderr };
}

/** Runs `switchyard stats` on `input` (on its stdin), in this process. */
async function stats(input: unknown): Promise<{ code: number; out: any; err: string }> {
  return parsed(await runInProcess(statsCommand, [], { stdin: stdinText(input) }));
}

/** The CLI input a vector describes. */
function cliInput(v: Vector): unknown {
  const arm = (key: string, s: Record<string, any>) => ({ key, ...s });
  const c = v.config;
  const config: Record<string, unknown> = { baseline_key: 'control' };
  if (c.alpha !== undefined) config.alpha = c.alpha;
  if (c.ci_level !== undefined) config.ci_level = c.ci_level;
  if (c.difference_type !== undefined) config.difference_type = c.difference_type;
  if (c.sequential_tuning_parameter !== undefined) config.sequential_tuning_parameter = c.sequential_tuning_parameter;
  switch (v.category) {
    case 'srm':
      return { method: 'srm', variants: v.inputs.users.map((n: number, i: number) => ({ key: `v${i}`, n, sum: 0, sum_squares: 0, weight: v.inputs.weights[i] })) };
    case 'multiple_comparisons':
      return { method: 'benjamini_hochberg', config: { p_values: v.inputs.p_values } };
    default: {
      const method = v.category === 'sequential' ? 'sequential' : v.category === 'bayesian' ? 'bayesian' : 'frequentist';
      if (v.engine === 'growthbook') {
        config.abs_denominator = true;
        if (c.alpha !== undefined && method === 'bayesian') config.ci_level = 1 - c.alpha;
      }
      return { method, config, variants: [arm('control', v.inputs.control), arm('treatment', v.inputs.treatment)] };
    }
  }
}

/** The output value a vector's expected field names. */
function actual(v: Vector, out: any, field: string): unknown {
  if (v.category === 'srm') return out[field];
  if (v.category === 'multiple_comparisons') return field === 'adjusted_in_input_order' ? out.adjusted_p_values : undefined;
  const r = out.variant_results[0];
  const alias: Record<string, string> = { effect_size: 'point_estimate', expected: 'point_estimate' };
  return r[alias[field] ?? field];
}

function close(a: unknown, e: unknown, tol: number, where: string): void {
  if (Array.isArray(e)) {
    assert.ok(Array.isArray(a), `${where}: expected a list, got ${JSON.stringify(a)}`);
    assert.equal((a as unknown[]).length, e.length, where);
    e.forEach((x, i) => close((a as unknown[])[i], x, tol, `${where}[${i}]`));
  } else if (typeof e === 'number') {
    assert.equal(typeof a, 'number', `${where}: ${JSON.stringify(a)}`);
    assert.ok(Math.abs((a as number) - e) <= tol, `${where}: ${a} vs ${e} (±${tol})`);
  } else {
    assert.equal(a, e, where);
  }
}

const SKIP_FIELDS = new Set(['test_artifact_uplift_stddev', 'as_asserted_sorted']);
const vectors = file.vectors.filter((x) => x.category !== 'semantics');

/** Asserts that a run printed `v`'s expected figures within its tolerance. */
function reproduces(v: Vector, r: { code: number; out: any; err: string }): void {
  assert.equal(r.code, 0, r.err);
  for (const [field, expected] of Object.entries(v.expected)) {
    if (SKIP_FIELDS.has(field)) continue;
    close(actual(v, r.out, field), expected, v.tolerance.per_field_tolerance?.[field] ?? v.tolerance.abs, `${v.id}.${field}`);
  }
}

for (const v of vectors) {
  test(`stats vector ${v.id} (${v.engine} ${v.method}) through switchyard stats`, async () => {
    reproduces(v, await stats(cliInput(v)));
  });
}

test('every non-event vector is covered', () => {
  assert.equal(vectors.length, 9);
});

test('node dist/src/cli.js stats: a vector piped to stdin is reproduced (exit 0); input that is not JSON exits 2 with the reason', async () => {
  const v = vectors.find((x) => x.category === 'bayesian')!;
  const [ok, bad] = await Promise.all([runCli(['stats'], { input: stdinText(cliInput(v)) }), runCli(['stats'], { input: 'not json' })]);
  reproduces(v, parsed(ok));
  assert.equal(bad.code, 2);
  assert.equal(bad.stdout, '');
  assert.match(bad.stderr, /^switchyard stats: the input is not JSON/);
});

test('switchyard stats: bad input exits 2 with a reason; --help exits 0', async () => {
  for (const [input, reason] of [
    ['not json', /not JSON/],
    [{ method: 'nope' }, /method must be/],
    [{ method: 'bayesian', variants: [{ key: 'control', n: 10, sum: 1, sum_squares: 1 }] }, /at least two variants/],
    [{ method: 'frequentist', variants: [{ key: 'control', n: -1, sum: 1, sum_squares: 1 }, { key: 't', n: 5, sum: 1, sum_squares: 1 }] }, /non-negative integer/],
    [{ method: 'frequentist', config: { alpha: 2 }, variants: [{ key: 'control', n: 10, sum: 1, sum_squares: 1 }, { key: 't', n: 10, sum: 1, sum_squares: 1 }] }, /alpha/],
  ] as const) {
    const r = await stats(input);
    assert.equal(r.code, 2, JSON.stringify(input));
    assert.match(r.err, reason);
  }
  assert.equal((await runInProcess(statsCommand, ['--help'])).code, 0);
});

test('switchyard stats: a zero control mean leaves the variant without statistics, as PostHog', async () => {
  const r = await stats({ method: 'frequentist', variants: [{ key: 'control', n: 100, sum: 0, sum_squares: 0 }, { key: 'test', n: 100, sum: 10, sum_squares: 10 }] });
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out.variant_results[0].p_value, null);
  assert.match(r.out.variant_results[0].error, /control mean is zero/);
});

test('switchyard stats: Holm and sample size', async () => {
  const holm = await stats({ method: 'holm', config: { p_values: [0.01, 0.04, 0.03] } });
  assert.deepEqual(holm.out.adjusted_p_values.map((p: number) => Number(p.toFixed(6))), [0.03, 0.06, 0.06]);
  // PostHog's rule: 16·p(1−p)/(MDE·p)² per variant = 16·0.09/0.02² = 3600; 7200 in all at 500 a day = 14.4 days.
  const size = await stats({ method: 'sample_size', config: { kind: 'funnel', baseline: 0.1, mde: 0.2, variants: 2, exposures_per_day: 500 } });
  assert.equal(size.out.per_variant, 3600);
  assert.equal(size.out.total, 7200);
  assert.ok(Math.abs(size.out.running_time_days - 14.4) < 1e-9);
  assert.ok(Math.abs(size.out.variance - 0.09) < 1e-12);
  const unknown = await stats({ method: 'sample_size', config: { kind: 'revenue', baseline: 10 } });
  assert.equal(unknown.code, 2);
  assert.match(unknown.err, /config.kind must be one of funnel/);
});

test('switchyard stats --help and docs/statistics.md name every method and every config key', async () => {
  const help = (await runInProcess(statsCommand, ['--help'])).stdout;
  const doc = fs.readFileSync(path.join(PACKAGE_ROOT, 'docs', 'statistics.md'), 'utf8');
  for (const [method, keys] of Object.entries(KNOWN_KEYS)) {
    for (const word of [method, ...keys]) {
      assert.ok(help.includes(word), `--help names ${word}`);
      assert.ok(doc.includes(`\`${word}\``), `docs/statistics.md names \`${word}\``);
    }
  }
});
