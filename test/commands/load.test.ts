/**
 * `switchyard load`: the pure parts (argument checks, the connection/rate plan, the bodies, the
 * ramp's judgement) and the command end to end against three real evaluation nodes on one control
 * plane — a real `node dist/src/cli.js load` process spreading a mixed run over all three, checked
 * against each node's /metrics counters and the captured events in Postgres; and the command's
 * `run` in this process (its generator processes forked as always) for a wrong key counted by
 * status and a ramp stopped by its p99 objective behind a TCP proxy that holds every answer back.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { CliError } from '../../src/commands/cli-error.js';
import * as loadCommand from '../../src/commands/load.js';
import { OPTION_NAMES, parseLoadArgs, USAGE } from '../../src/load/options.js';
import { planJobs, type RunResult } from '../../src/load/driver.js';
import { buildRequests, distinctId } from '../../src/load/bodies.js';
import { judge, ramp, stepRate } from '../../src/load/ramp.js';
import type { LoadReport } from '../../src/load/report.js';
import { waitFor } from '../support/wait.js';
import { runCli, runInProcess } from '../support/cli.js';
import { createFlag, get, startCluster, waitReady, type SystemCluster } from '../system/support.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-load-'));

/** Runs `switchyard load ...args` in this process (its generators are processes of their own). */
const load = (args: string[]) => runInProcess(loadCommand, args);

const readReport = (file: string): LoadReport => JSON.parse(fs.readFileSync(file, 'utf8')) as LoadReport;

// ---- pure parts ----

test('bad arguments: one clear line naming the option, exit 2; --help lists every option', async () => {
  const bad = async (args: string[], pattern: RegExp) => {
    const r = await load(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, pattern);
    assert.equal(r.stdout, '');
  };
  const help = load(['--help']);
  await Promise.all([
    bad(['--url', 'http://127.0.0.1:1', '--key', 'phc_a', '--bogus'], /Unknown option '--bogus'/),
    bad(['--url', 'http://127.0.0.1:1', '--key', 'phc_a', '--report', path.join(dir, 'missing', 'r.json')], /--report .*not writable/),
  ]);
  const reject = (argv: string[], pattern: RegExp) => assert.throws(() => parseLoadArgs(argv), (e: unknown) => e instanceof CliError && pattern.test(e.message));
  const base = ['--url', 'http://127.0.0.1:1', '--key', 'phc_a'];
  reject(['--key', 'phc_a'], /--url is required/);
  reject([...base.slice(0, 2), '--key', 'sk_nope'], /--key must be a project API key/);
  reject(['--url', 'http://127.0.0.1:1'], /--key is required/);
  reject(['--url', 'ftp://x', '--key', 'phc_a'], /--url must be/);
  reject([...base, '--mix', 'flags=70,capture=20'], /sum to 100, got 90/);
  reject([...base, '--ramp'], /--ramp needs --slo-p99/);
  reject([...base, '--connections', '0'], /--connections must be between 1/);
  reject([...base, '--workers', 'two'], /--workers must be a whole number/);
  reject([...base, '--duration', '0s'], /--duration must be a positive number of seconds/);
  reject([...base, '--ramp', '--slo-p99', 'fast'], /--slo-p99 must be a positive time/);
  reject([...base, '--slo-p99', '50ms'], /--slo-p99 only applies with --ramp/);
  reject([...base, '--ramp', '--slo-p99', '50ms', '--ramp-factor', '1'], /--ramp-factor must be a number above 1/);
  reject([...base, '--mix', 'capture=100', '--flag-keys', 'a'], /--flag-keys needs flags traffic/);
  reject([...base, '--url', 'http://127.0.0.1:2/some/path'], /without path/);
  reject([...base, '--mix', 'flags=50,flags=50'], /names flags twice/);

  const o = parseLoadArgs([...base, '--url', 'http://127.0.0.1:2/', '--ramp', '--slo-p99', '0.05s', '--duration', '1.5s', '--flag-keys', 'a, b'])!;
  assert.deepEqual(o.urls, ['http://127.0.0.1:1', 'http://127.0.0.1:2']);
  assert.deepEqual(o.ramp, { sloP99Ms: 50, factor: 1.5, maxSteps: 10 });
  assert.equal(o.rate, 100);
  assert.equal(o.durationS, 1.5);
  assert.deepEqual(o.flagKeys, ['a', 'b']);

  const h = await help;
  assert.equal(h.code, 0, h.stderr);
  assert.equal(h.stdout, USAGE);
  const documented = new Set(USAGE.match(/--[a-z0-9-]+/g));
  const options = OPTION_NAMES.map((o) => `--${o}`);
  assert.ok(options.length >= 17, options.join(' '));
  const guide = fs.readFileSync(path.join(PACKAGE_ROOT, 'docs', 'load-testing.md'), 'utf8');
  for (const opt of options) {
    assert.ok(documented.has(opt), `--help does not document ${opt}`);
    assert.ok(opt === '--help' || guide.includes(`\`${opt}`), `docs/load-testing.md does not document ${opt}`);
  }
});

