/** F1 list: filters, ordering, pagination walked to the end and back. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';

let t: TestControlPlane;
let base: string;
const OLD = '2020-01-01T00:00:00Z';

async function create(body: Record<string, unknown>): Promise<any> {
  const r = await t.request('POST', base, { body });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

async function keys(query: string): Promise<string[]> {
  const r = await t.request('GET', `${base}?limit=1000&${query}`);
  assert.equal(r.status, 200, r.text);
  return r.body.results.map((f: { key: string }) => f.key).sort();
}

const mv = { variants: [{ key: 'a', rollout_percentage: 50 }, { key: 'b', rollout_percentage: 50 }] };

before(async () => {
  t = await startTestControlPlane();
  base = `/api/projects/${t.projectId}/feature_flags/`;
  await create({ key: 'bool-on', name: 'Checkout Button', tags: ['web', 'checkout'] });
  await create({ key: 'bool-off', active: false, tags: ['web'], evaluation_runtime: 'server' });
  await create({ key: 'multi', filters: { groups: [{ properties: [], rollout_percentage: 50 }], multivariate: mv }, evaluation_runtime: 'client', tags: ['mobile'], evaluation_tags: ['mobile'] });
  await create({ key: 'remote', is_remote_configuration: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"a":1}' } } });
  // STALE: old, never called, fully rolled out (boolean, multivariate with a 100% variant, multivariate with an override).
  await create({ key: 'stale-bool', created_at: OLD, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
  await create({ key: 'stale-default', created_at: OLD });
  await create({ key: 'stale-variant', created_at: OLD, filters: { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: { variants: [{ key: 'a', rollout_percentage: 100 }, { key: 'b', rollout_percentage: 0 }] } } });
  await create({ key: 'stale-override', created_at: OLD, filters: { groups: [{ properties: [], rollout_percentage: 100, variant: 'b' }], multivariate: mv } });
  // STALE by usage: called more than 30 days ago.
  await create({ key: 'stale-called', last_called_at: '2021-06-01T00:00:00Z', filters: { groups: [{ properties: [{ key: 'email', type: 'person', value: 'x', operator: 'icontains' }], rollout_percentage: 10 }] } });
  // Not stale: old but partial rollout; old but inactive; recent and fully rolled out.
  await create({ key: 'old-partial', created_at: OLD, filters: { groups: [{ properties: [], rollout_percentage: 40 }] } });
  await create({ key: 'old-inactive', created_at: OLD, active: false });
  await create({ key: 'old-mv-split', created_at: OLD, filters: { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: mv } });
  const gone = await create({ key: 'deleted-one' });
  await t.request('PATCH', `${base}${gone.id}/`, { body: { deleted: true } });
});
after(async () => { await t.close(); });

test('list excludes soft-deleted flags and defaults to -created_at', async () => {
  const r = await t.request('GET', base);
  assert.equal(r.status, 200);
  assert.equal(r.body.count, 12);
  assert.ok(!r.body.results.some((f: { key: string }) => f.key === 'deleted-one'));
  const created = r.body.results.map((f: { created_at: string }) => Date.parse(f.created_at));
  assert.deepEqual(created, [...created].sort((a, b) => b - a));
  assert.equal(r.body.next, null);
  assert.equal(r.body.previous, null);
});

test('active=true / false / STALE', async () => {
  assert.deepEqual(await keys('active=false'), ['bool-off', 'old-inactive']);
  assert.ok(!(await keys('active=true')).includes('bool-off'));
  assert.deepEqual(await keys('active=STALE'), ['stale-bool', 'stale-called', 'stale-default', 'stale-override', 'stale-variant']);
  assert.deepEqual(await keys('active=nonsense'), ['bool-off', 'old-inactive'], 'any other value means false');
});

test('status field agrees with the STALE filter', async () => {
  const r = await t.request('GET', `${base}?limit=100`);
  const status = Object.fromEntries(r.body.results.map((f: { key: string; status: string }) => [f.key, f.status]));
  for (const k of ['stale-bool', 'stale-default', 'stale-variant', 'stale-override']) assert.equal(status[k], 'INACTIVE', `${k}: never called and over 30 days old → INACTIVE wins`);
  assert.equal(status['stale-called'], 'INACTIVE');
  assert.equal(status['bool-on'], 'ACTIVE');
});

test('type=boolean / multivariant / experiment / remote_config', async () => {
  assert.deepEqual(await keys('type=multivariant'), ['multi', 'old-mv-split', 'stale-override', 'stale-variant']);
  assert.ok((await keys('type=boolean')).includes('bool-on'));
  assert.ok(!(await keys('type=boolean')).includes('multi'));
  assert.deepEqual(await keys('type=experiment'), [], 'no experiments exist');
  assert.deepEqual(await keys('type=remote_config'), ['remote']);
  assert.equal((await keys('type=whatever')).length, 12, 'unknown type ignored');
});

test('search matches key or name, case-insensitively, with LIKE characters literal', async () => {
  assert.deepEqual(await keys('search=CHECKOUT'), ['bool-on']);
  assert.deepEqual(await keys('search=BOOL'), ['bool-off', 'bool-on', 'stale-bool']);
  assert.deepEqual(await keys('search=%25'), []);
  assert.deepEqual(await keys('search=_'), [], 'no key has an underscore');
});

test('tags (any), a value that is not a JSON list is 400; excluded_properties; evaluation_runtime with both→all', async () => {
  assert.deepEqual(await keys(`tags=${encodeURIComponent('["checkout","mobile"]')}`), ['bool-on', 'multi']);
  assert.deepEqual(await keys(`tags=${encodeURIComponent('["web"]')}`), ['bool-off', 'bool-on']);
  const bad = await t.request('GET', `${base}?tags=checkout`);
  assert.equal(bad.status, 400, 'PostHog fails with a 500 on a tags value that is not JSON; here a 400 names it');
  assert.equal(bad.body.attr, 'tags');
  const excluded = await keys(`excluded_properties=${encodeURIComponent('["bool-on","multi"]')}`);
  assert.equal(excluded.length, 10);
  assert.ok(!excluded.includes('bool-on') && !excluded.includes('multi'));
  const badExcluded = await t.request('GET', `${base}?excluded_properties=${encodeURIComponent('{bad')}`);
  assert.equal(badExcluded.status, 400);
  assert.equal(badExcluded.body.attr, 'excluded_properties');
  assert.deepEqual(await keys('evaluation_runtime=server'), ['bool-off']);
  assert.deepEqual(await keys('evaluation_runtime=client'), ['multi']);
  assert.equal((await keys('evaluation_runtime=both')).length, 10);
  assert.deepEqual(await keys('has_evaluation_tags=true'), ['multi']);
});

test('created_by_id', async () => {
  assert.equal((await keys(`created_by_id=${t.userId}`)).length, 12);
  assert.equal((await keys('created_by_id=999999')).length, 0);
  assert.equal((await keys('created_by_id=abc')).length, 0);
});

test('order: allow-listed fields ascending/descending; others → 400 attr order', async () => {
  const asc = (await t.request('GET', `${base}?order=key&limit=100`)).body.results.map((f: { key: string }) => f.key);
  assert.deepEqual(asc, [...asc].sort());
  const desc = (await t.request('GET', `${base}?order=-key&limit=100`)).body.results.map((f: { key: string }) => f.key);
  assert.deepEqual(desc, [...asc].reverse());
  for (const bad of ['filters', 'key;drop', '-password']) {
    const r = await t.request('GET', `${base}?order=${encodeURIComponent(bad)}`);
    assert.equal(r.status, 400, bad);
    assert.equal(r.body.attr, 'order');
  }
});

test('pagination: walk next to the end and previous back, absolute URLs, other params kept', async () => {
  const seen: number[] = [];
  let url: string | null = `${t.baseUrl}${base}?limit=5&search=`;
  let pages = 0;
  while (url) {
    const r = await t.request('GET', url.slice(t.baseUrl.length));
    assert.equal(r.status, 200);
    assert.equal(r.body.count, 12);
    seen.push(...r.body.results.map((f: { id: number }) => f.id));
    if (r.body.next) {
      assert.ok(r.body.next.startsWith('http://'), 'absolute');
      assert.match(r.body.next, /search=/);
    }
    url = r.body.next;
    pages++;
  }
  assert.equal(pages, 3);
  assert.equal(seen.length, 12);
  assert.equal(new Set(seen).size, 12);
  const last = await t.request('GET', `${base}?limit=5&offset=10`);
  const prev = await t.request('GET', last.body.previous.slice(t.baseUrl.length));
  assert.deepEqual(prev.body.results.map((f: { id: number }) => f.id), seen.slice(5, 10));
  const first = await t.request('GET', prev.body.previous.slice(t.baseUrl.length));
  assert.equal(new URL(prev.body.previous).searchParams.has('offset'), false);
  assert.deepEqual(first.body.results.map((f: { id: number }) => f.id), seen.slice(0, 5));
  assert.equal(first.body.previous, null);
});
