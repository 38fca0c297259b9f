/**
 * The node's evaluation budget (src/eval-node/pool/budget-clock.ts): only projects that filter
 * with `regex` get one, and its clock reads the thread's CPU time once the wall deadline passes,
 * so a request whose thread was not running is not charged for that time. The thread is made
 * to wait (Atomics.wait: off the CPU) and to spin (on the CPU); only the second spends the budget.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileProject } from '../../../src/evaluation/index.js';
import { evaluationBudget } from '../../../src/eval-node/pool/budget-clock.js';
import { loadLibc } from '../../../src/eval-node/memory/libc.js';
import { flag, project } from '../../evaluation/support.js';

const prop = (operator: string, value: string) => ({ groups: [{ properties: [{ key: 'email', type: 'person', operator, value }], rollout_percentage: 100 }] });

test('only a project whose flags or cohorts use regex is evaluated under a budget', () => {
  assert.equal(evaluationBudget(compileProject(project([flag('plain', prop('icontains', '@x.com'))])), 50), null);
  assert.notEqual(evaluationBudget(compileProject(project([flag('re', prop('regex', '@x\\.com$'))])), 50), null);
  assert.notEqual(evaluationBudget(compileProject(project([flag('nre', prop('not_regex', 'x'))])), 50), null);
  const viaCohort = project([flag('c', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 7 }], rollout_percentage: 100 }] })], {
    cohorts: { 7: { properties: { type: 'OR', values: [{ key: 'email', type: 'person', operator: 'regex', value: 'a' }] } } },
  } as never);
  assert.equal(compileProject(viaCohort).usesRegex, true);
});

test('time the thread spends off the CPU past the wall deadline does not spend the budget; time on it does', { skip: loadLibc() === null ? 'no thread CPU clock here' : false }, () => {
  const budget = evaluationBudget(compileProject(project([flag('re', prop('regex', 'a'))])), 30)!;
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 80); // 80 ms asleep: past the wall deadline
  assert.ok(budget.now() < budget.deadline, 'asleep is not spent');
  const libc = loadLibc()!;
  const cpuFrom = libc.threadCpuMs();
  while (libc.threadCpuMs() - cpuFrom < 40) { /* 40 ms on the CPU, however long that takes on a busy machine */ }
  assert.ok(budget.now() >= budget.deadline, 'running is spent');
});
