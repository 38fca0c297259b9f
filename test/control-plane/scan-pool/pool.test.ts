/**
 * The scan pool's own rules: matchRows' slicing and deadline (pure, with a stepped clock), and a
 * real ScanPool over the compiled worker (dist/workers/scan.js): the per-project cap (429),
 * background scans folded per key and run one at a time per key, the deadline (504) both
 * cooperative and by terminating a worker stuck in one long evaluation, and answers equal to the
 * evaluation core's after all of that.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { compilePlan, matchRows } from '../../../src/control-plane/scan-pool/plans.js';
import { ScanPool, type Scan } from '../../../src/control-plane/scan-pool/index.js';
import { isApiError } from '../../../src/errors.js';
import { waitFor } from '../../support/wait.js';
import type { ProjectDefinitions } from '../../../src/evaluation/index.js';

const DEFS: ProjectDefinitions = { flags: [], group_type_mapping: {}, cohorts: {} } as unknown as ProjectDefinitions;
const HOSTILE = { key: 'email', type: 'person', operator: 'regex', value: '^(?=(a+)+$)' };
const hostileEmail = `${'a'.repeat(30)}!`;

/** A flag-persons plan over `properties`. */
function personsPlan(properties: unknown[]) {
  return { kind: 'flag-persons' as const, definitions: { ...DEFS, flags: [{ id: 0, key: '$t', active: true, filters: { groups: [{ properties, rollout_percentage: 100 }] } }] } as never, timezone: 'UTC', flagKey: '$t', properties, nowMs: Date.now() };
}

/** A blast-radius person row (protocol.ts): no static cohorts, one typed value of the plan's one key. */
const row = (typed: string | null) => JSON.stringify([null, typed]);

test('matchRows: all rows, a slice that ends early, a deadline, a plan that failed', () => {
  const plan = compilePlan(personsPlan([{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }]));
  assert.equal(plan.prepared.problem, null);
  const rows = ['pro', 'free', 'pro', 'pro'].map((p) => row(`string:${p}`));
  const cases: { name: string; slice: number; deadline: number; expect: { matched: number[]; done: number; expired: boolean } }[] = [
    { name: 'everything in time', slice: 100, deadline: 1_000, expect: { matched: [0, 2, 3], done: 4, expired: false } },
    // The clock steps 1 ms per read: the slice start reads 0, rows read 1, 2, 3 …
    { name: 'slice ends after two rows', slice: 3, deadline: 1_000, expect: { matched: [0], done: 2, expired: false } },
    { name: 'deadline before the third row', slice: 100, deadline: 3, expect: { matched: [0], done: 2, expired: true } },
    { name: 'deadline already past', slice: 100, deadline: 0, expect: { matched: [], done: 0, expired: true } },
    { name: 'a slice always does one row', slice: 0, deadline: 1_000, expect: { matched: [0], done: 1, expired: false } },
  ];
  for (const c of cases) {
    let clock = 0;
    assert.deepEqual(matchRows(plan, rows, c.slice, c.deadline, () => clock++), c.expect, c.name);
  }
  const broken = compilePlan(personsPlan([{ key: 'plan', type: 'person', operator: 'no_such_operator', value: 'x' }]));
  assert.notEqual(broken.prepared.problem, null);
  assert.deepEqual(matchRows(broken, rows, 100, 1_000, () => 0), { matched: [], done: 4, expired: false });
});

const pool = new ScanPool({ threads: 1, projectConcurrency: 2, requestTimeoutMs: 60_000, backgroundTimeoutMs: 60_000 });
after(() => pool.close());

test('begin: past the project cap 429 throttled with Retry-After; other projects and freed slots are fine', () => {
  const a = pool.begin(1);
  const b = pool.begin(1);
  assert.throws(() => pool.begin(1), (e: unknown) => isApiError(e) && e.status === 429 && e.code === 'throttled' && Number(e.headers['retry-after']) === 60);
  const other = pool.begin(2);
  a.end();
  a.end(); // idempotent
  const c = pool.begin(1);
  for (const s of [b, c, other]) s.end();
  assert.equal(pool.runningFor(1), 0);
});

