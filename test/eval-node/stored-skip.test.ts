/**
 * The engine skips person and group reads only when they cannot change an answer
 * (src/evaluation/stored-use.ts): answers equal evaluation with everything stored, and the
 * reads are actually skipped when the request supplies every property the filters read.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FlagsEngine, type EngineStore } from '../../src/eval-node/pool/engine.js';
import { serializeResult } from '../../src/eval-node/pool/respond.js';
import type { FlagsJob } from '../../src/eval-node/pool/job.js';
import { NO_GEOIP } from '../../src/eval-node/geoip/index.js';
import { compileProject, evaluateFlags, type EvaluationRequest } from '../../src/evaluation/index.js';
import type { FeatureFlagEntity } from '../../src/contract/entities.js';
import { toCoreDefinitions } from '../../src/eval-node/pool/engine.js';

const flag = (id: number, key: string, filters: Record<string, unknown>, extra: Partial<FeatureFlagEntity> = {}): FeatureFlagEntity => ({
  id, team_id: 1, key, name: key, filters, deleted: false, active: true, ensure_experience_continuity: false, version: 1,
  evaluation_runtime: 'all', evaluation_tags: [], bucketing_identifier: null, has_encrypted_payloads: false, is_remote_configuration: false, ...extra,
});

const FLAGS = [
  flag(1, 'email', { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@x' }], rollout_percentage: 100 }] }),
  flag(2, 'paid', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 9 }], rollout_percentage: 100 }] }),
  flag(3, 'big-company', { aggregation_group_type_index: 0, groups: [{ properties: [{ key: 'size', type: 'group', group_type_index: 0, operator: 'gt', value: 10 }], rollout_percentage: 100 }] }),
  flag(4, 'listed-company', { aggregation_group_type_index: 0, groups: [{ properties: [{ key: '$group_key', type: 'group', group_type_index: 0, operator: 'exact', value: ['c1', 'c2'] }], rollout_percentage: 100 }] }),
  flag(5, 'half', { groups: [{ properties: [], rollout_percentage: 50 }] }),
  flag(6, 'chrome-first', { groups: [{ properties: [{ key: '$initial_browser', type: 'person', operator: 'exact', value: ['Chrome'] }], rollout_percentage: 100 }] }),
];
const COHORT = { id: 9, project_id: 1, name: 'paid', is_static: false, deleted: false, filters: { properties: { type: 'AND', values: [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }] } } };
const PERSONS: Record<string, Record<string, unknown>> = {
  p1: { email: 'a@x', plan: 'pro', $browser: 'Chrome' },
  p2: { email: 'b@y', plan: 'free', $initial_browser: 'Firefox' },
};
const GROUPS: Record<string, Record<string, unknown>> = { c1: { size: 20 }, c3: { size: 5 } };

function fakeStore(counts: { person: number; group: number }): EngineStore {
  const defs = { revision: 1, flags: FLAGS, cohorts: [COHORT], groupTypeMapping: { 0: 'company' } };
  return {
    definitions: () => defs,
    project: () => ({ id: 1, organization_id: 1, name: 'p', api_token: 'phc_x', timezone: 'UTC' }),
    personByDistinctId: (_p, id) => { counts.person++; return PERSONS[id] ? { id: `uuid-${id}`, project_id: 1, distinct_ids: [id], properties: PERSONS[id]! } : undefined; },
    group: (_p, _i, key) => { counts.group++; return GROUPS[key] ? { project_id: 1, group_type_index: 0, group_key: key, properties: GROUPS[key]! } : undefined; },
    hashKeyOverrides: () => ({}),
  };
}

test('skipping covered person and group reads never changes an answer', () => {
  const counts = { person: 0, group: 0 };
  const engine = new FlagsEngine(fakeStore(counts), NO_GEOIP, true);
  const compiled = compileProject(toCoreDefinitions({ revision: 1, flags: FLAGS, cohorts: [COHORT], groupTypeMapping: { 0: 'company' } } as never), { timezone: 'UTC' });
  const personChoices: (Record<string, unknown> | undefined)[] = [
    undefined, {}, { email: 'z@x' }, { email: 'z@x', plan: 'free' }, { email: 'z@q', plan: 'pro', $initial_browser: 'Chrome' }, { email: 'z@q', plan: 'pro', $initial_browser: 'Safari', extra: 1 },
  ];
  const groupChoices: (Record<string, Record<string, unknown>> | undefined)[] = [undefined, {}, { company: {} }, { company: { size: 3 } }, { company: { size: 30 } }];
  let n = 0;
  for (const distinct of ['p1', 'p2', 'nobody']) {
    for (const person_properties of personChoices) {
      for (const group_properties of groupChoices) {
        for (const groups of [undefined, { company: 'c1' }, { company: 'c3' }, { company: 'c9' }]) {
          const request: EvaluationRequest = { distinct_id: distinct, person_properties, group_properties, groups, runtime: 'all' };
          const job: FlagsJob = { projectId: 1, request, ip: null, shape: 'flags-v2', config: false, onlyOverrideProperties: false, disableFlags: false, requestId: `r${n++}` };
          const stored = {
            person_properties: PERSONS[distinct] ?? null,
            group_properties: groups && GROUPS[groups.company] ? { company: GROUPS[groups.company]! } : null,
          };
          const expected = serializeResult(evaluateFlags(compiled, request, stored, 1000), { shape: 'flags-v2', config: false, requestId: job.requestId, evaluatedAt: 1000, hasFeatureFlags: true });
          assert.equal(engine.run(job, 1000), expected, JSON.stringify(request));
        }
      }
    }
  }
});

test('reads are skipped exactly when the request covers what the filters read', () => {
  const counts = { person: 0, group: 0 };
  const engine = new FlagsEngine(fakeStore(counts), NO_GEOIP, true);
  const run = (request: EvaluationRequest): { person: number; group: number } => {
    counts.person = 0; counts.group = 0;
    engine.run({ projectId: 1, request, ip: null, shape: 'flags-v2', config: false, onlyOverrideProperties: false, disableFlags: false, requestId: 'r' }, 0);
    return { ...counts };
  };
  const cases: { name: string; request: EvaluationRequest; reads: { person: number; group: number } }[] = [
    { name: 'nothing supplied', request: { distinct_id: 'p1', groups: { company: 'c1' } }, reads: { person: 1, group: 1 } },
    { name: 'all person keys, group key only', request: { distinct_id: 'p1', person_properties: { email: 'a', plan: 'b', $initial_browser: 'c' }, groups: { company: 'c1' } }, reads: { person: 0, group: 1 } },
    { name: 'one person key missing', request: { distinct_id: 'p1', person_properties: { email: 'a', plan: 'b' } }, reads: { person: 1, group: 0 } },
    { name: 'group property supplied', request: { distinct_id: 'p1', person_properties: { email: 'a', plan: 'b', $initial_browser: 'c' }, groups: { company: 'c1' }, group_properties: { company: { size: 1 } } }, reads: { person: 0, group: 0 } },
  ];
  for (const c of cases) assert.deepEqual(run(c.request), c.reads, c.name);
});
