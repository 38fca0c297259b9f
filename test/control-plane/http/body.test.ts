/** Body handling of the management HTTP server, through a real server with an echo route. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/log.js';
import { startHttpServer, type RunningHttp } from '../../../src/control-plane/http/server.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { bootstrap } from '../../../src/control-plane/bootstrap.js';
import { newPersonalApiKey } from '../../../src/control-plane/keys/tokens.js';

const LIMIT = 4096;
let db: TestDatabase;
let http: RunningHttp;
let key: string;

before(async () => {
  db = await createTestDatabase();
  key = newPersonalApiKey();
  const config = testConfig({ bootstrapPersonalApiKey: key, maxApiBodyBytes: LIMIT });
  await bootstrap(db.sql, config);
  const deps = { sql: db.sql, config, log: createLogger('silent') };
  http = await startHttpServer(deps, [
    { method: 'POST', path: '/echo', scope: null, handler: async (ctx) => ({ status: 200, body: { got: ctx.body ?? null } }) },
    { method: 'GET', path: '/boom', scope: null, handler: async () => { throw new Error('secret internals'); } },
  ], { ready: async () => true, metrics: async () => '' }, 0);
});
after(async () => { await http.close(); await db.drop(); });

async function post(body: BodyInit, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  const res = await fetch(`${http.url}/echo`, { method: 'POST', headers: { authorization: `Bearer ${key}`, ...headers }, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

test('valid JSON reaches the handler', async () => {
  assert.deepEqual(await post('{"a":[1,2]}'), { status: 200, body: { got: { a: [1, 2] } } });
});

test('malformed JSON → 400 parse_error', async () => {
  const r = await post('{"a":');
  assert.equal(r.status, 400);
  assert.equal(r.body.type, 'invalid_request');
  assert.equal(r.body.code, 'parse_error');
  assert.match(r.body.detail, /^JSON parse error - /);
});

test('non-JSON content type → 415', async () => {
  const r = await post('a=b', { 'content-type': 'application/x-www-form-urlencoded' });
  assert.equal(r.status, 415);
  assert.equal(r.body.code, 'unsupported_media_type');
});

test('body over the limit → 413, declared or streamed, and the server keeps serving', async () => {
  const big = JSON.stringify({ x: 'y'.repeat(LIMIT * 4) });
  const r = await post(big);
  assert.equal(r.status, 413);
  assert.equal(r.body.code, 'payload_too_large');
  const stream = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(big)); c.close(); } });
  const r2 = await fetch(`${http.url}/echo`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: stream, duplex: 'half' } as RequestInit);
  assert.equal(r2.status, 413);
  assert.deepEqual(await post('{"ok":true}'), { status: 200, body: { got: { ok: true } } });
});

test('an unexpected error → generic 500 without internals', async () => {
  const res = await fetch(`${http.url}/boom`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(res.status, 500);
  const body = await res.json() as Record<string, unknown>;
  assert.deepEqual(body, { type: 'server_error', code: 'error', detail: 'A server error occurred.', attr: null });
  assert.equal(JSON.stringify(body).includes('secret'), false);
});
