/**
 * Piscina worker of the control plane's scan pool (src/control-plane/scan-pool): compiles each
 * plan once (kept for the last {@link PLAN_CACHE} plans, decoded from the shared JSON on a miss)
 * and runs prepare, match and evaluate tasks against it with the evaluation core. Matching time-
 * slices itself and stops at the scan's deadline (plans.ts `matchRows`).
 *
 * Scans are background work next to the event loop serving the API: on Linux the worker lowers
 * its own thread's scheduling priority to nice {@link SCAN_NICE}, so when cores are scarce the
 * kernel runs the event loop first (a thread's nice applies to that thread only, `setpriority`
 * on its thread id). Elsewhere the priority is left as it is.
 */
import { readlinkSync } from 'node:fs';
import os from 'node:os';
import { compilePlan, evaluateOne, matchRows, type CompiledPlan } from '../src/control-plane/scan-pool/plans.js';
import type { MatchAnswer, PlanRef, PrepareAnswer, ScanPlan, ScanTask } from '../src/control-plane/scan-pool/protocol.js';
import type { EvaluationResult } from '../src/evaluation/index.js';

/** Compiled plans kept per worker: a scan's chunks reuse its plan; a few scans run at once. */
const PLAN_CACHE = 8;
/** Nice value of a scan thread (0 normal, 19 lowest); raising it needs no privilege. */
const SCAN_NICE = 10;

try {
  // `/proc/thread-self` → `<pid>/task/<tid>` of the calling thread.
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(tid) && tid > 0) os.setPriority(tid, SCAN_NICE);
} catch {
  // Not Linux, or no /proc: run at the process's priority.
}

const plans = new Map<number, CompiledPlan>();
const decoder = new TextDecoder();

function planOf(ref: PlanRef): CompiledPlan {
  let plan = plans.get(ref.id);
  if (plan === undefined) {
    // TextDecoder refuses shared memory: copy the bytes out first.
    const bytes = new Uint8Array(ref.length);
    bytes.set(new Uint8Array(ref.json, 0, ref.length));
    plan = compilePlan(JSON.parse(decoder.decode(bytes)) as ScanPlan);
    if (plans.size >= PLAN_CACHE) plans.delete(plans.keys().next().value!);
    plans.set(ref.id, plan);
  }
  return plan;
}

/** Runs one task. */
export default function scan(task: ScanTask): PrepareAnswer | MatchAnswer | EvaluationResult {
  const plan = planOf(task.plan);
  switch (task.op) {
    case 'prepare': return plan.prepared;
    case 'match': return matchRows(plan, task.rows, task.sliceMs, task.deadlineMs, Date.now);
    case 'evaluate': return evaluateOne(plan, task.body, task.stored, Date.now(), { now: Date.now, deadline: task.deadlineMs });
  }
}