test('the plan: connection j goes to URL j mod n; rates add up to the target; fewer processes than connections', () => {
  const spec = { key: 'phc_a', mix: { flags: 100, capture: 0 }, flagKeys: null, users: 10, batchSize: 1 };
  const urls = ['http://a', 'http://b', 'http://c'];
  const jobs = planJobs({ urls, spec, connections: 7, rate: null, durationS: 1, timeoutS: 10, workers: 2 });
  assert.deepEqual(jobs.map((j) => j.slots.map((s) => s.connections)), [[4], [3]]);
  // Worker 1 starts at connection 4 → its first connection goes to URL 4 mod 3 = b.
  assert.deepEqual(jobs.map((j) => j.slots[0]!.urls), [urls, ['http://b', 'http://c', 'http://a']]);
  assert.deepEqual(jobs.map((j) => j.seed), [1, 2]);

  const paced = planJobs({ urls, spec, connections: 50, rate: 23, durationS: 1, timeoutS: 10, workers: 4 });
  const slots = paced.flatMap((j) => j.slots);
  assert.equal(slots.reduce((n, s) => n + s.connections, 0), 23, 'at most one connection per request per second');
  assert.equal(slots.reduce((n, s) => n + s.rate!, 0), 23);
  assert.ok(slots.every((s) => s.rate! >= s.connections));
  assert.equal(new Set(slots.map((s) => s.delayMs)).size, slots.length, 'every slot starts at its own offset');
  assert.ok(slots.every((s) => s.delayMs >= 0 && s.delayMs < 1000));
  assert.equal(planJobs({ urls, spec, connections: 1, rate: null, durationS: 1, timeoutS: 10, workers: 8 }).length, 1);
});

