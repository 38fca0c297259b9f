/** F11 flag status over real HTTP, with last_called_at fed by ingestion; F3 shows last_called_at. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { flagStatusWithReason } from '../../../src/control-plane/feature-flags/status-routes.js';

let t: TestControlPlane;
let base: string;
const DAY = 86_400_000;

before(async () => {
  t = await startTestControlPlane();
  base = `/api/projects/${t.projectId}/feature_flags/`;
});
after(async () => { await t.close(); });

async function flag(key: string, filters: Record<string, unknown>, opts: { createdDaysAgo?: number; active?: boolean } = {}): Promise<number> {
  const r = await t.request('POST', base, { body: { key, filters, active: opts.active ?? true } });
  assert.equal(r.status, 201, r.text);
  if (opts.createdDaysAgo) {
    await t.db.sql`UPDATE feature_flags SET created_at = now() - make_interval(days => ${opts.createdDaysAgo}) WHERE id = ${r.body.id}`;
  }
  return r.body.id;
}

async function called(key: string, daysAgo: number): Promise<void> {
  const r = await ingestEvents(t.db.sql, [{ uuid: crypto.randomUUID(), project_id: t.projectId, event: '$feature_flag_called',
    distinct_id: 'status-user', properties: { $feature_flag: key, $feature_flag_response: true },
    timestamp: new Date(Date.now() - daysAgo * DAY).toISOString() }]);
  assert.equal(r.inserted, 1);
}

async function status(id: number | string) {
  const r = await t.request('GET', `${base}${id}/status/`);
  return { code: r.status, body: r.body };
}

const PARTIAL = { groups: [{ properties: [], rollout_percentage: 50 }] };
const FULL = { groups: [{ properties: [], rollout_percentage: 100 }] };
const MV = (groupVariant: string | null, variants: [string, number][]) => ({
  groups: [{ properties: [], rollout_percentage: 100, variant: groupVariant }],
  multivariate: { variants: variants.map(([key, rollout_percentage]) => ({ key, rollout_percentage })) },
});

test('F11 cases over HTTP', async () => {
  const cases: { name: string; setup: () => Promise<number>; code: number; status: string; reason: string | RegExp }[] = [
    { name: 'new flag', setup: () => flag('s-new', PARTIAL), code: 200, status: 'active', reason: 'Flag is active and being evaluated' },
    { name: 'old, recently called, partial rollout', setup: async () => { const id = await flag('s-used', PARTIAL, { createdDaysAgo: 90 }); await called('s-used', 1); return id; },
      code: 200, status: 'active', reason: 'Flag is active and being evaluated' },
    { name: 'never called and old', setup: () => flag('s-never', PARTIAL, { createdDaysAgo: 40 }), code: 200, status: 'inactive',
      reason: 'Flag has never been called and is over 30 days old' },
    { name: 'not called for 45 days', setup: async () => { const id = await flag('s-idle', PARTIAL, { createdDaysAgo: 90 }); await called('s-idle', 45); return id; },
      code: 200, status: 'inactive', reason: 'Flag has not been called in 45 days' },
    { name: 'stale boolean', setup: async () => { const id = await flag('s-stale', FULL, { createdDaysAgo: 60 }); await called('s-stale', 2); return id; },
      code: 200, status: 'stale', reason: 'This boolean flag will always evaluate to "true"' },
    { name: 'stale multivariate (variant at 100%)', setup: async () => { const id = await flag('s-mv', MV(null, [['control', 0], ['test', 100]]), { createdDaysAgo: 60 }); await called('s-mv', 2); return id; },
      code: 200, status: 'stale', reason: 'This flag will always use the variant "test"' },
    { name: 'stale multivariate (group override)', setup: async () => { const id = await flag('s-mv2', MV('control', [['control', 50], ['test', 50]]), { createdDaysAgo: 60 }); await called('s-mv2', 2); return id; },
      code: 200, status: 'stale', reason: 'This flag will always use the variant "control"' },
    { name: 'inactive wins over stale, both reasons', setup: () => flag('s-both', FULL, { createdDaysAgo: 60 }), code: 200, status: 'inactive',
      reason: 'Flag has never been called and is over 30 days old. Additionally, this boolean flag will always evaluate to "true"' },
    { name: 'disabled, fully rolled out, old, called: not stale', setup: async () => { const id = await flag('s-off', FULL, { createdDaysAgo: 60, active: false }); await called('s-off', 1); return id; },
      code: 200, status: 'active', reason: 'Flag is active and being evaluated' },
    { name: 'deleted', setup: async () => { const id = await flag('s-del', PARTIAL); await t.request('PATCH', `${base}${id}/`, { body: { deleted: true } }); return id; },
      code: 200, status: 'deleted', reason: 'Flag has been deleted' },
  ];
  for (const c of cases) {
    const id = await c.setup();
    const r = await status(id);
    assert.equal(r.code, c.code, c.name);
    assert.equal(r.body.status, c.status, c.name);
    if (typeof c.reason === 'string') assert.equal(r.body.reason, c.reason, c.name);
    else assert.match(r.body.reason, c.reason, c.name);
  }
});

test('F11 unknown: missing id, non-integer id, another project → 404 unknown', async () => {
  const id = await flag('s-elsewhere', PARTIAL);
  const [p2] = await t.db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token)
    VALUES (${t.organizationId}, 'p2', 'phc_status_second_project') RETURNING id`;
  for (const path of [`${base}999999/status/`, `${base}abc/status/`, `/api/projects/${p2!.id}/feature_flags/${id}/status/`]) {
    const r = await t.request('GET', path);
    assert.equal(r.status, 404, path);
    assert.deepEqual(r.body, { status: 'unknown', reason: 'Flag could not be found' }, path);
  }
});

test('F11 needs feature_flag:read', async () => {
  const id = await flag('s-scope', PARTIAL);
  const other = await t.createKey(['event_definition:read']);
  const r = await t.request('GET', `${base}${id}/status/`, { key: other });
  assert.equal(r.status, 403);
  assert.equal(r.body.detail, "API key missing required scope 'feature_flag:read'");
  assert.equal((await t.request('GET', `${base}${id}/status/`, { key: await t.createKey(['feature_flag:read']) })).status, 200);
});

test('F3 shows last_called_at from ingestion', async () => {
  const id = await flag('s-f3', PARTIAL);
  assert.equal((await t.request('GET', `${base}${id}/`)).body.last_called_at, null);
  const at = new Date(Date.now() - 3600_000);
  await ingestEvents(t.db.sql, [{ uuid: crypto.randomUUID(), project_id: t.projectId, event: '$feature_flag_called', distinct_id: 'u',
    properties: { $feature_flag: 's-f3' }, timestamp: at.toISOString() }]);
  assert.equal((await t.request('GET', `${base}${id}/`)).body.last_called_at, at.toISOString());
});

test('flagStatusWithReason: day counting is floored', () => {
  const now = new Date('2026-06-01T00:00:00Z');
  const r = flagStatusWithReason({ deleted: false, active: true, filters: PARTIAL, created_at: new Date('2026-01-01T00:00:00Z'),
    last_called_at: new Date(now.getTime() - 31.9 * DAY) }, now);
  assert.deepEqual(r, { status: 'inactive', reason: 'Flag has not been called in 31 days' });
});
