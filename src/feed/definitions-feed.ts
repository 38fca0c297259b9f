/**
 * The local-evaluation feed body of `GET /flags/definitions` (research/posthog-flag-evaluation.md
 * §6.1; research/posthog-management-api.md §2.9; Django `posthog/models/feature_flag/local_evaluation.py`):
 *
 * `{flags: [MinimalFlag…], group_type_mapping, cohorts}` where
 * - `flags` are the project's non-deleted, non-remote-config flags (active and inactive), as
 *   MinimalFlag `{id, team_id, name, key, filters, deleted, active, ensure_experience_continuity,
 *   has_encrypted_payloads, version, evaluation_runtime, bucketing_identifier, evaluation_tags}`;
 * - flag-dependency filters (`type: "flag"`, `key` = dependency flag id) are rewritten to the
 *   dependency's key, with `dependency_chain`: the keys to evaluate first, in order, ending with the
 *   dependency; `[]` for a self, circular or missing dependency (research §3.5);
 * - with `send_cohorts`, `cohorts` holds every referenced (and transitively referenced) non-deleted,
 *   non-static cohort as `{type, values}`; static cohorts are left out, so posthog-node asks the
 *   server for flags that use them. Without `send_cohorts`, `cohorts` is `{}` and cohort filters stay
 *   as they are (PostHog's legacy inlining of single simple cohorts is not implemented: posthog-node
 *   then falls back to /flags for those flags, which gives the same answers).
 *
 * Shared by the node's `GET /flags/definitions` and the control plane's F15 `local_evaluation`, so
 * both serve the same body. The evaluation core stays free of this wire concern. Bodies are built once per
 * (project, definitions revision, send_cohorts) and cached as strings.
 */
import type { CohortEntity, FeatureFlagEntity } from '../contract/entities.js';

/**
 * What the feed is built from: a project's live flags and cohorts and its group types, as the
 * change log carries them. The node store's `definitions()` and the control plane's tables both
 * provide it. `revision` identifies the state (cache key; part of the ETag).
 */
export interface FeedInput {
  revision: number;
  flags: readonly FeatureFlagEntity[];
  cohorts: readonly CohortEntity[];
  groupTypeMapping: Record<string, string>;
  /** The project's property_matching_version; sent only when 2 (absent means legacy to every SDK). */
  propertyMatchingVersion?: number;
}

/** MinimalFlag as served (research management-api §2.9). */
export interface MinimalFlag {
  id: number;
  team_id: number;
  name: string;
  key: string;
  filters: Record<string, unknown>;
  deleted: boolean;
  active: boolean;
  ensure_experience_continuity: boolean;
  has_encrypted_payloads: boolean;
  version: number;
  evaluation_runtime: string;
  bucketing_identifier: string | null;
  evaluation_tags: string[];
}

/** The feed body. */
export interface DefinitionsFeed {
  flags: MinimalFlag[];
  group_type_mapping: Record<string, string>;
  cohorts: Record<string, unknown>;
  /** 2 when the project matches properties with explicit boolean equality; absent otherwise. */
  property_matching_version?: number;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every property filter of every condition set (groups, super_groups, holdout_groups) of `filters`. */
function conditionFilters(filters: Record<string, unknown>): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const field of ['groups', 'super_groups', 'holdout_groups']) {
    const sets = filters[field];
    if (!Array.isArray(sets)) continue;
    for (const set of sets) {
      if (!isObj(set) || !Array.isArray(set.properties)) continue;
      for (const p of set.properties) if (isObj(p)) out.push(p);
    }
  }
  return out;
}

function flagDependencyIds(flag: FeatureFlagEntity): number[] {
  const out: number[] = [];
  for (const p of conditionFilters(flag.filters)) {
    if (p.type !== 'flag') continue;
    const id = Number(p.key);
    if (Number.isInteger(id)) out.push(id);
  }
  return out;
}

/**
 * The dependency chain of dependency `depId` as seen from the flag `ownerId`: keys in evaluation
 * order ending with the dependency's key; `[]` when any member is missing, or the walk meets a
 * cycle or `ownerId` itself.
 */
export function dependencyChain(byId: ReadonlyMap<number, FeatureFlagEntity>, ownerId: number, depId: number): string[] {
  const chain: string[] = [];
  const done = new Set<number>();
  const visiting = new Set<number>([ownerId]);
  const visit = (id: number): boolean => {
    if (done.has(id)) return true;
    if (visiting.has(id)) return false;
    const f = byId.get(id);
    if (f === undefined) return false;
    visiting.add(id);
    for (const d of flagDependencyIds(f)) if (!visit(d)) return false;
    visiting.delete(id);
    done.add(id);
    chain.push(f.key);
    return true;
  };
  return visit(depId) ? chain : [];
}