test('bodies: posthog-node shapes, the mix interleaved, distinct ids mostly distinct with returning users', () => {
  const spec = { key: 'phc_k', mix: { flags: 80, capture: 20 }, flagKeys: ['a', 'b'], users: 100_000, batchSize: 3 };
  const reqs = buildRequests(spec, 1000, 9);
  const flags = reqs.filter((r) => r.path === '/flags?v=2');
  const batches = reqs.filter((r) => r.path === '/batch/');
  assert.equal(flags.length, 800);
  assert.equal(batches.length, 200);
  for (let i = 0; i + 10 <= reqs.length; i += 10) assert.equal(reqs.slice(i, i + 10).filter((r) => r.path === '/batch/').length, 2);
  const f = JSON.parse(flags[0]!.body);
  assert.deepEqual(Object.keys(f).sort(), ['distinct_id', 'flag_keys_to_evaluate', 'geoip_disable', 'group_properties', 'groups', 'person_properties', 'token']);
  assert.equal(f.token, 'phc_k');
  assert.deepEqual(f.flag_keys_to_evaluate, ['a', 'b']);
  assert.equal(typeof f.person_properties.email, 'string');
  const b = JSON.parse(batches[0]!.body);
  assert.equal(b.api_key, 'phc_k');
  assert.equal(b.batch.length, 3);
  for (const e of b.batch) {
    assert.equal(typeof e.event, 'string');
    assert.equal(typeof e.distinct_id, 'string');
    assert.equal(e.properties.$lib, 'posthog-node');
    assert.equal(e.uuid, undefined, 'the node assigns each event its uuid');
  }
  const ids = flags.map((r) => JSON.parse(r.body).distinct_id as string);
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  assert.ok(counts.size > 500, `${counts.size} distinct ids among 800`);
  assert.ok([...counts.values()].some((n) => n > 1), 'some ids repeat');
  assert.match(distinctId(3), /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(distinctId(4), 'user-4');
  const at = new Date(Date.UTC(2026, 0, 1));
  assert.deepEqual(buildRequests(spec, 50, 9, at), buildRequests(spec, 50, 9, at), 'a seed gives the same bodies');
  assert.notDeepEqual(buildRequests(spec, 50, 10, at), buildRequests(spec, 50, 9, at), 'each generator process has its own users');
});

/** A run's figures with the given p99, answers and target. */
function fig(p99: number, opts: { target?: number; rps?: number; non2xx?: number; timeouts?: number } = {}): RunResult {
  const target = opts.target ?? 100;
  return {
    target_rps: target, connections: 10, workers: 1, duration_s: 1, requests: 100, rps: opts.rps ?? target,
    latency_ms: { mean: p99 / 2, p50: p99 / 2, p90: p99, p99, max: p99 }, status: { 200: 100 },
    non_2xx: opts.non2xx ?? 0, errors: { connection: 0, timeouts: opts.timeouts ?? 0 },
  };
}

test('the ramp: rates rise by the factor; it stops at the first failing step and reports the last that passed', async () => {
  assert.deepEqual([0, 1, 2, 3].map((k) => stepRate(100, 1.5, k)), [100, 150, 225, 338]);
  assert.equal(judge(fig(50), 50), null);
  assert.equal(judge(fig(51), 50), 'slo');
  assert.equal(judge(fig(10, { non2xx: 1 }), 50), 'errors');
  assert.equal(judge(fig(90, { timeouts: 1 }), 50), 'errors', 'errors are named before the objective');
  assert.equal(judge(fig(10, { rps: 89 }), 50), 'rate');
  assert.equal(judge(fig(10, { rps: 90 }), 50), null);

  const p99ByRate = new Map([[100, 10], [200, 30], [400, 80], [800, 200]]);
  const seen: number[] = [];
  const r = await ramp({ start: 100, factor: 2, maxSteps: 10, sloP99Ms: 50 }, async (rate) => fig(p99ByRate.get(rate)!, { target: rate }), (s) => seen.push(s.step));
  assert.deepEqual(r.steps.map((s) => s.result.target_rps), [100, 200, 400]);
  assert.deepEqual(seen, [1, 2, 3]);
  assert.equal(r.stopped_by, 'slo');
  assert.deepEqual(r.capacity, { target_rps: 200, rps: 200, p99_ms: 30 });

  const all = await ramp({ start: 100, factor: 2, maxSteps: 2, sloP99Ms: 50 }, async (rate) => fig(1, { target: rate }));
  assert.equal(all.stopped_by, 'max_steps');
  assert.equal(all.capacity!.target_rps, 200);
  const none = await ramp({ start: 100, factor: 2, maxSteps: 5, sloP99Ms: 50 }, async (rate) => fig(1, { target: rate, non2xx: 3 }));
  assert.equal(none.capacity, null);
  assert.equal(none.steps.length, 1);
});

// ---- end to end against real nodes ----

/** `switchyard_node_http_requests_total` of `url` by route and status. */
async function requestCounts(url: string): Promise<Map<string, number>> {
  const text = (await get(`${url}/metrics`)).text;
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^switchyard_node_http_requests_total\{route="([a-z_]+)",status="(\d+)"\} (\d+)$/gm)) out.set(`${m[1]} ${m[2]}`, Number(m[3]));
  return out;
}
const sum = (counts: Map<string, number>[], pred: (key: string) => boolean) =>
  counts.reduce((n, m) => n + [...m].filter(([k]) => pred(k)).reduce((x, [, v]) => x + v, 0), 0);
/** Per-node request counts that grew between two snapshots. */
const diff = (a: Map<string, number>[], b: Map<string, number>[]) => b.map((m, i) => new Map([...m].map(([k, v]) => [k, v - (a[i]!.get(k) ?? 0)])));

