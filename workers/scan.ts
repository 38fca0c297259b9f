/**
 * Piscina worker of the control plane's scan pool (src/control-plane/scan-pool): compiles each
 * plan once (kept for the last {@link PLAN_CACHE} plans, decoded from the shared JSON on a miss)
 * and runs prepare, match and evaluate tasks against it with the evaluation core. Matching time-
 * slices itself and stops at the scan's deadline (plans.ts `matchRows`).
 */
import { compilePlan, evaluateOne, matchRows, type CompiledPlan } from '../src/control-plane/scan-pool/plans.js';
import type { MatchAnswer, PlanRef, PrepareAnswer, ScanPlan, ScanTask } from '../src/control-plane/scan-pool/protocol.js';
import type { EvaluationResult } from '../src/evaluation/index.js';
import type { JsonObject } from '../src/json-shapes.js';

/** Compiled plans kept per worker: a scan's chunks reuse its plan; a few scans run at once. */
const PLAN_CACHE = 8;
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
    case 'match': return matchRows(plan, task.rows as JsonObject[], task.sliceMs, task.deadlineMs, Date.now);
    case 'evaluate': return evaluateOne(plan, task.body, task.stored, Date.now());
  }
}
