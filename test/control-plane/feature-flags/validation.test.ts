/**
 * Every create/update validation rule of research/posthog-management-api.md §1.2, one row each,
 * over real HTTP: status, PostHog's `{type, code, detail, attr}`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';

let t: TestControlPlane;
let base: string;
const fx: Record<string, number> = {};

const person = (extra: Record<string, unknown> = {}) => ({ key: 'email', type: 'person', value: 'a@b.c', operator: 'exact', ...extra });
const groups = (...properties: unknown[]) => ({ groups: [{ properties, rollout_percentage: 100 }] });

async function cohort(projectId: number, name: string, values: unknown[]): Promise<number> {
  const [row] = await t.db.sql<{ id: number }[]>`INSERT INTO cohorts (project_id, name, filters)
    VALUES (${projectId}, ${name}, ${t.db.sql.json({ properties: { type: 'OR', values: [{ type: 'AND', values }] } } as never)}) RETURNING id`;
  return row!.id;
}

async function flag(body: Record<string, unknown>): Promise<number> {
  const r = await t.request('POST', base, { body });
  assert.equal(r.status, 201, r.text);
  return r.body.id;
}

before(async () => {
  t = await startTestControlPlane();
  base = `/api/projects/${t.projectId}/feature_flags/`;
  const [p2] = await t.db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token)
    VALUES (${t.organizationId}, 'Other', ${'phc_other_' + Date.now()}) RETURNING id`;
  fx.plainCohort = await cohort(t.projectId, 'Plain', [person()]);
  fx.behavioralCohort = await cohort(t.projectId, 'Pageviewers', [{ key: '$pageview', type: 'behavioral', value: 'performed_event', event_type: 'events' }]);
  fx.nestedCohort = await cohort(t.projectId, 'Nested', [{ key: 'id', type: 'cohort', value: fx.behavioralCohort }]);
  fx.foreignCohort = await cohort(p2!.id, 'Foreign', [person()]);
  await flag({ key: 'taken' });
  fx.activeDep = await flag({ key: 'dep-active' });
  fx.inactiveDep = await flag({ key: 'dep-inactive', active: false });
  fx.deletedDep = await flag({ key: 'dep-deleted' });
  await t.request('PATCH', `${base}${fx.deletedDep}/`, { body: { deleted: true } });
});
after(async () => { await t.close(); });

interface Case { name: string; body: () => unknown; attr: string | null; code: string; detail: string | RegExp }

const flagProp = (id: unknown, operator = 'flag_evaluates_to') => ({ key: id, type: 'flag', value: true, operator });

const CASES: Case[] = [
  { name: 'key required', body: () => ({ name: 'x' }), attr: 'key', code: 'required', detail: 'This field is required.' },
  { name: 'key blank', body: () => ({ key: '  ' }), attr: 'key', code: 'blank', detail: 'This field may not be blank.' },
  { name: 'key null', body: () => ({ key: null }), attr: 'key', code: 'null', detail: 'This field may not be null.' },
  { name: 'key format', body: () => ({ key: 'bad key!' }), attr: 'key', code: 'invalid_key', detail: 'Only letters, numbers, hyphens (-) & underscores (_) are allowed.' },
  { name: 'key max length 400', body: () => ({ key: 'k'.repeat(401) }), attr: 'key', code: 'max_length', detail: 'Ensure this field has no more than 400 characters.' },
  { name: 'key unique among live flags', body: () => ({ key: 'taken' }), attr: 'key', code: 'unique', detail: 'There is already a feature flag with this key.' },
  { name: 'body must be an object', body: () => [1], attr: null, code: 'invalid_input', detail: 'Invalid data. Expected a dictionary, but got list.' },
  { name: 'filters must be an object', body: () => ({ key: 'f1', filters: [] }), attr: 'filters', code: 'not_a_dict', detail: 'Expected a dictionary of items but got type "list".' },
  { name: 'create needs a condition set', body: () => ({ key: 'f2', filters: { groups: [] } }), attr: 'filters', code: 'invalid_input', detail: 'Feature flags must have at least one condition set (group).' },
  { name: 'create needs groups', body: () => ({ key: 'f2b', filters: { payloads: {} } }), attr: 'filters', code: 'invalid_input', detail: 'Feature flags must have at least one condition set (group).' },
  { name: 'group rollout above 100', body: () => ({ key: 'f3', filters: { groups: [{ properties: [], rollout_percentage: 101 }] } }), attr: 'filters', code: 'invalid_input', detail: 'groups[0].rollout_percentage must be between 0 and 100, got 101' },
  { name: 'group rollout below 0', body: () => ({ key: 'f4', filters: { groups: [{ properties: [], rollout_percentage: -1 }] } }), attr: 'filters', code: 'invalid_input', detail: 'groups[0].rollout_percentage must be between 0 and 100, got -1' },
  { name: 'group rollout not a number', body: () => ({ key: 'f5', filters: { groups: [{ properties: [], rollout_percentage: '50' }] } }), attr: 'filters', code: 'invalid_input', detail: 'groups[0].rollout_percentage must be a number or null' },
  { name: 'variant percentage out of range', body: () => ({ key: 'f6', filters: { ...groups(), multivariate: { variants: [{ key: 'a', rollout_percentage: 150 }, { key: 'b', rollout_percentage: -50 }] } } }), attr: 'filters', code: 'invalid_input', detail: /^multivariate\.variants\[0\]\.rollout_percentage must be a number between 0 and 100/ },
  { name: 'variants sum to 100', body: () => ({ key: 'f7', filters: { ...groups(), multivariate: { variants: [{ key: 'a', rollout_percentage: 50 }, { key: 'b', rollout_percentage: 40 }] } } }), attr: 'filters', code: 'invalid_input', detail: 'Invalid variant definitions: Variant rollout percentages must sum to 100.' },
  { name: 'variant override exists', body: () => ({ key: 'f8', filters: { groups: [{ properties: [], rollout_percentage: 100, variant: 'nope' }], multivariate: { variants: [{ key: 'a', rollout_percentage: 100 }] } } }), attr: 'filters', code: 'invalid_input', detail: 'Filters are not valid (variant override does not exist)' },
  { name: 'payloads must be a dictionary', body: () => ({ key: 'f9', filters: { ...groups(), payloads: ['x'] } }), attr: 'filters', code: 'invalid_input', detail: 'Payloads must be passed as a dictionary' },
  { name: 'payload string must be JSON', body: () => ({ key: 'f10', filters: { ...groups(), payloads: { true: '{not json' } } }), attr: 'filters', code: 'invalid_input', detail: 'Payload value is not valid JSON' },
  { name: 'boolean payload keys are "true"', body: () => ({ key: 'f11', filters: { ...groups(), payloads: { false: '1' } } }), attr: 'filters', code: 'invalid_input', detail: "Payload keys must be 'true' for boolean flags" },
  { name: 'multivariate payload keys are variants', body: () => ({ key: 'f12', filters: { ...groups(), multivariate: { variants: [{ key: 'a', rollout_percentage: 100 }] }, payloads: { b: '1' } } }), attr: 'filters', code: 'invalid_input', detail: 'Payload keys must match a variant key for multivariate flags' },
  { name: 'person flag rejects group properties', body: () => ({ key: 'f13', filters: groups({ key: 'name', type: 'group', value: 'x', group_type_index: 0 }) }), attr: 'filters', code: 'invalid_input', detail: 'Filters are not valid (can only use person, cohort, and flag properties)' },
  { name: 'person flag rejects untyped (event) properties', body: () => ({ key: 'f14', filters: groups({ key: 'name', value: 'x' }) }), attr: 'filters', code: 'invalid_input', detail: 'Filters are not valid (can only use person, cohort, and flag properties)' },
  { name: 'group flag rejects person properties', body: () => ({ key: 'f15', filters: { ...groups(person()), aggregation_group_type_index: 0 } }), attr: 'filters', code: 'invalid_input', detail: 'Filters are not valid (can only use group properties)' },
  { name: 'group flag needs the same group_type_index', body: () => ({ key: 'f16', filters: { ...groups({ key: 'name', type: 'group', value: 'x', group_type_index: 1 }), aggregation_group_type_index: 0 } }), attr: 'filters', code: 'invalid_input', detail: 'Filters are not valid (can only use group properties)' },
  { name: 'aggregation index must be an integer', body: () => ({ key: 'f16b', filters: { ...groups(), aggregation_group_type_index: '0' } }), attr: 'filters', code: 'invalid_input', detail: 'aggregation_group_type_index must be an integer or null' },
  { name: 'early_exit must be a boolean', body: () => ({ key: 'f16f', filters: { ...groups(), early_exit: 'yes' } }), attr: 'filters', code: 'invalid_input', detail: 'early_exit must be a boolean' },
  // What the evaluator cannot evaluate is refused on write (beyond PostHog).
  { name: 'unknown operator', body: () => ({ key: 'f16c', filters: groups(person({ operator: 'startswith' })) }), attr: 'filters', code: 'invalid_operator', detail: /^Invalid property filter "email" \(operator\): unknown operator "startswith"/ },
  { name: 'invalid semver value', body: () => ({ key: 'f16d', filters: groups(person({ key: 'app_version', operator: 'semver_gt', value: 'one.two' })) }), attr: 'filters', code: 'invalid_input', detail: /^Invalid property filter "app_version" \(value\)/ },
  { name: 'group type index without a group type', body: () => ({ key: 'f16e', filters: { ...groups({ key: 'name', type: 'group', value: 'x', group_type_index: 3 }), aggregation_group_type_index: 3 } }), attr: 'filters', code: 'invalid_group_type', detail: 'Invalid group type index 3: this project has no group type with that index.' },
  { name: 'flag properties use flag_evaluates_to', body: () => ({ key: 'f17', filters: groups(flagProp(fx.activeDep, 'exact')) }), attr: 'filters', code: 'invalid_input', detail: "Flag properties must use the 'flag_evaluates_to' operator" },
  { name: 'list values at most 1000', body: () => ({ key: 'f18', filters: groups(person({ value: Array.from({ length: 1001 }, (_, i) => `v${i}`) })) }), attr: 'filters', code: 'invalid_input', detail: 'Property group expressions of type email cannot contain more than 1000 values.' },
  { name: 'cohort must exist', body: () => ({ key: 'f19', filters: groups({ key: 'id', type: 'cohort', value: 987654 }) }), attr: 'filters', code: 'cohort_does_not_exist', detail: 'Cohort with id 987654 does not exist' },
  { name: "cohort of another project doesn't count", body: () => ({ key: 'f20', filters: groups({ key: 'id', type: 'cohort', value: fx.foreignCohort }) }), attr: 'filters', code: 'cohort_does_not_exist', detail: /^Cohort with id \d+ does not exist$/ },
  { name: 'behavioural cohort rejected', body: () => ({ key: 'f21', filters: groups({ key: 'id', type: 'cohort', value: fx.behavioralCohort }) }), attr: 'filters', code: 'behavioral_cohort_found', detail: "Cohort 'Pageviewers' with filters on events cannot be used in feature flags." },
  { name: 'cohort depending on a behavioural cohort rejected', body: () => ({ key: 'f22', filters: groups({ key: 'id', type: 'cohort', value: fx.nestedCohort }) }), attr: 'filters', code: 'behavioral_cohort_found', detail: "Cohort 'Pageviewers' with filters on events cannot be used in feature flags." },
  { name: 'dates must parse', body: () => ({ key: 'f23', filters: groups(person({ key: 'signup', value: 'not-a-date', operator: 'is_date_before' })) }), attr: 'filters', code: 'invalid_date', detail: 'Invalid date value: not-a-date' },
  { name: 'regex needs a string', body: () => ({ key: 'f24', filters: groups(person({ value: 5, operator: 'regex' })) }), attr: 'filters', code: 'invalid_value', detail: 'Invalid value for operator regex: 5' },
  { name: 'regex must compile', body: () => ({ key: 'f24b', filters: groups(person({ value: '([a-z', operator: 'regex' })) }), attr: 'filters', code: 'invalid_regex', detail: /^Invalid regex pattern \(\[a-z: / },
  { name: 'not_regex must compile', body: () => ({ key: 'f24c', filters: groups(person({ value: '(?>atomic)', operator: 'not_regex' })) }), attr: 'filters', code: 'invalid_regex', detail: /^Invalid regex pattern \(\?>atomic\): / },
  { name: 'regex program within the size bound', body: () => ({ key: 'f24d', filters: groups(person({ value: '(?i)\\w{1,1000}!', operator: 'regex' })) }), attr: 'filters', code: 'invalid_regex', detail: /^Invalid regex pattern \(\?i\)\\w\{1,1000\}!: the compiled pattern is too large \(about \d+ program units, more than 250000\)\.$/ },
  { name: 'gt needs a string', body: () => ({ key: 'f25', filters: groups(person({ value: [1, 2], operator: 'gt' })) }), attr: 'filters', code: 'invalid_value', detail: 'Invalid value for operator gt: [1, 2]' },
  { name: 'in only for cohorts', body: () => ({ key: 'f26', filters: groups(person({ value: ['a'], operator: 'in' })) }), attr: 'filters', code: 'invalid_operator', detail: "The 'in' operator is only valid for cohort properties, not 'person' properties." },
  { name: 'dependency by key rejected', body: () => ({ key: 'f27', filters: groups(flagProp('dep-active')) }), attr: 'filters', code: 'invalid_input', detail: "Flag dependencies must reference flag IDs (integers), not flag keys. Invalid reference: 'dep-active'" },
  { name: 'dependency must exist', body: () => ({ key: 'f28', filters: groups(flagProp(999999)) }), attr: 'filters', code: 'invalid_input', detail: 'Flag dependency references non-existent flag with ID 999999' },
  { name: 'dependency must not be deleted', body: () => ({ key: 'f29', filters: groups(flagProp(String(fx.deletedDep))) }), attr: 'filters', code: 'invalid_input', detail: /^Flag dependency references non-existent flag with ID \d+$/ },
  { name: 'dependency must be active', body: () => ({ key: 'f30', filters: groups(flagProp(fx.inactiveDep)) }), attr: 'filters', code: 'invalid_input', detail: /^Cannot create dependency on disabled flag 'dep-inactive' \(ID: \d+\)\. Flag dependencies must reference active flags only\.$/ },
  { name: 'evaluation_tags ⊆ tags', body: () => ({ key: 'f31', tags: ['a'], evaluation_tags: ['a', 'Z', 'b'] }), attr: null, code: 'invalid_input', detail: 'Evaluation tags must be a subset of tags. Invalid evaluation tags: b, z' },
  { name: 'evaluation_runtime enum', body: () => ({ key: 'f32', evaluation_runtime: 'both' }), attr: 'evaluation_runtime', code: 'invalid_choice', detail: '"both" is not a valid choice.' },
  { name: 'creation_context enum', body: () => ({ key: 'f33', creation_context: 'nowhere' }), attr: 'creation_context', code: 'invalid_choice', detail: '"nowhere" is not a valid choice.' },
  { name: 'active must be boolean', body: () => ({ key: 'f34', active: 'maybe' }), attr: 'active', code: 'invalid_input', detail: 'Must be a valid boolean.' },
  { name: 'name may not be null', body: () => ({ key: 'f35', name: null }), attr: 'name', code: 'null', detail: 'This field may not be null.' },
  { name: 'tags must be a list', body: () => ({ key: 'f36', tags: 'a' }), attr: 'tags', code: 'not_a_list', detail: 'Expected a list of items but got type "str".' },
  { name: 'analytics dashboards must exist', body: () => ({ key: 'f37', analytics_dashboards: [987654] }), attr: 'analytics_dashboards', code: 'does_not_exist', detail: 'Invalid pk "987654" - object does not exist.' },
  { name: 'last_called_at must be a datetime', body: () => ({ key: 'f38', last_called_at: 'yesterday' }), attr: 'last_called_at', code: 'invalid_input', detail: /^Datetime has wrong format/ },
  { name: 'version must be an integer', body: () => ({ key: 'f39', version: 'x' }), attr: 'version', code: 'invalid_input', detail: 'A valid integer is required.' },
];

for (const c of CASES) {
  test(`create rejects: ${c.name}`, async () => {
    const r = await t.request('POST', base, { body: c.body() });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.type, 'validation_error');
    assert.equal(r.body.attr, c.attr);
    assert.equal(r.body.code, c.code);
    if (typeof c.detail === 'string') assert.equal(r.body.detail, c.detail);
    else assert.match(r.body.detail, c.detail);
  });
}

const ACCEPTED: { name: string; body: () => Record<string, unknown>; check?: (f: any) => void }[] = [
  { name: 'relative and absolute dates', body: () => ({ key: 'ok-dates', filters: groups(person({ key: 's', value: '-7d', operator: 'is_date_after' }), person({ key: 's', value: '2024-01-31', operator: 'is_date_before' }), person({ key: 's', value: '2024-01-31T10:00:00Z', operator: 'is_date_before' })) }) },
  { name: 'cohort property gets cohort_name', body: () => ({ key: 'ok-cohort', filters: groups({ key: 'id', type: 'cohort', value: fx.plainCohort, operator: 'in' }) }), check: (f) => assert.equal(f.filters.groups[0].properties[0].cohort_name, 'Plain') },
  { name: 'dependency by id (number or string)', body: () => ({ key: 'ok-dep', filters: groups(flagProp(fx.activeDep), flagProp(String(fx.activeDep))) }) },
  { name: 'payload values normalised to JSON text', body: () => ({ key: 'ok-payloads', filters: { ...groups(), payloads: { true: [1, { a: true }] } } }), check: (f) => assert.equal(f.filters.payloads.true, '[1, {"a": true}]') },
  { name: 'group flag with matching group properties', body: () => ({ key: 'ok-group', filters: { ...groups({ key: 'name', type: 'group', value: 'x', group_type_index: 0 }), aggregation_group_type_index: 0 } }), check: (f) => assert.equal(f.is_simple_flag, false) },
  { name: 'variant override and 1000 values', body: () => ({ key: 'ok-variant', filters: { groups: [{ properties: [person({ value: Array.from({ length: 1000 }, (_, i) => `v${i}`) })], rollout_percentage: 0, variant: 'b' }], multivariate: { variants: [{ key: 'a', rollout_percentage: 33.3 }, { key: 'b', rollout_percentage: 33.3 }, { key: 'c', rollout_percentage: 33.4 }] }, payloads: { a: '1', c: '"x"' } } }) },
];

for (const c of ACCEPTED) {
  test(`create accepts: ${c.name}`, async () => {
    const r = await t.request('POST', base, { body: c.body() });
    assert.equal(r.status, 201, r.text);
    c.check?.(r.body);
  });
}

test('PATCH: empty groups are allowed on update (only create requires a condition set)', async () => {
  const id = await flag({ key: 'upd-groups' });
  const r = await t.request('PATCH', `${base}${id}/`, { body: { filters: { groups: [] } } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.filters.groups, []);
});

test('PATCH key to one taken by a live flag → unique; to its own key → fine', async () => {
  const id = await flag({ key: 'own-key' });
  assert.equal((await t.request('PATCH', `${base}${id}/`, { body: { key: 'own-key' } })).status, 200);
  const r = await t.request('PATCH', `${base}${id}/`, { body: { key: 'taken' } });
  assert.equal(r.status, 400);
  assert.equal(r.body.code, 'unique');
});

test('evaluation_tags alone are checked against the stored tags', async () => {
  const id = await flag({ key: 'eval-tags', tags: ['prod'] });
  assert.equal((await t.request('PATCH', `${base}${id}/`, { body: { evaluation_tags: ['prod'] } })).status, 200);
  assert.equal((await t.request('PATCH', `${base}${id}/`, { body: { evaluation_tags: ['dev'] } })).status, 400);
});

test('dependencies: self, direct and longer cycles', async () => {
  const a = await flag({ key: 'cyc-a' });
  const self = await t.request('PATCH', `${base}${a}/`, { body: { filters: groups(flagProp(a)) } });
  assert.equal(self.status, 400);
  assert.equal(self.body.detail, "Feature flag 'cyc-a' cannot depend on itself");
  const b = await flag({ key: 'cyc-b', filters: groups(flagProp(a)) });
  const two = await t.request('PATCH', `${base}${a}/`, { body: { filters: groups(flagProp(b)) } });
  assert.equal(two.status, 400);
  assert.equal(two.body.attr, 'filters');
  assert.equal(two.body.detail, 'Circular dependency detected: cyc-a → cyc-b → cyc-a');
  const c = await flag({ key: 'cyc-c', filters: groups(flagProp(b)) });
  const three = await t.request('PATCH', `${base}${a}/`, { body: { filters: groups(flagProp(c)) } });
  assert.equal(three.body.detail, 'Circular dependency detected: cyc-a → cyc-c → cyc-b → cyc-a');
  // A diamond without a cycle is fine.
  const d = await flag({ key: 'cyc-d', filters: groups(flagProp(b), flagProp(c)) });
  assert.ok(d);
});

test('dependencies: disabling / deleting a depended-on flag is refused; enabling over a disabled dependency is refused', async () => {
  const dep = await flag({ key: 'base-dep' });
  const user = await flag({ key: 'uses-dep', filters: groups(flagProp(dep)) });
  const off = await t.request('PATCH', `${base}${dep}/`, { body: { active: false } });
  assert.equal(off.status, 400);
  assert.equal(off.body.attr, null);
  assert.equal(off.body.detail, `Cannot disable this feature flag because other flags depend on it: uses-dep (ID: ${user}). Please update or disable the dependent flags first.`);
  const del = await t.request('PATCH', `${base}${dep}/`, { body: { deleted: true } });
  assert.equal(del.status, 400);
  assert.equal(del.body.detail, `Cannot delete this feature flag because other flags depend on it: uses-dep (ID: ${user}). Please update or delete the dependent flags first.`);
  // Disable the dependent first, then the dependency; enabling the dependent is then refused.
  assert.equal((await t.request('PATCH', `${base}${user}/`, { body: { active: false } })).status, 200);
  assert.equal((await t.request('PATCH', `${base}${dep}/`, { body: { active: false } })).status, 200);
  const on = await t.request('PATCH', `${base}${user}/`, { body: { active: true } });
  assert.equal(on.status, 400);
  assert.equal(on.body.detail, `Cannot enable this feature flag because it depends on disabled flags: base-dep (ID: ${dep}). Please enable the dependency flags first.`);
});

test('dependents listing caps at five names', async () => {
  const dep = await flag({ key: 'popular' });
  for (let i = 0; i < 7; i++) await flag({ key: `fan-${i}`, filters: groups(flagProp(dep)) });
  const r = await t.request('PATCH', `${base}${dep}/`, { body: { active: false } });
  assert.match(r.body.detail, /fan-4 \(ID: \d+\), and 2 more\. Please/);
});

test('409 conflict only when version is stale, original_flag given and the same field changed by someone else', async () => {
  const f = (await t.request('POST', base, { body: { key: 'conflict', name: 'v1' } })).body;
  const other = await t.request('PATCH', `${base}${f.id}/`, { body: { name: 'by-other' } });
  assert.equal(other.body.version, 2);
  // Stale version alone: last write wins.
  assert.equal((await t.request('PATCH', `${base}${f.id}/`, { body: { name: 'v3', version: 1 } })).status, 200);
  // Stale version + original_flag + same field changed meanwhile → 409.
  const c = await t.request('PATCH', `${base}${f.id}/`, { body: { name: 'mine', version: 1, original_flag: f } });
  assert.equal(c.status, 409, c.text);
  assert.deepEqual(c.body, {
    type: 'server_error', code: 'conflict', attr: null,
    detail: `The feature flag was updated by ${other.body.last_modified_by.email} since you started editing it. Please refresh and try again.`,
  });
  // A different field the other writer did not touch goes through.
  assert.equal((await t.request('PATCH', `${base}${f.id}/`, { body: { active: false, version: 1, original_flag: f } })).status, 200);
  // Current version → no conflict check.
  const cur = (await t.request('GET', `${base}${f.id}/`)).body;
  assert.equal((await t.request('PATCH', `${base}${f.id}/`, { body: { name: 'fresh', version: cur.version, original_flag: f } })).status, 200);
});

test('filters nested deeper than 128 levels → 400 attr filters, on create and update; nothing is written', async () => {
  let deep: unknown = 'v';
  for (let i = 0; i < 1_450; i++) deep = { a: deep };
  const filters = { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '1' }, extra: deep };
  const before = (await t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM change_log`)[0]!.n;
  const created = await t.request('POST', base, { body: { key: 'too-deep', filters } });
  assert.equal(created.status, 400, created.text);
  // Refused before parsing (control-plane/http/json-body.ts), naming the field as the filters validator would.
  assert.deepEqual(created.body, { type: 'validation_error', code: 'invalid_input', detail: 'Value may not nest deeper than 128 levels.', attr: 'filters' });
  const id = await flag({ key: 'shallow-then-deep' });
  const patched = await t.request('PATCH', `${base}${id}/`, { body: { filters } });
  assert.equal(patched.status, 400, patched.text);
  assert.equal(patched.body.attr, 'filters');
  const after = (await t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM change_log`)[0]!.n;
  assert.equal(after, before + 1, 'only the shallow create reached the change log');
});
