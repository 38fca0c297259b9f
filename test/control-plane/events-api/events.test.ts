/**
 * GET /api/projects/:id/events/ and /events/:uuid/ over real HTTP and Postgres: PostHog's shape,
 * filters, keyset paging through `next` over 5,000 events with many shared timestamps (no
 * duplicate, no gap, strictly newest-first), errors and tenancy.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { ensureEventPartitions } from '../../../src/control-plane/ingestion/event-partitions.js';

let t: TestControlPlane;
let base: string;
let otherProject: number;
const now = Date.now();
const at = (minutesAgo: number) => new Date(now - minutesAgo * 60_000).toISOString();
const BULK = 5000;
/** Distinct timestamps the bulk events share (about 7 events per instant). */
const BULK_INSTANTS = 700;
const ids = { anonView: crypto.randomUUID(), identify: crypto.randomUUID(), buy: crypto.randomUUID(), other: crypto.randomUUID(), elsewhere: crypto.randomUUID() };

before(async () => {
  t = await startTestControlPlane();
  base = `/api/projects/${t.projectId}/events`;
  const [p2] = await t.db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token)
    VALUES (${t.organizationId}, 'second', ${`phc_${crypto.randomUUID().replace(/-/g, '')}`}) RETURNING id`;
  otherProject = p2!.id;
  const ev = (uuid: string, event: string, distinct_id: string, properties: Record<string, unknown>, minutesAgo: number, project = t.projectId) =>
    ({ uuid, project_id: project, event, distinct_id, properties, timestamp: at(minutesAgo) });
  // anon-1 views a page, then identifies as alice (merging anon-1's person into alice's), then buys.
  await ingestEvents(t.db.sql, [ev(crypto.randomUUID(), '$pageview', 'alice', { $set: { email: 'alice@example.com', plan: 'pro' } }, 30)]);
  await ingestEvents(t.db.sql, [
    ev(ids.anonView, '$pageview', 'anon-1', { $current_url: 'https://example.com/a', $elements_chain: 'a:href="/x"' }, 20),
    ev(ids.other, '$pageview', 'bob', { $current_url: 'https://example.com/b' }, 19),
  ]);
  await ingestEvents(t.db.sql, [ev(ids.identify, '$identify', 'alice', { $anon_distinct_id: 'anon-1' }, 10)]);
  await ingestEvents(t.db.sql, [ev(ids.buy, 'purchase', 'alice', { amount: 42, currency: 'EUR' }, 5)]);
  await ingestEvents(t.db.sql, [ev(ids.elsewhere, '$pageview', 'alice', {}, 5, otherProject)]);
  // Bulk: 5,000 events, older than the ones above, on 700 instants (ms precision) so most share theirs.
  const start = now - 3 * 86_400_000;
  await ensureEventPartitions(t.db.sql, [new Date(start), new Date(now)]);
  await t.db.sql`INSERT INTO events (project_id, uuid, event, distinct_id, properties, timestamp)
    SELECT ${t.projectId}, gen_random_uuid(), 'bulk', 'bulk-' || (g % 50), jsonb_build_object('g', g),
      to_timestamp((${start}::float8 + (g % ${BULK_INSTANTS}::int) * 1000.0) / 1000.0)
    FROM generate_series(1, ${BULK}::int) g`;
});
after(async () => { await t.close(); });

async function get(path: string, key?: string): Promise<any> {
  const r = await t.request('GET', path, key === undefined ? {} : { key });
  assert.equal(r.status, 200, r.text);
  return r.body;
}
/** Follows `next` links from `path`, returning every event in the order served. */
async function all(path: string): Promise<any[]> {
  const out: any[] = [];
  let url: string | null = path;
  while (url) {
    const page = await get(url.startsWith('http') ? new URL(url).pathname + new URL(url).search : url);
    out.push(...page.results);
    url = page.next;
  }
  return out;
}
/** Microseconds since the epoch of an ISO timestamp with at most ms precision. */
const micros = (iso: string) => Date.parse(iso) * 1000;

test('an event has PostHog\'s fields, with the person its distinct id belongs to now', async () => {
  const e = await get(`${base}/${ids.anonView}/`);
  assert.deepEqual(Object.keys(e).sort(), ['distinct_id', 'elements', 'elements_chain', 'event', 'id', 'person', 'properties', 'timestamp']);
  assert.equal(e.id, ids.anonView);
  assert.equal(e.distinct_id, 'anon-1');
  assert.equal(e.event, '$pageview');
  assert.equal(e.properties.$current_url, 'https://example.com/a');
  assert.equal(e.elements_chain, 'a:href="/x"');
  assert.deepEqual(e.elements, []);
  // Python isoformat of the UTC instant: microseconds, +00:00.
  assert.match(e.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?\+00:00$/);
  assert.equal(Date.parse(e.timestamp), Date.parse(at(20)));
  // anon-1 was merged into alice: the person shown is alice's, with its display properties only.
  assert.deepEqual(e.person, { is_identified: true, distinct_ids: ['alice'], properties: { email: 'alice@example.com' } });
  const bob = await get(`${base}/${ids.other}/`);
  assert.deepEqual(bob.person.properties, {});
});

test('the list is newest first and filters by event, distinct id, person, properties and time', async () => {
  const first = await get(`${base}/?limit=4`);
  assert.deepEqual(first.results.map((e: any) => e.id), [ids.buy, ids.identify, ids.other, ids.anonView]);
  assert.ok(first.next.startsWith('http'), 'next is absolute');
  assert.deepEqual((await get(`${base}/?event=purchase`)).results.map((e: any) => e.id), [ids.buy]);
  assert.equal((await get(`${base}/?event=purchase`)).next, null);
  assert.deepEqual((await get(`${base}/?distinct_id=bob`)).results.map((e: any) => e.id), [ids.other]);
  // alice's person: its own events and those of anon-1's person, merged into it.
  const alice = (await get(`/api/projects/${t.projectId}/persons/?distinct_id=alice`)).results[0];
  const byPerson = (await get(`${base}/?person_id=${alice.uuid}`)).results.map((e: any) => e.id);
  assert.deepEqual(byPerson.slice(0, 3), [ids.buy, ids.identify, ids.anonView]);
  assert.equal(byPerson.length, 4);
  assert.deepEqual((await get(`${base}/?person_id=${alice.id}`)).results.map((e: any) => e.id), byPerson);
  assert.deepEqual((await get(`${base}/?person_id=${crypto.randomUUID()}`)).results, []);
  const props = encodeURIComponent(JSON.stringify([{ key: 'amount', value: 40, operator: 'gt', type: 'event' }]));
  assert.deepEqual((await get(`${base}/?properties=${props}`)).results.map((e: any) => e.id), [ids.buy]);
  const group = encodeURIComponent(JSON.stringify({ type: 'OR', values: [{ key: '$current_url', value: 'example.com/b', operator: 'icontains' }, { key: 'currency', value: 'EUR' }] }));
  assert.deepEqual((await get(`${base}/?properties=${group}`)).results.map((e: any) => e.id), [ids.buy, ids.other]);
  const window = `after=${encodeURIComponent(at(25))}&before=${encodeURIComponent(at(8))}`;
  assert.deepEqual((await get(`${base}/?${window}`)).results.map((e: any) => e.id), [ids.identify, ids.other, ids.anonView]);
});

test('next links page 5,000 events sharing timestamps with no duplicate and no gap', async () => {
  const served = await all(`${base}/?event=bulk&limit=137`);
  assert.equal(served.length, BULK);
  assert.equal(new Set(served.map((e) => e.id)).size, BULK, 'no duplicates');
  const stored = await t.db.sql<{ u: string }[]>`SELECT uuid::text AS u FROM events WHERE project_id = ${t.projectId} AND event = 'bulk'`;
  assert.deepEqual(served.map((e) => e.id).sort(), stored.map((r) => r.u).sort(), 'no gaps');
  assert.equal(new Set(served.map((e) => e.timestamp)).size, BULK_INSTANTS, 'timestamps are shared, so pages cut through ties');
  for (let i = 1; i < served.length; i++) {
    const a = served[i - 1], b = served[i];
    const older = micros(b.timestamp) < micros(a.timestamp) || (micros(b.timestamp) === micros(a.timestamp) && b.id < a.id);
    assert.ok(older, `event ${i} is older than the one before it`);
  }
  // Unfiltered, in larger pages: every event of the project exactly once, none of another project's.
  const everything = await all(`${base}/?limit=700`);
  assert.equal(everything.length, BULK + 5);
  assert.equal(new Set(everything.map((e) => e.id)).size, BULK + 5);
  assert.ok(!everything.some((e) => e.id === ids.elsewhere));
});

test('bad parameters answer 400 in PostHog\'s shape', async () => {
  const bad = async (query: string, attr: string | null) => {
    const r = await t.request('GET', `${base}/?${query}`);
    assert.equal(r.status, 400, query);
    assert.equal(r.body.type, 'validation_error');
    assert.equal(r.body.attr, attr);
    assert.ok(typeof r.body.detail === 'string' && r.body.detail.length > 0);
  };
  await bad('limit=abc', 'limit');
  await bad('limit=0', 'limit');
  await bad('limit=10001', 'limit');
  await bad('after=yesterday', 'after');
  await bad('before=2024-13-45T00:00:00Z', 'before');
  await bad('properties=%7Bnot%20json', 'properties');
  await bad(`properties=${encodeURIComponent(JSON.stringify([{ key: 'x', value: 1, type: 'cohort' }]))}`, 'properties');
  await bad('before_uuid=not-a-uuid&before=2024-01-01T00:00:00Z', 'before_uuid');
  await bad('person_id=not-an-id', null);
  const r = await t.request('GET', `${base}/not-a-uuid/`);
  assert.equal(r.status, 400);
  assert.deepEqual([r.body.type, r.body.code, r.body.detail], ['validation_error', 'invalid', 'Invalid UUID']);
});

test('another project\'s event is not found, and keys need query:read on the project', async () => {
  const missing = crypto.randomUUID();
  const r = await t.request('GET', `${base}/${missing}/`);
  assert.equal(r.status, 404);
  assert.deepEqual(r.body, { type: 'invalid_request', code: 'not_found', detail: `No events exist for event UUID ${missing}`, attr: null });
  assert.equal((await t.request('GET', `${base}/${ids.elsewhere}/`)).status, 404);
  assert.equal((await get(`/api/projects/${otherProject}/events/${ids.elsewhere}/`)).id, ids.elsewhere);
  const scopedElsewhere = await t.createKey(['query:read'], [otherProject]);
  assert.equal((await t.request('GET', `${base}/`, { key: scopedElsewhere })).status, 403);
  assert.equal((await t.request('GET', `${base}/${ids.buy}/`, { key: scopedElsewhere })).status, 403);
  const noScope = await t.createKey(['feature_flag:read']);
  const denied = await t.request('GET', `${base}/`, { key: noScope });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.detail, "API key missing required scope 'query:read'");
  assert.equal((await t.request('GET', `${base}/?limit=1`, { key: await t.createKey(['query:read']) })).status, 200);
});
