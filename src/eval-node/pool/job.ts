/**
 * What crosses from the IO thread to an evaluator (inline or a pool worker) for one /flags
 * request, and what comes back: a plain, structured-clone-friendly object in, the serialized
 * response body (a string) out. Parsing, project lookup and quota run on the IO thread before a
 * job exists; the named stages filter → properties → evaluate → serialize run in the evaluator
 * (src/eval-node/pool/engine.ts), so only the request and the answer cross threads.
 */
import type { EvaluationRequest } from '../../evaluation/index.js';

/**
 * Response shape of the answer (research/posthog-flag-evaluation.md §5.2–§5.3): `/flags?v=2` and
 * `/decide?v>=4` → flags-v2; `/flags` without v (or v=1) and `/decide?v=3` → flags-v1;
 * `/decide?v=2` → decide-v2 (enabled keys → values); `/decide?v=1` or no v → decide-v1 (enabled keys).
 */
export type ResponseShape = 'flags-v2' | 'flags-v1' | 'decide-v2' | 'decide-v1';

/** One /flags request ready for evaluation. */
export interface FlagsJob {
  projectId: number;
  request: EvaluationRequest;
  /** Address whose GeoIP properties fill the person properties; null = no GeoIP (geoip_disable or no public address). */
  ip: string | null;
  shape: ResponseShape;
  /** `config=true` (and every /decide): add the remote-config fields. */
  config: boolean;
  /** Query `only_use_override_person_properties=true`: ignore the person's stored properties (research §3.1). */
  onlyOverrideProperties: boolean;
  /** Body `disable_flags: true`: answer `flags: {}` without evaluating (config still returned). */
  disableFlags: boolean;
  requestId: string;
  /**
   * Evaluation time this request may spend across all its flags, in milliseconds, counted from
   * the start of its evaluation (not its wait in a queue); past it the remaining flags are failed
   * entries (src/evaluation/budget.ts). Absent: `DEFAULT_EVAL_BUDGET_MS` (src/limits.ts).
   */
  budgetMs?: number;
}

/**
 * The evaluator's answer: the JSON body, or null when evaluation failed unexpectedly (the IO
 * thread answers 500). Pool workers answer strings; the inline evaluator may answer UTF-8 bytes in
 * a buffer it reuses (valid only until its next evaluation: send it before evaluating anything else).
 */
export type JobAnswer = string | Uint8Array | null;
