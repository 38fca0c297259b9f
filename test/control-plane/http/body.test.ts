/** Body handling of the management HTTP server, through a real server with an echo route. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import nodeHttp from 'node:http';
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
    {
      method: 'POST', path: '/typed/:code', scope: null,
      schema: {
        summary: 'schema-validated echo',
        params: { type: 'object', properties: { code: { type: 'string', pattern: '^[a-z]+$' } } },
        querystring: { type: 'object', properties: { limit: { type: 'integer', minimum: 1 } } },
        body: {
          type: 'object', required: ['name'],
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 10 }, active: { type: 'boolean' }, count: { type: 'integer', minimum: 1 },
            kind: { type: 'string', enum: ['a', 'b'] }, tags: { type: 'array', items: { type: 'string' } },
            nested: { type: 'object', properties: { ok: { type: 'boolean' } } }, note: { type: ['string', 'null'] }, strict: { type: 'string' },
          },
        },
      },
      handler: async (ctx) => ({ status: 200, body: { got: ctx.body, limit: ctx.query.get('limit') } }),
    },
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

/** A schema-validated request: status and body. */
async function typed(body: unknown, path = '/typed/abc') {
  const res = await fetch(`${http.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() as Record<string, unknown> };
}

const schemaCases: { name: string; body: unknown; path?: string; detail: string; attr: string | null; code: string }[] = [
  { name: 'a list body', body: [1], detail: 'Invalid data. Expected a dictionary, but got list.', attr: null, code: 'invalid_input' },
  { name: 'a null body', body: null, detail: 'Invalid data. Expected a dictionary, but got NoneType.', attr: null, code: 'invalid_input' },
  { name: 'a missing field', body: {}, detail: 'This field is required.', attr: 'name', code: 'required' },
  { name: 'a blank string', body: { name: '' }, detail: 'This field may not be blank.', attr: 'name', code: 'blank' },
  { name: 'a long string', body: { name: 'x'.repeat(11) }, detail: 'Ensure this field has no more than 10 characters.', attr: 'name', code: 'max_length' },
  { name: 'a non-boolean', body: { name: 'n', active: 'yes' }, detail: 'Must be a valid boolean.', attr: 'active', code: 'invalid' },
  { name: 'a non-integer', body: { name: 'n', count: 1.5 }, detail: 'A valid integer is required.', attr: 'count', code: 'invalid' },
  { name: 'below the minimum', body: { name: 'n', count: 0 }, detail: 'Ensure this value is greater than or equal to 1.', attr: 'count', code: 'min_value' },
  { name: 'not a choice', body: { name: 'n', kind: 'c' }, detail: '"c" is not a valid choice.', attr: 'kind', code: 'invalid_choice' },
  { name: 'not a list', body: { name: 'n', tags: 'a' }, detail: 'Expected a list of items but got type "str".', attr: 'tags', code: 'not_a_list' },
  { name: 'a bad list item', body: { name: 'n', tags: ['a', 3] }, detail: 'Not a valid string.', attr: 'tags__1', code: 'invalid' },
  { name: 'a nested field', body: { name: 'n', nested: { ok: 1 } }, detail: 'Must be a valid boolean.', attr: 'nested__ok', code: 'invalid' },
  { name: 'null where not allowed', body: { name: 'n', strict: null }, detail: 'This field may not be null.', attr: 'strict', code: 'null' },
  { name: 'a bad query parameter', body: { name: 'n' }, path: '/typed/abc?limit=abc', detail: 'A valid integer is required.', attr: 'limit', code: 'invalid' },
  { name: 'a query parameter below its minimum', body: { name: 'n' }, path: '/typed/abc?limit=0', detail: 'Ensure this value is greater than or equal to 1.', attr: 'limit', code: 'min_value' },
];

for (const c of schemaCases) {
  test(`schema validation: ${c.name} → 400 in DRF wording with attr`, async () => {
    const r = await typed(c.body, c.path);
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { type: 'validation_error', code: c.code, detail: c.detail, attr: c.attr });
  });
}

test('schema validation: a valid body reaches the handler unchanged (no coercion, nothing removed); nullable fields accept null', async () => {
  const body = { name: 'n', active: true, count: 3, extra: { kept: true }, note: null };
  const r = await typed(body, '/typed/abc?limit=5');
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { got: body, limit: '5' });
});

test('schema validation: an empty body is read as {} (DRF), so required fields are named', async () => {
  const res = await fetch(`${http.url}/typed/abc`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
  assert.equal(res.status, 400);
  assert.deepEqual(await res.json(), { type: 'validation_error', code: 'required', detail: 'This field is required.', attr: 'name' });
});

test('schema validation: a path parameter outside its pattern → 404', async () => {
  const r = await typed({ name: 'n' }, '/typed/ABC');
  assert.equal(r.status, 404);
  assert.equal(r.body.code, 'not_found');
});

test('a body without a content type is read as JSON; __proto__ keys are refused', async () => {
  // fetch always names a type for a string body, so this request is written with node:http.
  const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = nodeHttp.request(`${http.url}/echo`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-length': '7' } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => { text += c.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end('{"a":1}');
  });
  assert.equal(answer.status, 200);
  assert.deepEqual(JSON.parse(answer.text), { got: { a: 1 } });
  const r = await post('{"__proto__":{"admin":true}}');
  assert.equal(r.status, 400);
  assert.equal(r.body.code, 'parse_error');
});
