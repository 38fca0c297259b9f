/**
 * Experience continuity, the part the store needs before evaluation (research/posthog-flag-evaluation.md
 * §2.6; Rust `flags/flag_matching.rs` `process_hash_key_override*`, experience-continuity.md):
 * hash-key overrides need to be read (and, with a `$anon_distinct_id`, written) only when some
 * flag the request answers has `ensure_experience_continuity`, buckets persons by distinct_id,
 * and actually hashes: a person condition below 100 % or hash-split variants. Flags at 100 %
 * without hash-split variants give the same answer for any identifier, so they need no lookup.
 */
import type { CompiledFlag, CompiledProject } from './compiled.js';
import { selectCandidates } from './evaluate.js';
import type { EvaluationRequest } from './types.js';

function hashesPersons(flag: CompiledFlag): boolean {
  if (!flag.continuity || flag.bucketByDevice || flag.failure !== null) return false;
  for (const c of flag.conditions) {
    if (c.aggregation !== null) continue;
    if (!c.fullRollout) return true;
    if (c.variantOverride === null && flag.variants !== null && flag.variants.constant === undefined) return true;
  }
  return false;
}

/**
 * Keys of the flags answered for `req` whose bucketing needs a hash-key override lookup, in
 * evaluation order. Empty → the node can skip the override read/write entirely.
 */
export function flagsNeedingHashKeyOverrides(project: CompiledProject, req: EvaluationRequest): string[] {
  const selected = selectCandidates(project, req);
  const out: string[] = [];
  for (const f of project.flags) if (selected[f.slot] && hashesPersons(f)) out.push(f.key);
  return out;
}
