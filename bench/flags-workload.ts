/**
 * The peer workload (research/peer-benchmarks.md "The workload") as management-API flag bodies,
 * node-store entities and /flags request bodies, shared by bench/flags.ts and its in-process checks: 50 flags — 20 boolean
 * rollouts at 10–90 % (seeded), 10 multivariate control/test-a/test-b 34/33/33, 10 email
 * `icontains "@example.com"` (PostHog has no "ends with" in posthog-node), 5 cohort
 * `plan in [pro, enterprise]`, 5 group flags (`company` group, `$group_key` in a list of 10) — for
 * `user-<n>`, n in 0..99,999: email `user<n>@example.com` (even n) or `@mail.test` (odd n),
 * plan `[free, pro, enterprise, starter][(n>>3)%4]`, company `company-<n%100>`.
 */
import type { StoreChange } from '../src/eval-node/store/lmdb.js';
import type { FeatureFlagEntity } from '../src/contract/entities.js';
import type { EvaluationRequest, ProjectDefinitions } from '../src/evaluation/index.js';
import { prng } from '../test/support/prng.js';

/** The seeded PRNG every bench draws users with (test/support/prng.ts). */
export { prng };

/** Users requests are drawn from. */

export const USERS = 100_000;
/** Project API key of the bench project. */
export const TOKEN = 'phc_benchProjectToken000000000001';


/** The group keys the `org-NN` flags match. */
export const COMPANIES = Array.from({ length: 10 }, (_, i) => `company-${i * 7}`);
/** Person `plan` of user n is PLANS[(n >> 3) % 4]. */
export const PLANS = ['free', 'pro', 'enterprise', 'starter'];

/** The cohort of the `plan-NN` flags: person `plan` in [pro, enterprise] (PostHog's cohort `filters`). */
export const PAID_COHORT_FILTERS = {
  properties: { type: 'OR', values: [{ type: 'AND', values: [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro', 'enterprise'] }] }] },
};

/**
 * The 50 workload flags as `POST /api/projects/:id/feature_flags/` bodies (key, name, filters,
 * active), the `plan-NN` flags naming cohort `cohortId` and the `org-NN` flags aggregating by group
 * type index `companyIndex` (the project's `company` group type).
 */
export function workloadFlagBodies(cohortId: number, companyIndex: number, seed = 42, count = 50): { key: string; name: string; filters: Record<string, unknown>; active: boolean }[] {
  return workloadFlags(seed, cohortId, companyIndex, count).map((f) => ({ key: f.key, name: f.name, filters: f.filters, active: true }));
}

/** The workload (`count` flags, see {@link workloadFlags}) as the local-evaluation feed: flags, group type `company` at index 0, cohort 7. */
export function workloadDefinitions(seed = 42, count = 50): ProjectDefinitions {
  return { flags: workloadFlags(seed, 7, 0, count) as unknown as ProjectDefinitions['flags'], group_type_mapping: { 0: 'company' }, cohorts: { 7: PAID_COHORT_FILTERS.properties } };
}

/**
 * The workload flags as node-store entities (project 1; cohort 7; `company` = group type index 0
 * unless given): `count` flags (a multiple of 50), the 50-flag mix repeated; copy c > 0 suffixes
 * its keys with `-c` (`rollout-00-1`, …) and draws its own rollout shares. The first 50 are the
 * 50-flag workload whatever the count.
 */
export function workloadFlags(seed = 42, cohortId = 7, companyIndex = 0, count = 50): FeatureFlagEntity[] {
  const rnd = prng(seed);
  const flags: FeatureFlagEntity[] = [];
  let id = 1;
  for (let copy = 0; copy * 50 < count; copy++) addMix(flags, rnd, () => id++, copy === 0 ? '' : `-${copy}`, cohortId, companyIndex);
  return flags;
}

/** Appends one 50-flag mix (keys suffixed with `suffix`) to `flags`. */
function addMix(flags: FeatureFlagEntity[], rnd: () => number, nextId: () => number, suffix: string, cohortId: number, companyIndex: number): void {
  const pad = (i: number) => `${String(i).padStart(2, '0')}${suffix}`;
  const add = (key: string, filters: Record<string, unknown>) => flags.push({
    id: nextId(), team_id: 1, key, name: key, filters, deleted: false, active: true, ensure_experience_continuity: false, version: 1,
    evaluation_runtime: 'all', evaluation_tags: [], bucketing_identifier: null, has_encrypted_payloads: false, is_remote_configuration: false,
  });
  for (let i = 0; i < 20; i++) add(`rollout-${pad(i)}`, { groups: [{ properties: [], rollout_percentage: 10 + Math.floor(rnd() * 81) }] });
  for (let i = 0; i < 10; i++) {
    add(`mv-${pad(i)}`, {
      groups: [{ properties: [], rollout_percentage: 100 }],
      multivariate: { variants: [{ key: 'control', rollout_percentage: 34 }, { key: 'test-a', rollout_percentage: 33 }, { key: 'test-b', rollout_percentage: 33 }] },
    });
  }
  for (let i = 0; i < 10; i++) {
    add(`email-${pad(i)}`, { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }], rollout_percentage: 100 }] });
  }
  for (let i = 0; i < 5; i++) add(`plan-${pad(i)}`, { groups: [{ properties: [{ key: 'id', type: 'cohort', value: cohortId }], rollout_percentage: 100 }] });
  for (let i = 0; i < 5; i++) {
    add(`org-${pad(i)}`, {
      aggregation_group_type_index: companyIndex,
      groups: [{ properties: [{ key: '$group_key', type: 'group', group_type_index: companyIndex, operator: 'exact', value: COMPANIES }], rollout_percentage: 100 }],
    });
  }
}

/** Store entities of the bench world: one organization, one project, the flags, cohort 7, group type `company`. */
export function workloadChanges(): StoreChange[] {
  const c = (kind: string, entityId: string, projectId: number | null, payload: unknown): StoreChange => ({ kind, entityId, projectId, op: 'upsert', payload });
  return [
    c('organization', '1', null, { id: 1, name: 'Bench', monthly_flag_requests_limit: null, quota_limited: false }),
    c('project', '1', 1, { id: 1, organization_id: 1, name: 'Bench', api_token: TOKEN, timezone: 'UTC' }),
    c('group_type_mapping', '1:0', 1, { project_id: 1, group_type: 'company', group_type_index: 0 }),
    c('cohort', '7', 1, { id: 7, project_id: 1, name: 'paid', is_static: false, deleted: false, filters: PAID_COHORT_FILTERS }),
    ...workloadFlags().map((f) => c('feature_flag', String(f.id), 1, f)),
  ];
}

/** The /flags body for user n (research/peer-benchmarks.md; sent as posthog-node sends it). */
export function workloadRequest(n: number): EvaluationRequest {
  return {
    distinct_id: `user-${n}`,
    groups: { company: `company-${n % 100}` },
    person_properties: { email: `user${n}${n % 2 === 0 ? '@example.com' : '@mail.test'}`, plan: PLANS[(n >> 3) % 4]!, company: `company-${n % 100}` },
    group_properties: {},
  };
}

/** The `POST /flags` body for user n: {@link workloadRequest} with the bench token, as posthog-node sends it. */
export function workloadBody(n: number): string {
  return JSON.stringify({ token: TOKEN, ...workloadRequest(n), geoip_disable: false });
}