test('background: one at a time per key, later calls folded into the waiting one, slots shared with requests', async () => {
  const log: string[] = [];
  const gates: (() => void)[] = [];
  const work = (name: string) => (_scan: Scan) => new Promise<void>((resolve) => { log.push(`start ${name}`); gates.push(() => { log.push(`end ${name}`); resolve(); }); });
  const first = pool.background(7, 'cohort:1', work('1a'));
  const second = pool.background(7, 'cohort:1', work('1b')); // waits: 1a runs
  const folded = pool.background(7, 'cohort:1', work('1c')); // folded into 1b
  assert.equal(folded, second);
  const other = pool.background(7, 'cohort:2', work('2')); // second slot
  assert.deepEqual(log, ['start 1a', 'start 2']);
  assert.throws(() => pool.begin(7), (e: unknown) => isApiError(e) && e.status === 429);
  gates.shift()!(); // 1a ends → 1b starts
  await first;
  assert.deepEqual(log, ['start 1a', 'start 2', 'end 1a', 'start 1b']);
  gates.shift()!();
  gates.shift()!();
  await Promise.all([second, other]);
  assert.deepEqual(log, ['start 1a', 'start 2', 'end 1a', 'start 1b', 'end 2', 'end 1b']);
  assert.equal(pool.runningFor(7), 0);
});

/** Waits until `pool` (possibly with fresh workers still starting) matches quick work in time; returns its answer. */
function quickWork(pool: ScanPool): Promise<number[]> {
  return waitFor('a worker answers quick work', async () => {
    const s = pool.begin(3);
    try {
      const plan = s.plan(personsPlan([{ key: 'email', type: 'person', operator: 'icontains', value: 'example' }]));
      await s.prepare(plan);
      return await s.match(plan, [row('string:a@example.com'), row('string:b@mail.test'), row(null)]);
    } catch (e) {
      if (isApiError(e) && e.status === 504) return null; // a worker still starting on a busy machine
      throw e;
    } finally {
      s.end();
    }
  });
}

test('deadline: a match stops cooperatively (504), an evaluation stops at it with failed entries, and the pool still answers', async () => {
  const short = new ScanPool({ threads: 1, projectConcurrency: 2, requestTimeoutMs: 1_500, backgroundTimeoutMs: 1_500 });
  try {
    assert.deepEqual(await quickWork(short), [0]);
    const scan = short.begin(1);
    const plan = scan.plan(personsPlan([HOSTILE]));
    assert.deepEqual(await scan.prepare(plan), { problem: null, personKeys: ['email'] });
    const rows = Array.from({ length: 200 }, () => row(`string:${hostileEmail}`)); // ≥ 10 s of 50 ms searches
    const started = Date.now();
    await assert.rejects(scan.match(plan, rows), (e: unknown) => isApiError(e) && e.status === 504);
    scan.end();
    console.log(`# cooperative stop after ${Date.now() - started} ms of a 1,500 ms deadline (shared machine, noisy)`);

    // 100 hostile flags (≥ 5 s of searches): the evaluation stops at the scan's deadline, and the
    // flags it did not reach answer as failed entries.
    const stuck = short.begin(1);
    // Each flag's pattern differs (an alternative that never matches): identical conditions are tested once per request.
    const flags = Array.from({ length: 100 }, (_, i) => ({ id: i + 1, key: `h${i}`, active: true, filters: { groups: [{ properties: [{ ...HOSTILE, value: `${HOSTILE.value}|^q${i}$` }], rollout_percentage: 100 }] } }));
    const evaluate = stuck.plan({ kind: 'evaluate', definitions: { ...DEFS, flags } as never, timezone: 'UTC' });
    const evaluated = Date.now();
    try {
      const answer = await stuck.evaluate(evaluate, { distinct_id: 'x' }, { person_properties: { email: hostileEmail } });
      assert.equal(answer.errorsWhileComputingFlags, true);
      const failed = Object.values(answer.flags as Record<string, { reason: { code: string } }>).filter((f) => f.reason.code === 'timeout:evaluation_budget');
      assert.ok(failed.length > 0 && failed.length < 100, `${failed.length} flags past the deadline`);
    } catch (e) {
      assert.ok(isApiError(e) && e.status === 504, String(e)); // the deadline passed before the task reached a worker
    }
    console.log(`# 100 hostile flags answered ${Date.now() - evaluated} ms after the scan began (deadline 1,500 ms)`);
    stuck.end();

    // Piscina replaced the worker; once it has started, quick work answers in time again.
    assert.deepEqual(await quickWork(short), [0]);
  } finally {
    await short.close();
  }
});
