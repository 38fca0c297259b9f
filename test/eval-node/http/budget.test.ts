/**
 * The per-request evaluation budget through a real node over HTTP (SWITCHYARD_EVAL_BUDGET_MS,
 * src/evaluation/budget.ts), inline on the IO thread and in the Piscina pool: project A's flag
 * with {@link HOSTILE_SETS} lookahead condition sets (each a backtracking search on a hostile
 * value, stopped at its own 50 ms limit) answers as a failed `timeout:evaluation_budget` entry
 * with `errorsWhileComputingFlags: true` instead of running 10 × 50 ms (ten times the 50 ms
 * budget), its other flags keep their answers, and project B's /flags on the same
 * node, sent at the same time, answers correctly. Timings are printed, not asserted (shared,
 * noisy machine).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { flag, OTHER_ORG_TOKEN, PROJECT_TOKEN, request, startTestNode, worldChanges } from './fixture.js';

/**
 * Condition sets of the hostile flag: unbudgeted, the request runs HOSTILE_SETS × 50 ms, ten times
 * the default 50 ms budget (more sets prove nothing more, and the test with a budget large
 * enough for all of them spends every one of those 50 ms).
 */
const HOSTILE_SETS = 10;

const hostileGroups = Array.from({ length: HOSTILE_SETS }, (_, i) => ({
  properties: [{ key: 'email', type: 'person', operator: 'regex', value: `^(?=(a+)+$)x${i}` }], rollout_percentage: 100,
}));
const all = { groups: [{ properties: [], rollout_percentage: 100 }] };
const FLAGS = [
  flag('a-before', all),
  flag('a-hostile', { groups: hostileGroups }),
  flag('a-after', all),
  flag('b-on', all, { team_id: 3 }),
  flag('b-email', { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }], rollout_percentage: 100 }] }, { team_id: 3 }),
  flag('b-regex', { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'regex', value: '^[a-z]+@example\\.com$' }], rollout_percentage: 100 }] }, { team_id: 3 }),
];

async function flags(url: string, token: string, email: string | null, v = 2): Promise<{ ms: number; status: number; body: any }> {
  const started = performance.now();
  const r = await request(`${url}/flags/?v=${v}`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: token, distinct_id: 'budget-user', person_properties: email === null ? {} : { email } }),
  });
  return { ms: performance.now() - started, status: r.status, body: r.json() };
}

for (const evalThreads of [0, 1]) {
  const mode = evalThreads ? 'pool' : 'inline';
  test(`a hostile project's /flags stops at the budget with errorsWhileComputingFlags; another project answers correctly (${mode})`, async () => {
    // A generous pool task limit and no per-project share: this test is about the budget, not the
    // task limit (redos.test.ts) or a project's share of the thread (eval-share.test.ts).
    const node = await startTestNode({ changes: worldChanges(FLAGS, []), evalThreads, config: { evalTaskTimeoutMs: 30_000, projectEvalSharePercent: 100 } });
    try {
      assert.equal(node.config.evalBudgetMs, 50, 'the default budget');
      const hostile = 'a'.repeat(5_000) + '!';
      // Warm-up: workers started and projects compiled before anything is timed.
      await flags(node.url, OTHER_ORG_TOKEN, 'jane@example.com');
      const [a, b] = await Promise.all([
        flags(node.url, PROJECT_TOKEN, hostile),
        flags(node.url, OTHER_ORG_TOKEN, 'jane@example.com'),
      ]);
      console.log(`# ${mode}: project A (${HOSTILE_SETS} lookahead sets, hostile value) ${a.ms.toFixed(1)} ms; project B alongside ${b.ms.toFixed(1)} ms ` +
        `(unbudgeted, A would run ${HOSTILE_SETS} × 50 ms = ${HOSTILE_SETS * 50} ms)`);

      assert.equal(a.status, 200);
      assert.equal(a.body.errorsWhileComputingFlags, true);
      assert.equal(a.body.flags['a-before'].enabled, true);
      assert.equal(a.body.flags['a-hostile'].failed, true);
      assert.equal(a.body.flags['a-hostile'].enabled, false);
      assert.equal(a.body.flags['a-hostile'].reason.code, 'timeout:evaluation_budget');
      assert.equal(a.body.flags['a-after'].failed, true, 'flags after the budget ran out are failed too');

      assert.equal(b.status, 200);
      assert.equal(b.body.errorsWhileComputingFlags, false);
      assert.deepEqual(
        Object.fromEntries(Object.entries(b.body.flags as Record<string, { enabled: boolean }>).map(([k, f]) => [k, f.enabled])),
        { 'b-on': true, 'b-email': true, 'b-regex': true },
      );

      // v1: a failed flag reads false (Rust's legacy response maps every entry, failed ones included).
      const v1 = await flags(node.url, PROJECT_TOKEN, hostile, 1);
      assert.equal(v1.body.errorsWhileComputingFlags, true);
      assert.equal(v1.body.featureFlags['a-hostile'], false);
      assert.equal(v1.body.featureFlags['a-before'], true);

      // Without the property the hostile sets search nothing: every flag answered, no error.
      const calm = await flags(node.url, PROJECT_TOKEN, null);
      assert.equal(calm.body.errorsWhileComputingFlags, false);
      assert.deepEqual([calm.body.flags['a-before'].enabled, calm.body.flags['a-hostile'].enabled, calm.body.flags['a-after'].enabled], [true, false, true]);
    } finally {
      await node.close();
    }
  });
}

test('SWITCHYARD_EVAL_BUDGET_MS is the budget: a larger one lets the same request finish without errors', async () => {
  // Each of the HOSTILE_SETS searches stops at its own 50 ms limit (Rust's limit error: false), so with
  // room for all of them the flag answers false without failing.
  const node = await startTestNode({ changes: worldChanges(FLAGS, []), config: { evalBudgetMs: 60_000, projectEvalSharePercent: 100 } });
  try {
    const started = performance.now();
    const a = await flags(node.url, PROJECT_TOKEN, 'a'.repeat(5_000) + '!');
    console.log(`# inline, budget 60 s: project A ${(performance.now() - started).toFixed(0)} ms (${HOSTILE_SETS} searches × their 50 ms limit)`);
    assert.equal(a.body.errorsWhileComputingFlags, false);
    assert.equal(a.body.flags['a-hostile'].enabled, false);
    assert.equal(a.body.flags['a-hostile'].failed, undefined);
    assert.equal(a.body.flags['a-after'].enabled, true);
  } finally {
    await node.close();
  }
});
