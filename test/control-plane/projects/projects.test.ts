/**
 * Projects through the management API on a real control plane with a real evaluation node:
 * `POST /api/projects/` creates a project with its own key that the node serves at once,
 * PATCH and DELETE (the node refuses a deleted project's key), the key's organization and user
 * (`/api/organizations/@current/`, `/api/users/@me/`), and `/api/environments/<id>/…` answering
 * as `/api/projects/<id>/…` on several resources. One cluster and one node for the file.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../support/wait.js';
import { flags, startCluster, waitReady, type SystemCluster } from '../../system/support.js';
import type { NodeService } from '../../../src/eval-node/service.js';

let c: SystemCluster;
let node: NodeService;
before(async () => {
  c = await startCluster();
  node = await c.startNode(c.tempDir());
  await waitReady(node.http.url);
});
after(async () => { await c.close(); });

/** Status of `/flags` on the node for `token`, and whether `key` is on for `u`. */
async function served(token: string, key?: string): Promise<{ status: number; on: boolean | undefined }> {
  const r = await flags(node.http.url, token, 'u');
  return { status: r.status, on: key === undefined ? undefined : r.body?.flags?.[key]?.enabled };
}

test('POST /api/projects/ creates a project with its own key that a node serves at once; PATCH; DELETE', async () => {
  const created = await c.t.request('POST', '/api/projects/', { body: { name: 'Checkout', timezone: 'Europe/Berlin', heatmaps_opt_in: true } });
  assert.equal(created.status, 201, created.text);
  const p = created.body;
  assert.equal(p.name, 'Checkout');
  assert.equal(p.timezone, 'Europe/Berlin');
  assert.equal(p.heatmaps_opt_in, true);
  assert.match(p.api_token, /^phc_[0-9A-Za-z]{43}$/);
  assert.notEqual(p.api_token, c.t.projectKey);
  assert.notEqual(p.id, c.t.projectId);
  const org = await c.t.request('GET', '/api/organizations/@current/');
  assert.equal(p.organization, org.body.id, 'in the key\'s organization');

  // The node learns the project from the change log: its key answers /flags, a flag made through the API is served.
  await waitFor('the new project on the node', async () => (await served(p.api_token)).status === 200, { intervalMs: 10 });
  const flag = await c.t.request('POST', `/api/projects/${p.id}/feature_flags/`, { body: { key: 'checkout-flag', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } } });
  assert.equal(flag.status, 201, flag.text);
  await waitFor('the new project\'s flag on the node', async () => (await served(p.api_token, 'checkout-flag')).on === true);
  assert.equal((await served(c.t.projectKey, 'checkout-flag')).on, undefined, 'not in the other project');

  // Defaults as PostHog's: name `Default project`, zone UTC.
  const bare = await c.t.request('POST', '/api/projects/', {});
  assert.equal(bare.status, 201, bare.text);
  assert.deepEqual([bare.body.name, bare.body.timezone, bare.body.heatmaps_opt_in], ['Default project', 'UTC', false]);
  const list = await c.t.request('GET', '/api/projects/');
  assert.deepEqual(list.body.results.map((r: { id: number }) => r.id), [c.t.projectId, p.id, bare.body.id]);

  // PATCH name and zone; read-only api_token ignored.
  const patched = await c.t.request('PATCH', `/api/projects/${p.id}/`, { body: { name: 'Checkout v2', timezone: 'America/New_York', api_token: 'phc_mine' } });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual([patched.body.name, patched.body.timezone, patched.body.api_token], ['Checkout v2', 'America/New_York', p.api_token]);

  // DELETE: gone from the API and from the node.
  const deleted = await c.t.request('DELETE', `/api/projects/${p.id}/`);
  assert.equal(deleted.status, 204, deleted.text);
  assert.equal((await c.t.request('GET', `/api/projects/${p.id}/`)).status, 404);
  assert.equal((await c.t.request('GET', `/api/projects/${p.id}/feature_flags/`)).status, 404);
  assert.equal((await c.t.request('DELETE', `/api/projects/${p.id}/`)).status, 404);
  assert.equal((await c.t.request('GET', `/api/projects/@current/?token=${p.api_token}`)).status, 404);
  assert.ok(!(await c.t.request('GET', '/api/projects/')).body.results.some((r: { id: number }) => r.id === p.id));
  await waitFor('the deleted project refused by the node', async () => (await served(p.api_token)).status === 401, { intervalMs: 10 });
  assert.equal((await served(c.t.projectKey)).status, 200, 'the other project is still served');
  // A node started afterwards never hears of it (its snapshot leaves deleted projects out).
  const late = await c.startNode(c.tempDir());
  await waitReady(late.http.url);
  await waitFor('the late node serving the live project', async () => (await flags(late.http.url, bare.body.api_token, 'u')).status === 200);
  assert.equal((await flags(late.http.url, p.api_token, 'u')).status, 401);
  await late.close();
});

