/**
 * Unknown personal API keys on a real control plane (small limit): each client address may fail
 * authentication SWITCHYARD_AUTH_FAILURES_PER_MINUTE times, then its requests answer 429 before
 * any lookup, so random keys cost a bounded number of database lookups (counted by the
 * control plane's lookup counter on /metrics); the same wrong key again is answered from memory;
 * a valid key from another address still works, a key created after its value was refused works
 * at once, and a revoked key is refused at once. Addresses are 127.0.0.x (Linux routes all of
 * 127/8 to loopback).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { createPersonalApiKey, revokePersonalApiKey } from '../../../src/control-plane/keys/store.js';
import { newPersonalApiKey } from '../../../src/control-plane/keys/tokens.js';

let t: TestControlPlane;
const LIMIT = 20;

/** GET /api/projects/ from `address` with `key`: status and parsed body. */
function get(address: string, key: string): Promise<{ status: number; body: any; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${t.baseUrl}/api/projects/`, { localAddress: address, agent: false, headers: { authorization: `Bearer ${key}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined, retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The control plane's count of key lookups in the database. */
async function lookups(): Promise<number> {
  const m = await t.request('GET', '/metrics', { key: null });
  const line = /^switchyard_personal_api_key_lookups_total (\d+)$/m.exec(m.text);
  assert.ok(line, 'the lookup counter is exposed');
  return Number(line[1]);
}

before(async () => { t = await startTestControlPlane({ authFailuresPerMinute: LIMIT, apiBurstRatePerMinute: 0, apiSustainedRatePerHour: 0 }); });
after(async () => { await t?.close(); });

test('random keys from one address: 401 up to the limit, then 429 without a lookup; lookups stay bounded', async () => {
  const before = await lookups();
  const statuses: number[] = [];
  for (let batch = 0; batch < 10; batch++) { // 30 requests at once, ten times
    const answers = await Promise.all(Array.from({ length: 30 }, () => get('127.0.0.2', newPersonalApiKey())));
    for (const a of answers) {
      statuses.push(a.status);
      if (a.status === 401) assert.equal(a.body.code, 'authentication_failed');
      else {
        assert.equal(a.status, 429);
        assert.deepEqual({ type: a.body.type, code: a.body.code }, { type: 'throttled_error', code: 'throttled' });
        assert.ok(Number(a.retryAfter) >= 1 && Number(a.retryAfter) <= 60, `Retry-After ${a.retryAfter}`);
      }
    }
  }
  const made = (await lookups()) - before;
  console.log(`300 random keys from one address: ${statuses.filter((s) => s === 401).length} × 401, ${statuses.filter((s) => s === 429).length} × 429, ${made} database lookups`);
  // Requests sent at once may all pass the check before the first failures are counted: the
  // overshoot is at most the requests in flight (one batch), and every lookup was a 401.
  const refused = statuses.filter((s) => s === 401).length;
  assert.ok(refused >= LIMIT && refused < LIMIT + 30, `${refused} answered 401`);
  assert.equal(made, refused, 'a lookup for each 401, none for a 429');
  // A throttled address is refused a key that has not authenticated here lately (it cannot be
  // told from a guess without a lookup) …
  const unseen = await t.createKey(['*']);
  assert.equal((await get('127.0.0.2', unseen)).status, 429);
  // … while another address with a valid key is served, and a key that authenticated lately
  // passes from the throttled address too (clients sharing an address with the guesser keep working).
  assert.equal((await get('127.0.0.3', t.personalKey)).status, 200);
  assert.equal((await get('127.0.0.2', t.personalKey)).status, 200);
});

test('the same wrong key again is answered from memory: one lookup, 401 each time', async () => {
  const wrong = newPersonalApiKey();
  const before = await lookups();
  for (let i = 0; i < 5; i++) assert.equal((await get('127.0.0.4', wrong)).status, 401);
  assert.equal((await lookups()) - before, 1);
});

test('a key created after its value was refused works at once; a revoked key is refused at once', async () => {
  const value = newPersonalApiKey();
  assert.equal((await get('127.0.0.5', value)).status, 401, 'unknown: refused and remembered');
  const created = await createPersonalApiKey(t.db.sql, { userId: t.userId, label: 'late', scopes: ['*'], value });
  assert.equal((await get('127.0.0.5', value)).status, 200, 'creation forgets the remembered miss');
  await revokePersonalApiKey(t.db.sql, created.id, null);
  assert.equal((await get('127.0.0.5', value)).status, 401);
});

test('a key that authenticated lately passes a throttled address but is still looked up: revoked, it fails at once', async () => {
  const value = newPersonalApiKey();
  const created = await createPersonalApiKey(t.db.sql, { userId: t.userId, label: 'vouched', scopes: ['*'], value });
  assert.equal((await get('127.0.0.6', value)).status, 200);
  for (let i = 0; i < LIMIT; i++) await get('127.0.0.6', newPersonalApiKey());
  assert.equal((await get('127.0.0.6', newPersonalApiKey())).status, 429, 'the address is throttled');
  assert.equal((await get('127.0.0.6', value)).status, 200, 'the vouched key passes');
  await revokePersonalApiKey(t.db.sql, created.id, null);
  assert.equal((await get('127.0.0.6', value)).status, 401, 'and is refused once revoked');
});
