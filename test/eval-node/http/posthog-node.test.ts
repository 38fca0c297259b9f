/**
 * posthog-node (the real client, pointed at the node) against our /flags and /flags/definitions:
 * remote getFeatureFlag / getAllFlags / payloads / groups, and local evaluation of our feed agreeing
 * with our remote /flags for {@link USERS} users on every flag posthog-node evaluates conclusively
 * (getAllFlags for every user, getFeatureFlag flag by flag for the first {@link ONE_BY_ONE}), every
 * outcome of every flag (each variant, on and off) among the answers compared
 * (research/posthog-flag-evaluation.md §6; DESIGN.md "Evaluation core").
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PostHog } from 'posthog-node';
import { keepAliveClient } from '../../support/keep-alive.js';
import { startTestNode, postFlags, flag, standardFlags, worldChanges, COHORT_7, PROJECT_TOKEN, PERSONAL_KEY, type TestNode } from './fixture.js';

let node: TestNode;

/**
 * Users compared local against remote. Each costs posthog-node's local evaluation of every flag
 * (a SHA-1 through WebCrypto per hash) and one /flags request, so the count is what it takes for
 * every outcome of every flag to come up (asserted below: the rarest, mv-partial's variant `a`,
 * 4 % of these users).
 */
const USERS = 400;
/** The first users also compared flag by flag through getFeatureFlag (2.5 times getAllFlags' cost per flag). */
const ONE_BY_ONE = 50;

const PLANS = ['free', 'pro', 'enterprise', 'starter'];
const COMPANIES = Array.from({ length: 10 }, (_, i) => `company-${i * 7}`);

function flags() {
  const base = standardFlags();
  const alwaysOn = base.find((f) => f.key === 'always-on')!;
  return [
    ...base,
    flag('rollout-30', { groups: [{ properties: [], rollout_percentage: 30 }] }),
    flag('rollout-85', { groups: [{ properties: [], rollout_percentage: 85 }] }),
    flag('mv3', { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: { variants: [
      { key: 'control', rollout_percentage: 34 }, { key: 'test-a', rollout_percentage: 33 }, { key: 'test-b', rollout_percentage: 33 }] } }),
    flag('mv-partial', { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: 'example' }], rollout_percentage: 60 }],
      multivariate: { variants: [{ key: 'a', rollout_percentage: 20 }, { key: 'b', rollout_percentage: 80 }] }, payloads: { a: '{"v":"a"}', b: '"b"' } }),
    flag('org-keys', { aggregation_group_type_index: 0, groups: [{ properties: [{ key: '$group_key', type: 'group', group_type_index: 0, operator: 'exact', value: COMPANIES }], rollout_percentage: 100 }] }),
    flag('org-rollout', { aggregation_group_type_index: 0, groups: [{ properties: [], rollout_percentage: 40 }] }),
    flag('dep-on', { groups: [{ properties: [{ key: String(alwaysOn.id), type: 'flag', operator: 'flag_evaluates_to', value: true }], rollout_percentage: 100 }] }),
    flag('two-sets', { groups: [
      { properties: [{ key: 'plan', type: 'person', operator: 'exact', value: ['enterprise'] }], rollout_percentage: 100 },
      { properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }], rollout_percentage: 50, variant: null }] }),
  ];
}

before(async () => { node = await startTestNode({ changes: worldChanges(flags(), [COHORT_7]) }); });
after(async () => { await node.close(); });

function user(n: number) {
  return {
    distinctId: `user-${n}`,
    personProperties: { email: `user${n}${n % 2 === 0 ? '@example.com' : '@mail.test'}`, plan: PLANS[(n >> 3) % 4]! },
    groups: { organization: `company-${n % 100}` },
    groupProperties: { organization: { plan: n % 3 ? 'pro' : 'free' } },
  };
}

test('remote: getFeatureFlag, getAllFlags, payloads and groups through posthog-node', async () => {
  const client = new PostHog(PROJECT_TOKEN, { host: node.url, flushAt: 1000, flushInterval: 0, disableGeoip: true });
  try {
    const u = user(2);
    const opts = { personProperties: u.personProperties, groups: u.groups, groupProperties: u.groupProperties, sendFeatureFlagEvents: false };
    const direct = (await postFlags(node, { token: PROJECT_TOKEN, distinct_id: u.distinctId, person_properties: u.personProperties, groups: u.groups,
      group_properties: u.groupProperties, geoip_disable: true }, { headers: { 'user-agent': 'posthog-node/5.70.0' } })).json();
    assert.equal(await client.getFeatureFlag('always-on', u.distinctId, opts), true);
    assert.equal(await client.getFeatureFlag('mv', u.distinctId, opts), direct.flags.mv.variant);
    assert.equal(await client.getFeatureFlag('email-flag', u.distinctId, opts), true);
    assert.equal(await client.getFeatureFlag('group-flag', u.distinctId, { ...opts, groupProperties: { organization: { plan: 'pro' } } }), true);
    assert.equal(await client.getFeatureFlag('group-flag', u.distinctId, { ...opts, groups: {}, groupProperties: {} }), false);
    assert.deepEqual(await client.getFeatureFlagPayload('payload-flag', u.distinctId, undefined, opts), { a: 1 });
    const all = await client.getAllFlags(u.distinctId, opts);
    for (const [k, e] of Object.entries(direct.flags) as [string, { variant: string | null; enabled: boolean }][]) {
      assert.equal(all[k], e.variant ?? e.enabled, k);
    }
    assert.equal(all['client-only'], undefined, 'posthog-node is detected as a server runtime');
    assert.equal(all['server-only'], true);
  } finally {
    await client.shutdown();
  }
});

