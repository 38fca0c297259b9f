/**
 * The persons API over real HTTP and Postgres, with a real evaluation node for what must reach
 * nodes: property changes, splits and deletes travel the change log, and the node's /flags
 * answers (which read stored person properties) follow. List filters and offset paging, shapes,
 * errors, scopes and tenancy.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import type { NodeService } from '../../../src/eval-node/service.js';
import { seedPersons } from '../../support/seed-bulk.js';
import { waitFor } from '../../support/wait.js';
import { createFlag, flags, startCluster, waitReady, type SystemCluster } from '../../system/support.js';

let c: SystemCluster;
let node: NodeService;
let base: string;
let otherProject: number;
const BULK = 250;
const FLAG = 'plan-pro';

async function ingest(projectId: number, event: string, distinctId: string, properties: Record<string, unknown>): Promise<void> {
  await ingestEvents(c.t.db.sql, [{ uuid: crypto.randomUUID(), project_id: projectId, event, distinct_id: distinctId, properties, timestamp: new Date().toISOString() }]);
}

before(async () => {
  c = await startCluster();
  const t = c.t;
  base = `/api/projects/${t.projectId}/persons`;
  const [p2] = await t.db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token)
    VALUES (${t.organizationId}, 'second', ${`phc_${crypto.randomUUID().replace(/-/g, '')}`}) RETURNING id`;
  otherProject = p2!.id;
  await ingest(t.projectId, '$pageview', 'anon-a', {});
  await ingest(t.projectId, '$identify', 'alice', { $anon_distinct_id: 'anon-a', $set: { email: 'alice@example.com', name: 'Alice Liddell', plan: 'free' } });
  await ingest(t.projectId, '$pageview', 'bob', { $set: { email: 'bob@corp.io', plan: 'free' } });
  await ingest(t.projectId, '$pageview', 'carol', { $set: { plan: 'pro' } });
  await ingest(otherProject, '$pageview', 'dave', { $set: { plan: 'pro' } });
  await seedPersons(t.db.sql, t.projectId, Array.from({ length: BULK }, (_, i) => ({ tier: i % 3 })), 'bulk-');
  await createFlag(c, { key: FLAG, filters: { groups: [{ properties: [{ key: 'plan', type: 'person', value: 'pro', operator: 'exact' }], rollout_percentage: 100 }] } });
  node = await c.startNode(c.tempDir());
  await waitReady(node.http.url);
  await waitFor('the node serves the flag with stored persons', async () => (await served('carol')) === true, { timeoutMs: 30_000 });
});
after(async () => { await c.close(); });

/** The node's answer for FLAG, evaluated with the person properties it stores. */
async function served(distinctId: string): Promise<boolean | undefined> {
  const r = await flags(node.http.url, c.t.projectKey, distinctId);
  assert.equal(r.status, 200, r.text);
  return r.body.flags[FLAG]?.enabled as boolean | undefined;
}
async function get(path: string, key?: string): Promise<any> {
  const r = await c.t.request('GET', path, key === undefined ? {} : { key });
  assert.equal(r.status, 200, r.text);
  return r.body;
}
const q = (v: unknown) => encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v));
async function byDistinctId(d: string): Promise<any> {
  const r = (await get(`${base}/?distinct_id=${q(d)}`)).results;
  assert.ok(r.length <= 1);
  return r[0];
}

test('a person has PostHog\'s fields; list filters by search, distinct id, email and properties', async () => {
  const alice = await byDistinctId('anon-a');
  assert.deepEqual(Object.keys(alice).sort(), ['created_at', 'distinct_ids', 'id', 'last_seen_at', 'name', 'properties', 'uuid']);
  assert.equal(alice.name, 'alice@example.com');
  assert.deepEqual(alice.distinct_ids, ['alice', 'anon-a']);
  assert.equal(alice.properties.plan, 'free');
  assert.match(alice.uuid, /^[0-9a-f-]{36}$/);
  const carol = await byDistinctId('carol');
  assert.equal(carol.name, 'carol', 'no display property: the distinct id');
  const uuids = async (query: string) => (await get(`${base}/?${query}`)).results.map((p: any) => p.uuid).sort();
  assert.deepEqual(await uuids('search=ALICE@EXAMPLE'), [alice.uuid]);
  assert.deepEqual(await uuids('search=liddell'), [alice.uuid]);
  assert.deepEqual(await uuids('search=anon-a'), [alice.uuid]);
  assert.deepEqual(await uuids(`search=${carol.uuid}`), [carol.uuid]);
  assert.deepEqual(await uuids('email=bob%40corp.io'), [(await byDistinctId('bob')).uuid]);
  assert.deepEqual(await uuids(`properties=${q([{ key: 'plan', value: 'pro', type: 'person' }])}`), [carol.uuid]);
  assert.equal((await get(`${base}/?limit=500&properties=${q([{ key: 'tier', value: '0', type: 'person' }])}`)).results.length,
    Array.from({ length: BULK }, (_, i) => i % 3).filter((x) => x === 0).length);
  assert.equal(await byDistinctId('nobody'), undefined);
  assert.equal(await byDistinctId('dave'), undefined, 'another project\'s person');
  const bad = await c.t.request('GET', `${base}/?properties=${q([{ key: 'id', value: 1, type: 'cohort' }])}`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.attr, 'properties');
});

