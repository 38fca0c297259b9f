/**
 * Parity with posthog-node's local evaluation (DESIGN.md "Evaluation core": posthog-node's local
 * evaluation of our feed must agree with our /flags on every case it treats as conclusive).
 *
 * Seeded random projects restricted to what posthog-node and Rust define the same way (research
 * §8): non-empty distinct ids, person properties that are always present with string or numeric
 * values (no "true"/"false", no nulls), rollouts, multivariate variants and overrides, payloads,
 * group flags, cohorts and flag dependencies. posthog-node is an independent implementation of
 * the hash and the matching rules, so no expected value here comes from this code base.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PostHog } from 'posthog-node';
import { compileProject, evaluateFlags, type FlagDefinition, type ProjectDefinitions } from '../../src/evaluation/index.js';
import { prng } from '../support/prng.js';


const PLANS = ['free', 'pro', 'Enterprise', 'starter'];
const COUNTRIES = ['US', 'FR', 'de', 'JP'];

function randomProject(rnd: () => number): ProjectDefinitions {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const propertyFilter = () => pick([
    () => ({ key: 'plan', type: 'person', operator: 'exact', value: pick([pick(PLANS), [pick(PLANS), pick(PLANS)]]) }),
    () => ({ key: 'country', type: 'person', operator: 'is_not', value: pick(COUNTRIES) }),
    () => ({ key: 'email', type: 'person', operator: 'icontains', value: pick(['@example.com', 'USER1', '.test']) }),
    () => ({ key: 'age', type: 'person', operator: pick(['gt', 'lt', 'gte', 'lte']), value: Math.floor(rnd() * 80) }),
    () => ({ key: 'plan', type: 'person', operator: 'is_set', value: 'is_set' }),
    () => ({ key: 'id', type: 'cohort', value: 50 }),
  ])();
  const n = 2 + Math.floor(rnd() * 8);
  const flags: FlagDefinition[] = [];
  for (let i = 0; i < n; i++) {
    const group = rnd() < 0.2;
    const variants = rnd() < 0.4
      ? pick([[50, 50], [34, 33, 33], [10, 20, 30, 40], [25, 25]]).map((p, j) => ({ key: `v${j}`, rollout_percentage: p }))
      : null;
    const groups = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => ({
      properties: group
        ? (rnd() < 0.5 ? [] : [{ key: 'tier', type: 'group', group_type_index: 0, operator: 'exact', value: pick(['gold', 'silver']) }])
        : Array.from({ length: Math.floor(rnd() * 3) }, propertyFilter),
      rollout_percentage: pick([null, 0, 5, 33.3, 50, 72.5, 99, 100]),
      ...(variants && rnd() < 0.3 ? { variant: pick(['v0', 'v1', 'nope']) } : {}),
    }));
    if (!group && i > 0 && rnd() < 0.25) {
      const target = flags[Math.floor(rnd() * i)]!;
      if (target.filters.aggregation_group_type_index === undefined) {
        groups[0]!.properties = [...groups[0]!.properties,
          { key: target.key, type: 'flag', operator: 'flag_evaluates_to', value: pick([true, false]), dependency_chain: [target.key] } as never];
      }
    }
    const payloads: Record<string, string> = {};
    if (rnd() < 0.5) payloads.true = JSON.stringify({ flag: i });
    if (variants && rnd() < 0.5) payloads.v0 = '"zero"';
    flags.push({
      id: i + 1, key: `flag-${i}-${Math.floor(rnd() * 1000)}`, active: true,
      filters: { groups, ...(variants ? { multivariate: { variants } } : {}), payloads, ...(group ? { aggregation_group_type_index: 0 } : {}) },
    });
  }
  return {
    flags,
    group_type_mapping: { 0: 'company' },
    cohorts: { 50: { type: 'OR', values: [{ type: 'AND', values: [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro', 'Enterprise'] }] }] } },
  };
}

function randomUser(rnd: () => number, i: number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  return {
    distinctId: `user${i}-${Math.floor(rnd() * 1e6)}`,
    personProperties: { plan: pick(PLANS), country: pick(COUNTRIES), email: `user${i}@${pick(['example.com', 'mail.test'])}`, age: Math.floor(rnd() * 90) },
    groups: rnd() < 0.6 ? { company: `acme-${Math.floor(rnd() * 50)}` } : undefined,
    groupProperties: { company: { tier: pick(['gold', 'silver', 'bronze']) } },
  };
}

test('posthog-node local evaluation agrees on every flag it answers locally (seeded)', async () => {
  let defs: ProjectDefinitions = { flags: [], group_type_mapping: {}, cohorts: {} };
  const client = new PostHog('phc_parity_test', {
    personalApiKey: 'phx_parity_test', host: 'http://127.0.0.1:9', featureFlagsPollingInterval: 3_600_000, flushAt: 10_000,
    fetch: async (url: string) => {
      const body = url.includes('/flags/definitions') ? JSON.stringify(defs) : '{}';
      return { status: 200, text: async () => body, json: async () => JSON.parse(body), headers: { get: () => null } };
    },
  });
  const rnd = prng(99);
  let compared = 0;
  try {
    for (let p = 0; p < 60; p++) {
      defs = randomProject(rnd);
      await client.reloadFeatureFlags();
      const compiled = compileProject(defs);
      assert.deepEqual(compiled.problems, []);
      for (let u = 0; u < 12; u++) {
        const user = randomUser(rnd, u);
        const theirs = await client.getAllFlagsAndPayloads(user.distinctId, {
          personProperties: user.personProperties, groups: user.groups, groupProperties: user.groupProperties, onlyEvaluateLocally: true,
        });
        const ours = evaluateFlags(compiled, {
          distinct_id: user.distinctId, person_properties: user.personProperties, groups: user.groups, group_properties: user.groupProperties,
        }, {}, Date.now()).flags;
        for (const [key, value] of Object.entries(theirs.featureFlags ?? {})) {
          const r = ours[key]!;
          const ctx = `project ${p} user ${user.distinctId} flag ${key}: ${JSON.stringify(defs.flags.find((f) => f.key === key)?.filters)}`;
          assert.equal(r.variant ?? r.enabled, value, ctx);
          const payload = theirs.featureFlagPayloads?.[key];
          if (r.enabled) assert.deepEqual(r.metadata.payload === null ? undefined : JSON.parse(r.metadata.payload), payload, ctx);
          compared++;
        }
      }
    }
  } finally {
    await client.shutdown();
  }
  assert.ok(compared > 2000, `compared ${compared} flag answers`);
  console.log(`# posthog-node parity: ${compared} flag answers compared`);
});