/**
 * A TCP proxy to `target` that holds every chunk from the node back `delayMs` before passing it
 * on: every answer takes at least that long, whatever the machine's speed.
 */
async function slowProxy(target: string, delayMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    upstream.on('data', (chunk) => { setTimeout(() => { if (!client.destroyed) client.write(chunk); }, delayMs); });
    const end = () => { client.destroy(); upstream.destroy(); };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return { url, close: () => new Promise((resolve) => { for (const s of sockets) s.destroy(); server.close(() => resolve()); }) };
}

describe('against three real nodes on one control plane', () => {
  let c: SystemCluster;
  let nodes: string[] = [];

  before(async () => {
    c = await startCluster();
    const services = await Promise.all([0, 1, 2].map(() => c.startNode(c.tempDir())));
    nodes = services.map((s) => s.http.url);
    await createFlag(c, { key: 'load-a', filters: { groups: [{ properties: [], rollout_percentage: 50 }] } });
    await createFlag(c, { key: 'load-b', filters: { groups: [{ properties: [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }], rollout_percentage: 100 }] } });
    for (const url of nodes) {
      await waitReady(url);
      await waitFor(`${url} serving load-b`, async () => {
        const r = await fetch(`${url}/flags?v=2`, { method: 'POST', body: JSON.stringify({ token: c.t.projectKey, distinct_id: 'probe' }) }).catch(() => null);
        return r?.status === 200 && ((await r.json()) as { flags: Record<string, unknown> }).flags['load-b'] !== undefined;
      }, { timeoutMs: 30_000, intervalMs: 25 });
    }
  });

  after(async () => {
    await c?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('node dist/src/cli.js load, three nodes, flags and capture mixed: every node is loaded; the node counts and stored events match the report', async () => {
    const file = path.join(dir, 'mix.json');
    const before = await Promise.all(nodes.map(requestCounts));
    const r = await runCli(['load', '--url', nodes[0]!, '--url', nodes[1]!, '--url', nodes[2]!, '--key', c.t.projectKey, '--mix', 'flags=75,capture=25',
      '--flag-keys', 'load-a,load-b', '--batch-size', '4', '--connections', '6', '--workers', '2', '--duration', '0.5', '--report', file]);
    assert.equal(r.code, 0, r.stderr);
    const got = diff(before, await Promise.all(nodes.map(requestCounts)));
    const report = readReport(file);
    assert.equal(report.version, 1);
    assert.deepEqual(report.target, { urls: nodes, mix: { flags: 75, capture: 25 }, flag_keys: ['load-a', 'load-b'], users: 100_000, batch_size: 4 });
    assert.deepEqual(report.load, { connections: 6, rate: null, duration_s: 0.5, workers: 2, timeout_s: 10 });
    assert.equal(report.ramp, null);
    const res = report.result;
    assert.deepEqual(Object.keys(res.latency_ms).sort(), ['max', 'mean', 'p50', 'p90', 'p99']);
    assert.ok(res.latency_ms.p50 <= res.latency_ms.p90 && res.latency_ms.p90 <= res.latency_ms.p99 && res.latency_ms.p99 <= res.latency_ms.max);
    assert.equal(res.connections, 6);
    assert.equal(res.workers, 2);
    assert.ok(res.requests > 0);
    assert.deepEqual(Object.keys(res.status), ['200'], JSON.stringify(res.status));
    assert.equal(res.status['200'], res.requests);
    assert.equal(res.non_2xx, 0);
    assert.deepEqual(res.errors, { connection: 0, timeouts: 0 });
    assert.ok(res.rps > 0 && res.rps <= res.requests / 0.5, `${res.rps} req/s from ${res.requests} answers in at least 0.5 s`);
    assert.match(r.stdout, new RegExp(`${res.requests} requests in 0.5 s`));
    assert.match(r.stdout, /p99 \d+ ms/);

    // Round-robin: connection j to node j mod 3 (the second generator starts at connection 3, on
    // the first node), two connections per node; each node answered both kinds.
    for (const [i, m] of got.entries()) {
      assert.ok((m.get('flags 200') ?? 0) > 0, `node ${i} answered no /flags`);
      assert.ok((m.get('capture 200') ?? 0) > 0, `node ${i} answered no /batch/`);
    }
    // The nodes answered every request the report counts, and at most one more per connection
    // (an answer still on its way when the run ended).
    const answered = sum(got, (k) => k.startsWith('flags ') || k.startsWith('capture '));
    assert.ok(answered >= res.requests && answered <= res.requests + 6, `nodes ${answered}, report ${res.requests}`);
    assert.equal(sum(got, (k) => !k.endsWith(' 200') && (k.startsWith('flags ') || k.startsWith('capture '))), 0);
    // Every accepted batch is 4 new events (no uuid: the node assigns one), stored once.
    const batches = sum(got, (k) => k === 'capture 200');
    const flagsAnswered = sum(got, (k) => k === 'flags 200');
    assert.ok(batches * 2 < flagsAnswered && flagsAnswered < batches * 5, `flags ${flagsAnswered}, batches ${batches}: about 3 to 1`);
    await waitFor(`${batches * 4} events in Postgres`, async () => {
      const [row] = await c.t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE project_id = ${c.t.projectId}`;
      assert.ok(row!.n <= batches * 4, `${row!.n} events stored for ${batches} batches of 4`);
      return row!.n === batches * 4;
    }, { timeoutMs: 30_000, intervalMs: 100 });
  });

  test('a wrong key: every answer counted by its status (401), and the node saw them', async () => {
    const file = path.join(dir, 'wrong.json');
    const before = await requestCounts(nodes[0]!);
    const r = await load(['--url', nodes[0]!, '--key', 'phc_notAProjectKey', '--connections', '2', '--workers', '1', '--duration', '0.5', '--report', file]);
    assert.equal(r.code, 0, r.stderr);
    const res = readReport(file).result;
    assert.ok(res.requests > 0);
    assert.deepEqual(res.status, { 401: res.requests });
    assert.equal(res.non_2xx, res.requests);
    assert.match(r.stdout, new RegExp(`401: ${res.requests}\\s+\\(non-2xx: ${res.requests}\\)`));
    const seen = ((await requestCounts(nodes[0]!)).get('flags 401') ?? 0) - (before.get('flags 401') ?? 0);
    assert.ok(seen >= res.requests && seen <= res.requests + 2, `node ${seen}, report ${res.requests}`);
  });

  test('--ramp stops at the first step whose p99 exceeds the objective and reports no capacity', async () => {
    const proxy = await slowProxy(nodes[1]!, 150);
    try {
      const file = path.join(dir, 'ramp.json');
      const before = await requestCounts(nodes[1]!);
      const r = await load(['--url', proxy.url, '--key', c.t.projectKey, '--ramp', '--slo-p99', '50ms', '--rate', '8', '--ramp-factor', '2',
        '--connections', '4', '--workers', '1', '--duration', '1', '--report', file]);
      assert.equal(r.code, 0, r.stderr);
      const report = readReport(file);
      const rp = report.ramp!;
      assert.equal(rp.slo_p99_ms, 50);
      assert.equal(rp.factor, 2);
      assert.equal(rp.steps.length, 1);
      assert.equal(rp.stopped_by, 'slo');
      assert.equal(rp.capacity, null);
      const step = rp.steps[0]!;
      assert.deepEqual([step.step, step.passed, step.failure, step.result.target_rps, step.result.connections], [1, false, 'slo', 8, 4]);
      assert.ok(step.result.latency_ms.p99 >= 100, `p99 ${step.result.latency_ms.p99} ms behind a 150 ms proxy`);
      assert.ok(step.result.requests > 0 && step.result.status['200'] === step.result.requests);
      assert.deepEqual(report.result, step.result);
      assert.match(r.stdout, /capacity: none — the first step already failed \(slo\)/);
      const seen = ((await requestCounts(nodes[1]!)).get('flags 200') ?? 0) - (before.get('flags 200') ?? 0);
      assert.ok(seen >= step.result.requests, `node ${seen}, report ${step.result.requests}`);
    } finally {
      await proxy.close();
    }
  });
});