test('offset pages cover every person once, newest first', async () => {
  const seen: any[] = [];
  let url: string | null = `${base}/?limit=40`;
  let pages = 0;
  while (url) {
    const page: any = await get(url.startsWith('http') ? new URL(url).pathname + new URL(url).search : url);
    if (pages > 0) assert.ok(page.previous, 'previous link after the first page');
    else assert.equal(page.previous, null);
    seen.push(...page.results);
    url = page.next;
    pages++;
  }
  const [{ n }] = await c.t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM persons WHERE project_id = ${c.t.projectId}`;
  assert.equal(seen.length, n);
  assert.equal(new Set(seen.map((p) => p.uuid)).size, n);
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i].id < seen[i - 1].id);
});

test('retrieve by id or uuid; other projects\' persons are not found', async () => {
  const bob = await byDistinctId('bob');
  assert.deepEqual(await get(`${base}/${bob.id}/`), bob);
  assert.deepEqual(await get(`${base}/${bob.uuid}/`), bob);
  const garbage = await c.t.request('GET', `${base}/bob/`);
  assert.equal(garbage.status, 400);
  assert.match(garbage.body.detail, /does not look like a personID.*distinct_id=bob/);
  const dave = (await get(`/api/projects/${otherProject}/persons/?distinct_id=dave`)).results[0];
  for (const id of [dave.id, dave.uuid]) {
    const r = await c.t.request('GET', `${base}/${id}/`);
    assert.equal(r.status, 404);
    assert.deepEqual([r.body.type, r.body.code], ['invalid_request', 'not_found']);
    assert.equal((await c.t.request('PATCH', `${base}/${id}/`, { body: { properties: { plan: 'x' } } })).status, 404);
    assert.equal((await c.t.request('DELETE', `${base}/${id}/`)).status, 404);
  }
  assert.equal((await get(`/api/projects/${otherProject}/persons/${dave.uuid}/`)).properties.plan, 'pro', 'untouched');
});

test('property changes reach the node: PATCH, delete_property, update_property', async () => {
  const alice = await byDistinctId('alice');
  assert.equal(await served('alice'), false);
  const patched = await c.t.request('PATCH', `${base}/${alice.uuid}/`, { body: { properties: { plan: 'pro' } } });
  assert.equal(patched.status, 202, patched.text);
  const after = await get(`${base}/${alice.id}/`);
  assert.deepEqual(after.properties, { email: 'alice@example.com', name: 'Alice Liddell', plan: 'pro' });
  await waitFor('the node sees plan=pro', async () => (await served('alice')) === true && (await served('anon-a')) === true, { timeoutMs: 15_000 });

  const unset = await c.t.request('POST', `${base}/${alice.id}/delete_property/`, { body: { $unset: 'plan' } });
  assert.equal(unset.status, 201);
  assert.deepEqual(unset.body, { success: true });
  assert.equal((await get(`${base}/${alice.id}/`)).properties.plan, undefined);
  await waitFor('the node sees plan removed', async () => (await served('alice')) === false, { timeoutMs: 15_000 });

  assert.equal((await c.t.request('POST', `${base}/${alice.id}/update_property/`, { body: { key: 'plan', value: 'pro' } })).status, 202);
  await waitFor('the node sees plan=pro again', async () => (await served('anon-a')) === true, { timeoutMs: 15_000 });

  for (const [path, body, attr] of [
    [`${base}/${alice.id}/`, {}, 'properties'], [`${base}/${alice.id}/`, { properties: 'pro' }, 'properties'],
    [`${base}/${alice.id}/update_property/`, { key: 'plan' }, 'value'], [`${base}/${alice.id}/delete_property/`, {}, '$unset'],
  ] as const) {
    const r = await c.t.request(path.endsWith('property/') ? 'POST' : 'PATCH', path, { body });
    assert.equal(r.status, 400, path);
    assert.equal(r.body.attr, attr);
  }
});

test('split gives each other distinct id a person of its own, and the node follows', async () => {
  const alice = await byDistinctId('alice');
  assert.equal(alice.properties.plan, 'pro');
  await waitFor('anon-a is served as alice', async () => (await served('anon-a')) === true, { timeoutMs: 15_000 });
  const bad = await c.t.request('POST', `${base}/${alice.id}/split/`, { body: { distinct_ids_to_split: ['someone-else'] } });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.attr, 'distinct_ids_to_split');
  const r = await c.t.request('POST', `${base}/${alice.id}/split/`, { body: { main_distinct_id: 'alice' } });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.body, { success: true });
  const kept = await get(`${base}/${alice.uuid}/`);
  assert.deepEqual(kept.distinct_ids, ['alice']);
  assert.equal(kept.properties.plan, 'pro');
  const anon = await byDistinctId('anon-a');
  assert.notEqual(anon.uuid, alice.uuid);
  assert.deepEqual([anon.distinct_ids, anon.properties], [['anon-a'], {}]);
  await waitFor('the node serves anon-a as its own person', async () => (await served('anon-a')) === false, { timeoutMs: 15_000 });
  assert.equal(await served('alice'), true);
});

test('DELETE with delete_events removes the person, its events, and its node state', async () => {
  const carol = await byDistinctId('carol');
  assert.equal(await served('carol'), true);
  const events = await get(`/api/projects/${c.t.projectId}/events/?distinct_id=carol`);
  assert.equal(events.results.length, 1);
  const bobEvents = (await get(`/api/projects/${c.t.projectId}/events/?distinct_id=bob`)).results.length;
  const r = await c.t.request('DELETE', `${base}/${carol.uuid}/?delete_events=true`);
  assert.equal(r.status, 202, r.text);
  assert.equal((await c.t.request('GET', `${base}/${carol.uuid}/`)).status, 404);
  assert.equal(await byDistinctId('carol'), undefined);
  assert.deepEqual((await get(`/api/projects/${c.t.projectId}/events/?distinct_id=carol`)).results, []);
  assert.equal((await get(`/api/projects/${c.t.projectId}/events/?distinct_id=bob`)).results.length, bobEvents, 'others\' events stay');
  await waitFor('the node forgets carol', async () => (await served('carol')) === false, { timeoutMs: 15_000 });
  // A later event of the distinct id creates a new person.
  await ingest(c.t.projectId, '$pageview', 'carol', {});
  const again = await byDistinctId('carol');
  assert.notEqual(again.uuid, carol.uuid);
  assert.deepEqual(again.properties, {});
  // Without delete_events, the events stay.
  const bob = await byDistinctId('bob');
  assert.equal((await c.t.request('DELETE', `${base}/${bob.id}/`)).status, 202);
  assert.equal((await get(`/api/projects/${c.t.projectId}/events/?distinct_id=bob`)).results.length, bobEvents);
});

test('keys need person:read / person:write on the project', async () => {
  const any = (await get(`${base}/?limit=1`)).results[0];
  const reader = await c.t.createKey(['person:read']);
  assert.equal((await c.t.request('GET', `${base}/${any.id}/`, { key: reader })).status, 200);
  const denied = await c.t.request('PATCH', `${base}/${any.id}/`, { key: reader, body: { properties: { a: 1 } } });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.detail, "API key missing required scope 'person:write'");
  assert.equal((await c.t.request('DELETE', `${base}/${any.id}/`, { key: reader })).status, 403);
  assert.equal((await c.t.request('GET', `${base}/`, { key: await c.t.createKey(['query:read']) })).status, 403);
  const elsewhere = await c.t.createKey(['person:write'], [otherProject]);
  assert.equal((await c.t.request('GET', `${base}/`, { key: elsewhere })).status, 403);
  assert.equal((await c.t.request('DELETE', `${base}/${any.id}/`, { key: elsewhere })).status, 403);
  assert.equal((await get(`${base}/${any.id}/`)).id, any.id, 'still there');
});