/** `flag.filters` with flag-dependency filters rewritten (a copy only when there are any). */
function rewriteFilters(flag: FeatureFlagEntity, byId: ReadonlyMap<number, FeatureFlagEntity>): Record<string, unknown> {
  if (!conditionFilters(flag.filters).some((p) => p.type === 'flag')) return flag.filters;
  const filters = structuredClone(flag.filters);
  for (const p of conditionFilters(filters)) {
    if (p.type !== 'flag') continue;
    const id = Number(p.key);
    const dep = Number.isInteger(id) ? byId.get(id) : undefined;
    if (dep !== undefined) p.key = dep.key;
    p.dependency_chain = dep === undefined ? [] : dependencyChain(byId, flag.id, id);
  }
  return filters;
}

function cohortIdsIn(values: unknown, out: number[]): void {
  if (Array.isArray(values)) { for (const v of values) cohortIdsIn(v, out); return; }
  if (!isObj(values)) return;
  if (values.type === 'cohort') {
    const id = Number(values.value);
    if (Number.isInteger(id)) out.push(id);
    return;
  }
  if (Array.isArray(values.values)) cohortIdsIn(values.values, out);
}

/** A cohort's `{type, values}` group from its stored filters (`filters.properties`), or null. */
function cohortGroup(c: CohortEntity): unknown {
  const props = c.filters.properties;
  return isObj(props) ? props : null;
}

/** Builds the feed body for `defs`. */
export function buildDefinitionsFeed(defs: FeedInput, sendCohorts: boolean): DefinitionsFeed {
  const byId = new Map<number, FeatureFlagEntity>();
  for (const f of defs.flags) if (!f.deleted) byId.set(f.id, f);
  const flags: MinimalFlag[] = [];
  const referenced: number[] = [];
  for (const f of defs.flags) {
    if (f.deleted || f.is_remote_configuration) continue;
    flags.push({
      id: f.id,
      team_id: f.team_id,
      name: f.name,
      key: f.key,
      filters: rewriteFilters(f, byId),
      deleted: f.deleted,
      active: f.active,
      ensure_experience_continuity: f.ensure_experience_continuity,
      has_encrypted_payloads: f.has_encrypted_payloads,
      version: f.version,
      evaluation_runtime: f.evaluation_runtime,
      bucketing_identifier: f.bucketing_identifier,
      evaluation_tags: f.evaluation_tags,
    });
    if (sendCohorts) for (const p of conditionFilters(f.filters)) if (p.type === 'cohort') cohortIdsIn(p, referenced);
  }
  const cohorts: Record<string, unknown> = {};
  if (sendCohorts) {
    const byCohortId = new Map(defs.cohorts.map((c) => [c.id, c]));
    const seen = new Set<number>();
    while (referenced.length > 0) {
      const id = referenced.pop()!;
      if (seen.has(id)) continue;
      seen.add(id);
      const c = byCohortId.get(id);
      if (c === undefined || c.deleted || c.is_static) continue;
      const group = cohortGroup(c);
      if (group === null) continue;
      cohorts[String(id)] = group;
      cohortIdsIn(group, referenced);
    }
  }
  const feed: DefinitionsFeed = { flags, group_type_mapping: defs.groupTypeMapping, cohorts };
  if (defs.propertyMatchingVersion === 2) feed.property_matching_version = 2;
  return feed;
}

/** Serialized feed bodies by project, valid for one definitions revision each. */
export class DefinitionsFeedCache {
  private readonly entries = new Map<string, { revision: number; matching: number | undefined; body: string }>();

  /** The JSON body of the feed for `projectId` at `defs.revision` and matching version. */
  body(projectId: number, defs: FeedInput, sendCohorts: boolean): string {
    const key = `${projectId}:${sendCohorts ? 1 : 0}`;
    const hit = this.entries.get(key);
    if (hit !== undefined && hit.revision === defs.revision && hit.matching === defs.propertyMatchingVersion) return hit.body;
    const body = JSON.stringify(buildDefinitionsFeed(defs, sendCohorts));
    this.entries.set(key, { revision: defs.revision, matching: defs.propertyMatchingVersion, body });
    return body;
  }
}