test(`local evaluation of /flags/definitions agrees with remote /flags for ${USERS} users, every outcome of every flag among them`, async () => {
  const client = new PostHog(PROJECT_TOKEN, {
    host: node.url, personalApiKey: PERSONAL_KEY, featureFlagsPollingInterval: 60_000, flushAt: 1000, flushInterval: 0, disableGeoip: true,
  });
  // The remote answers reuse connections (a new one per request cost twice the CPU).
  const http = keepAliveClient(1);
  const remoteFlags = async (body: Record<string, unknown>) => {
    const r = await http.post(`${node.url}/flags?v=2`, body, { 'user-agent': 'posthog-node/5.70.0' });
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  try {
    await client.waitForLocalEvaluationReady(10_000);
    const keys = flags().filter((f) => !f.is_remote_configuration).map((f) => f.key);
    let conclusive = 0;
    const perFlag = new Map<string, number>();
    /** Each flag's outcomes compared (variant or true/false) and how often. */
    const outcomes = new Map<string, Map<unknown, number>>();
    for (let n = 0; n < USERS; n++) {
      const u = user(n);
      const remote = await remoteFlags({
        token: PROJECT_TOKEN, distinct_id: u.distinctId, person_properties: { distinct_id: u.distinctId, ...u.personProperties }, groups: u.groups,
        group_properties: { organization: { $group_key: u.groups.organization, ...u.groupProperties.organization } }, geoip_disable: true,
      });
      const opts = { personProperties: u.personProperties, groups: u.groups, groupProperties: u.groupProperties, onlyEvaluateLocally: true };
      // Every flag evaluated locally at once (posthog-node's getAllFlags: the same local core as
      // getFeatureFlag, which costs 2.5 times as much per flag); the first ONE_BY_ONE users also
      // flag by flag through getFeatureFlag, which must agree.
      const all = await client.getAllFlags(u.distinctId, opts);
      for (const key of keys) {
        const local = all[key];
        if (n < ONE_BY_ONE) assert.equal(await client.getFeatureFlag(key, u.distinctId, { ...opts, sendFeatureFlagEvents: false }), local, `getFeatureFlag ${key} for ${u.distinctId}`);
        const entry = remote.flags[key] as { enabled: boolean; variant: string | null } | undefined;
        if (local === undefined || entry === undefined) continue;
        assert.equal(local, entry.variant ?? entry.enabled, `${key} for ${u.distinctId}`);
        conclusive++;
        perFlag.set(key, (perFlag.get(key) ?? 0) + 1);
        const seen = outcomes.get(key) ?? new Map<unknown, number>();
        outcomes.set(key, seen.set(local, (seen.get(local) ?? 0) + 1));
      }
    }
    for (const key of ['always-on', 'mv', 'rollout-50', 'rollout-30', 'mv3', 'mv-partial', 'email-flag', 'cohort-flag', 'group-flag', 'org-keys', 'org-rollout', 'dep-on', 'two-sets', 'payload-flag']) {
      assert.equal(perFlag.get(key), USERS, `${key} evaluated locally for every user (${perFlag.get(key) ?? 0})`);
    }
    assert.ok(conclusive >= 14 * USERS);
    // Every branch was compared: each variant, and on and off where the flag can be either.
    const expected: Record<string, unknown[]> = {
      'always-on': [true], 'payload-flag': [true], 'dep-on': [true], 'server-only': [true], mv: ['control', 'test'], mv3: ['control', 'test-a', 'test-b'],
      'mv-partial': ['a', 'b', false], 'rollout-50': [true, false], 'rollout-30': [true, false], 'rollout-85': [true, false],
      'email-flag': [true, false], 'cohort-flag': [true, false], 'group-flag': [true, false], 'org-keys': [true, false],
      'org-rollout': [true, false], 'two-sets': [true, false],
    };
    assert.deepEqual([...outcomes.keys()].sort(), Object.keys(expected).sort(), 'the flags compared');
    for (const [key, values] of Object.entries(expected)) {
      const seen = outcomes.get(key) ?? new Map();
      assert.deepEqual([...seen.keys()].sort(), [...values].sort(), `${key}'s outcomes: ${JSON.stringify([...seen])}`);
    }
    // Payloads agree too (local parses the stored JSON string; remote returns it raw).
    for (let n = 0; n < 50; n++) {
      const u = user(n);
      const opts = { personProperties: u.personProperties, groups: u.groups, groupProperties: u.groupProperties, sendFeatureFlagEvents: false };
      const local = await client.getFeatureFlagPayload('mv-partial', u.distinctId, undefined, { ...opts, onlyEvaluateLocally: true });
      const remote = await remoteFlags({ token: PROJECT_TOKEN, distinct_id: u.distinctId, person_properties: u.personProperties });
      const p = remote.flags['mv-partial'].metadata.payload;
      assert.deepEqual(local ?? null, p === null ? null : JSON.parse(p), u.distinctId);
    }
  } finally {
    http.close();
    await client.shutdown();
  }
});
