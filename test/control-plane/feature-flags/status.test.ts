/** status.ts rules, and its SQL twin (list filter active=STALE) pinned to the same cases. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { flagStatus, isFullyRolledOut } from '../../../src/control-plane/feature-flags/status.js';
import { listFlags } from '../../../src/control-plane/feature-flags/store.js';
import { parseFlagListQuery } from '../../../src/control-plane/feature-flags/list-query.js';

const mv = (variants: number[]) => ({ variants: variants.map((p, i) => ({ key: `v${i}`, rollout_percentage: p })) });
const g = (rollout: number | null | undefined, extra: Record<string, unknown> = {}) => ({ properties: [], ...(rollout === undefined ? {} : { rollout_percentage: rollout }), ...extra });
const prop = { key: 'email', type: 'person', value: 'x', operator: 'exact' };

const ROLLOUT_CASES: { name: string; filters: Record<string, unknown>; full: boolean }[] = [
  { name: 'empty filters', filters: {}, full: true },
  { name: 'boolean 100%', filters: { groups: [g(100)] }, full: true },
  { name: 'boolean null rollout (= 100%)', filters: { groups: [g(null)] }, full: true },
  { name: 'boolean rollout missing (= 100%)', filters: { groups: [g(undefined)] }, full: true },
  { name: 'boolean 50%', filters: { groups: [g(50)] }, full: false },
  { name: 'boolean 100% with properties', filters: { groups: [{ properties: [prop], rollout_percentage: 100 }] }, full: false },
  { name: 'boolean: one full group among others', filters: { groups: [{ properties: [prop], rollout_percentage: 10 }, g(100)] }, full: true },
  { name: 'no groups', filters: { groups: [] }, full: false },
  { name: 'multivariate 50/50', filters: { groups: [g(100)], multivariate: mv([50, 50]) }, full: false },
  { name: 'multivariate with a 100% variant', filters: { groups: [g(100)], multivariate: mv([100, 0]) }, full: true },
  { name: 'multivariate 100% variant but partial group', filters: { groups: [g(30)], multivariate: mv([100, 0]) }, full: false },
  { name: 'multivariate full group with override', filters: { groups: [g(100, { variant: 'v1' })], multivariate: mv([50, 50]) }, full: true },
  { name: 'multivariate override on a partial group', filters: { groups: [g(20, { variant: 'v1' })], multivariate: mv([50, 50]) }, full: false },
  { name: 'multivariate null is boolean', filters: { groups: [g(100)], multivariate: null }, full: true },
];

for (const c of ROLLOUT_CASES) {
  test(`isFullyRolledOut: ${c.name}`, () => assert.equal(isFullyRolledOut(c.filters), c.full));
}

test('flagStatus: deleted, inactive (never called and old / called long ago), stale, active; INACTIVE wins', () => {
  const now = new Date('2025-06-01T00:00:00Z');
  const old = new Date('2025-01-01T00:00:00Z');
  const recent = new Date('2025-05-25T00:00:00Z');
  const full = { groups: [g(100)] };
  const partial = { groups: [g(10)] };
  const s = (o: Partial<Parameters<typeof flagStatus>[0]>) => flagStatus({ deleted: false, active: true, filters: partial, created_at: recent, last_called_at: null, ...o }, now);
  assert.equal(s({ deleted: true }), 'DELETED');
  assert.equal(s({}), 'ACTIVE');
  assert.equal(s({ created_at: old }), 'INACTIVE');
  assert.equal(s({ created_at: old, last_called_at: new Date('2025-02-01T00:00:00Z') }), 'INACTIVE');
  assert.equal(s({ created_at: old, last_called_at: recent, filters: full }), 'STALE');
  assert.equal(s({ created_at: old, last_called_at: recent, filters: full, active: false }), 'ACTIVE');
  assert.equal(s({ created_at: old, filters: full }), 'INACTIVE');
  assert.equal(s({ created_at: recent, filters: full }), 'ACTIVE');
});

let db: TestDatabase;
let projectId: number;
before(async () => {
  db = await createTestDatabase();
  const [org] = await db.sql<{ id: number }[]>`INSERT INTO organizations (name) VALUES ('o') RETURNING id`;
  const [p] = await db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token) VALUES (${org!.id}, 'p', 'phc_status_test') RETURNING id`;
  projectId = p!.id;
});
after(async () => { await db.drop(); });

test('SQL twin: active=STALE selects exactly the old, never-called, fully rolled-out cases', async () => {
  for (const [i, c] of ROLLOUT_CASES.entries()) {
    await db.sql`INSERT INTO feature_flags (project_id, key, filters, created_at)
      VALUES (${projectId}, ${`case-${i}`}, ${db.sql.json(c.filters as never)}, now() - interval '60 days')`;
  }
  const { rows } = await listFlags(db.sql, projectId, parseFlagListQuery(new URLSearchParams('active=STALE')), 100, 0);
  const got = rows.map((r) => Number(r.key.slice(5))).sort((a, b) => a - b);
  const want = ROLLOUT_CASES.flatMap((c, i) => (c.full ? [i] : []));
  assert.deepEqual(got, want, `SQL: ${got.map((i) => ROLLOUT_CASES[i]!.name).join(', ')}`);
});
