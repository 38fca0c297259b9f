/**
 * Pool mode (Piscina workers reading the LMDB store read-only) answers exactly as inline mode,
 * for {@link USERS} users, across response shapes, groups and GeoIP, with every outcome of the
 * flags that depend on the user among them.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { keepAliveClient } from '../../support/keep-alive.js';
import { startTestNode, postFlags, standardFlags, worldChanges, PROJECT_TOKEN, type TestNode } from './fixture.js';
import { FlagsEngine } from '../../../src/eval-node/pool/engine.js';
import { NO_GEOIP } from '../../../src/eval-node/geoip/index.js';

function strip(text: string): unknown {
  const b = JSON.parse(text);
  delete b.requestId;
  delete b.evaluatedAt;
  return b;
}

/**
 * One inline node and one pool node (2 workers) on the standard world, shared by the tests: every
 * test only reads them. Each fixture allocates its own flag ids (standardFlags() per call):
 * answers are compared without metadata.id, everything else byte for byte.
 */
let inline: TestNode;
let pool: TestNode;

/**
 * Users asked of both nodes, in batches of 50: each shape, email, groups, plan and GeoIP case
 * comes up dozens of times, and every outcome of each user-dependent flag (asserted).
 */
const USERS = 400;
before(async () => { [inline, pool] = await Promise.all([startTestNode({ evalThreads: 0 }), startTestNode({ evalThreads: 2 })]); });
after(async () => { await Promise.all([pool?.close(), inline?.close()]); });

test(`pool and inline give identical answers for ${USERS} users`, async () => {
  assert.equal(pool.http.mode, 'pool');
  assert.equal(inline.http.mode, 'inline');
  const paths = ['/flags?v=2', '/flags', '/decide/?v=2'];
  // Requests over reused connections (a new one per request cost twice the CPU).
  const http = keepAliveClient(50);
  /** `key=variant-or-enabled` of every /flags?v=2 answer compared. */
  const outcomes = new Set<string>();
  try {
    for (let batch = 0; batch < USERS; batch += 50) {
      const ids = Array.from({ length: 50 }, (_, i) => batch + i);
      const bodies = ids.map((n) => ({
        api_key: PROJECT_TOKEN, distinct_id: `user-${n}`,
        person_properties: { email: n % 2 ? `u${n}@example.com` : `u${n}@mail.test` },
        groups: n % 3 ? { organization: `org-${n % 7}` } : {},
        group_properties: { organization: { plan: n % 4 ? 'pro' : 'free' } },
      }));
      const headers = (n: number): Record<string, string> => (n % 5 === 0 ? { 'x-forwarded-for': '81.2.69.142' } : {});
      const [a, b] = await Promise.all([
        Promise.all(bodies.map((body, i) => http.post(inline.url + paths[i % 3], body, headers(ids[i]!)))),
        Promise.all(bodies.map((body, i) => http.post(pool.url + paths[i % 3], body, headers(ids[i]!)))),
      ]);
      for (let i = 0; i < bodies.length; i++) {
        assert.equal(a[i]!.status, 200);
        assert.equal(b[i]!.status, 200);
        assert.deepEqual(normalizeIds(strip(b[i]!.text)), normalizeIds(strip(a[i]!.text)), `user-${ids[i]}`);
        if (i % 3 === 0) {
          for (const [k, f] of Object.entries(a[i]!.body.flags as Record<string, { enabled: boolean; variant: string | null }>)) outcomes.add(`${k}=${f.variant ?? f.enabled}`);
        }
      }
    }
  } finally {
    http.close();
  }
  for (const o of ['email-flag=true', 'email-flag=false', 'mv=control', 'mv=test', 'rollout-50=true', 'rollout-50=false',
    'group-flag=true', 'group-flag=false', 'geo-flag=true', 'geo-flag=false']) {
    assert.ok(outcomes.has(o), `${o} among the answers compared: ${[...outcomes].join(', ')}`);
  }
});

/** Flag ids differ between the two fixtures (allocated per call): drop them. */
function normalizeIds(b: any): unknown {
  if (b.flags) for (const k of Object.keys(b.flags)) delete b.flags[k].metadata.id;
  return b;
}


test('a request too deep to parse is a 400 in both modes; its batch-mates are unaffected', async () => {
  const deep = '['.repeat(200_000) + ']'.repeat(200_000);
  const bad = `{"api_key":"${PROJECT_TOKEN}","distinct_id":"deep","person_properties":{"email":${deep}}}`;
  const bodies = Array.from({ length: 20 }, (_, i) => (i === 5 ? bad : JSON.stringify({ api_key: PROJECT_TOKEN, distinct_id: `u${i}` })));
  const [a, b] = await Promise.all([
    Promise.all(bodies.map((body) => postFlags(pool, body))),
    Promise.all(bodies.map((body) => postFlags(inline, body))),
  ]);
  for (let i = 0; i < bodies.length; i++) {
    assert.equal(a[i]!.status, i === 5 ? 400 : 200, `pool request ${i}`);
    assert.equal(b[i]!.status, a[i]!.status, `inline request ${i}`);
    assert.deepEqual(normalizeIds(strip(a[i]!.text)), normalizeIds(strip(b[i]!.text)), `request ${i}`);
  }
});

test('needsGeoip: true only for projects whose definitions read $geoip_* properties', async () => {
  const withGeo = inline; // the standard world: geo-flag reads $geoip_country_code
  const without = await startTestNode({ changes: worldChanges(standardFlags().filter((f) => f.key !== 'geo-flag')) });
  try {
    assert.equal(new FlagsEngine(withGeo.store, NO_GEOIP, true).needsGeoip(1), true);
    assert.equal(new FlagsEngine(without.store, NO_GEOIP, false).needsGeoip(1), false);
  } finally {
    await without.close();
  }
});
