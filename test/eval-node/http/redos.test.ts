/**
 * Through a real node over HTTP: the regex patterns that froze a node (V8
 * backtracking) answer at once with RE2's results, inline and in the Piscina pool; and a pool
 * task that runs past SWITCHYARD_EVAL_TASK_TIMEOUT_MS answers 503 `evaluation_timeout` while the
 * pool replaces its worker and goes on answering. The slow task is real: a lookahead pattern
 * (run by V8 under its 50 ms limit) on a subject that exhausts that limit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { flag, PROJECT_TOKEN, request, startTestNode, worldChanges } from './fixture.js';
import { waitFor } from '../../support/wait.js';
import { MAX_MATCH_SUBJECT_CHARS } from '../../../src/limits.js';

/** The evaluation task limit of the timeout test, in ms. */
const TASK_LIMIT_MS = 400;

const emailRegex = (key: string, pattern: string) =>
  flag(key, { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'regex', value: pattern }], rollout_percentage: 100 }] });

const ATTACKS = [emailRegex('alt-word', '(\\w|\\d)+$'), emailRegex('alt-class', '([a-z]|[a-z0-9])+@'), emailRegex('stars', '\\d*\\d*\\d*\\d*x')];

async function evaluate(url: string, email: string): Promise<{ status: number; flags: Record<string, boolean>; body: any }> {
  const r = await request(`${url}/flags/?v=2`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: PROJECT_TOKEN, distinct_id: 'redos', person_properties: { email } }),
  });
  const body = r.json();
  const flags = Object.fromEntries(Object.entries((body.flags ?? {}) as Record<string, { enabled: boolean }>).map(([k, f]) => [k, f.enabled]));
  return { status: r.status, flags, body };
}

for (const evalThreads of [0, 1]) {
  test(`the ReDoS patterns answer with RE2's results on long subjects (${evalThreads ? 'pool' : 'inline'})`, async () => {
    const node = await startTestNode({ changes: worldChanges(ATTACKS), evalThreads });
    try {
      for (const [email, expected] of [
        ['1'.repeat(28) + '!', { 'alt-word': false, 'alt-class': false, stars: false }],
        ['1'.repeat(MAX_MATCH_SUBJECT_CHARS - 1) + '!', { 'alt-word': false, 'alt-class': false, stars: false }],
        ['a'.repeat(MAX_MATCH_SUBJECT_CHARS - 2) + '@x', { 'alt-word': true, 'alt-class': true, stars: true }],
        // Past the subject bound the value is not searched: no match (src/limits.ts).
        ['a'.repeat(MAX_MATCH_SUBJECT_CHARS - 1) + '@x', { 'alt-word': false, 'alt-class': false, stars: false }],
        ['abc', { 'alt-word': true, 'alt-class': false, stars: false }],
      ] as const) {
        const r = await evaluate(node.url, email);
        assert.equal(r.status, 200);
        assert.deepEqual(r.flags, expected, email.slice(0, 40));
      }
    } finally {
      await node.close();
    }
  });
}

test('a pool task past the evaluation time limit answers 503 evaluation_timeout; the pool goes on', async () => {
  // 20 groups whose lookahead each runs into the 50 ms backtracking limit: about 1 s of work,
  // far past the task limit, with the request budget lifted so only the task limit stops it. The
  // limit stays well above a fresh worker's first (cold) task on a loaded machine, so the worker
  // that replaces the stopped one can answer within it. Each pattern differs (an alternative that
  // never matches), as identical conditions are tested once per request.
  const groups = Array.from({ length: 20 }, (_, i) => ({ properties: [{ key: 'name', type: 'person', operator: 'regex', value: `^(?=(a+)+$)|^q${i}$` }], rollout_percentage: 100 }));
  const slow = flag('slow-lookahead', { groups });
  const node = await startTestNode({ changes: worldChanges([slow]), evalThreads: 1, config: { evalTaskTimeoutMs: TASK_LIMIT_MS, evalBudgetMs: 60_000 } });
  try {
    const r = await request(`${node.url}/flags/?v=2`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: PROJECT_TOKEN, distinct_id: 'slow', person_properties: { name: 'a'.repeat(40) + '!' } }),
    });
    assert.equal(r.status, 503, r.text);
    assert.deepEqual(r.json(), { type: 'server_error', code: 'evaluation_timeout', detail: `Flag evaluation took longer than ${TASK_LIMIT_MS} ms; retry shortly.`, attr: null });
    // The replacement worker needs a moment to start (its first tasks may still time out).
    const after = await waitFor('a 200 from the replaced worker', async () => {
      const a = await request(`${node.url}/flags/?v=2`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ api_key: PROJECT_TOKEN, distinct_id: 'fast', person_properties: { name: 'b' } }),
      });
      return a.status === 200 ? a : null;
    }, { timeoutMs: 15_000, intervalMs: 100 });
    assert.equal(after.json().flags['slow-lookahead'].enabled, false);
  } finally {
    await node.close();
  }
});