test('project writes: validation errors and scopes as PostHog', async () => {
  const blank = await c.t.request('POST', '/api/projects/', { body: { name: '  ' } });
  assert.deepEqual(blank.body, { type: 'validation_error', code: 'blank', detail: 'This field may not be blank.', attr: 'name' });
  const long = await c.t.request('POST', '/api/projects/', { body: { name: 'x'.repeat(201) } });
  assert.equal(long.body.code, 'max_length');
  const zone = await c.t.request('POST', '/api/projects/', { body: { timezone: 'Mars/Olympus' } });
  assert.deepEqual(zone.body, { type: 'validation_error', code: 'invalid_choice', detail: '"Mars/Olympus" is not a valid choice.', attr: 'timezone' });
  const notObject = await c.t.request('POST', '/api/projects/', { body: [1] });
  assert.equal(notObject.status, 400);
  const patchZone = await c.t.request('PATCH', `/api/projects/${c.t.projectId}/`, { body: { timezone: 7 } });
  assert.equal(patchZone.body.attr, 'timezone');

  const readOnly = await c.t.createKey(['project:read']);
  const refused = await c.t.request('POST', '/api/projects/', { key: readOnly, body: { name: 'no' } });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.detail, "API key missing required scope 'project:write'");
  assert.equal((await c.t.request('DELETE', `/api/projects/${c.t.projectId}/`, { key: readOnly })).status, 403);
  const scoped = await c.t.createKey(['project:write'], [c.t.projectId]);
  assert.equal((await c.t.request('POST', '/api/projects/', { key: scoped, body: { name: 'no' } })).status, 403);
  const count = await c.t.db.sql`SELECT 1 FROM projects WHERE name = 'no'`;
  assert.equal(count.length, 0, 'nothing created by a refused request');
});

test('/api/users/@me/ answers the key\'s user; /api/organizations/@current/ its organization', async () => {
  const me = await c.t.request('GET', '/api/users/@me/');
  assert.equal(me.status, 200, me.text);
  const [user] = await c.t.db.sql<{ uuid: string; email: string; distinct_id: string }[]>`SELECT uuid::text, email, distinct_id FROM users WHERE id = ${c.t.userId}`;
  assert.equal(me.body.id, c.t.userId);
  assert.equal(me.body.uuid, user!.uuid);
  assert.equal(me.body.email, user!.email);
  assert.equal(me.body.distinct_id, user!.distinct_id);
  assert.equal(me.body.team.id, c.t.projectId);
  assert.equal(me.body.team.api_token, c.t.projectKey);
  assert.equal(me.body.organization.id, me.body.organizations[0].id);
  assert.equal((await c.t.request('GET', `/api/users/${user!.uuid}/`)).body.id, c.t.userId, 'by its own uuid');
  assert.equal((await c.t.request('GET', '/api/users/00000000-0000-0000-0000-000000000000/')).status, 404);
  const flagsOnly = await c.t.createKey(['feature_flag:read']);
  assert.equal((await c.t.request('GET', '/api/users/@me/', { key: flagsOnly })).status, 403);
  assert.equal((await c.t.request('GET', '/api/users/@me/', { key: null })).status, 401);

  const org = await c.t.request('GET', '/api/organizations/@current/');
  assert.equal(org.status, 200, org.text);
  const [row] = await c.t.db.sql<{ uuid: string; name: string }[]>`SELECT uuid::text, name FROM organizations WHERE id = ${c.t.organizationId}`;
  assert.deepEqual([org.body.id, org.body.name, org.body.slug], [row!.uuid, row!.name, 'default-organization']);
  const live = await c.t.db.sql<{ id: number }[]>`SELECT id FROM projects WHERE organization_id = ${c.t.organizationId} AND deleted_at IS NULL ORDER BY id`;
  assert.deepEqual(org.body.teams.map((t: { id: number }) => t.id), live.map((r) => r.id));
  assert.equal((await c.t.request('GET', `/api/organizations/${row!.uuid}/`)).status, 200);
  assert.equal((await c.t.request('GET', '/api/organizations/00000000-0000-0000-0000-000000000000/')).status, 404);
  // A key limited to one project sees only that one.
  const scoped = await c.t.createKey(['organization:read'], [c.t.projectId]);
  assert.deepEqual((await c.t.request('GET', '/api/organizations/@current/', { key: scoped })).body.teams.map((t: { id: number }) => t.id), [c.t.projectId]);
});

test('/api/environments/<id>/… answers as /api/projects/<id>/…', async () => {
  const env = `/api/environments/${c.t.projectId}`;
  const proj = `/api/projects/${c.t.projectId}`;
  // The project itself.
  const a = await c.t.request('GET', `${env}/`);
  assert.equal(a.status, 200, a.text);
  assert.deepEqual(a.body, (await c.t.request('GET', `${proj}/`)).body);
  // Feature flags: a write through one prefix is read through the other.
  const made = await c.t.request('POST', `${env}/feature_flags/`, { body: { key: 'env-flag' } });
  assert.equal(made.status, 201, made.text);
  assert.equal((await c.t.request('GET', `${proj}/feature_flags/${made.body.id}/`)).body.key, 'env-flag');
  assert.deepEqual((await c.t.request('GET', `${env}/feature_flags/?search=env-flag`)).body, (await c.t.request('GET', `${proj}/feature_flags/?search=env-flag`)).body);
  // Cohorts and experiments lists, the local-evaluation feed.
  for (const path of ['/cohorts/', '/experiments/', '/feature_flags/local_evaluation/']) {
    const e = await c.t.request('GET', env + path);
    assert.equal(e.status, 200, `${path}: ${e.text}`);
    assert.deepEqual(e.body, (await c.t.request('GET', proj + path)).body, path);
  }
  // The same checks: scope, project access, @current, unknown ids, 405.
  const flagsRead = await c.t.createKey(['feature_flag:read']);
  assert.equal((await c.t.request('POST', `${env}/feature_flags/`, { key: flagsRead, body: { key: 'x' } })).status, 403);
  assert.equal((await c.t.request('GET', '/api/environments/999999/feature_flags/')).status, 404);
  assert.equal((await c.t.request('GET', `/api/environments/@current/feature_flags/${made.body.id}/`)).body.key, 'env-flag');
  assert.equal((await c.t.request('GET', `/api/environments/@current/?token=${c.t.projectKey}`)).body.id, c.t.projectId);
  assert.equal((await c.t.request('PUT', `${env}/feature_flags/local_evaluation/`)).status, 405);
});
