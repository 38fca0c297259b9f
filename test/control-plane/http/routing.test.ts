/**
 * Routing of the management HTTP server, through a real server and real HTTP: trailing slashes,
 * literal segments over parameters, 405 with Allow among the methods of the same pattern,
 * unknown and malformed paths, duplicate routes refused at start-up.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/log.js';
import { startHttpServer, type RunningHttp } from '../../../src/control-plane/http/server.js';
import type { Route } from '../../../src/control-plane/http/types.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { bootstrap } from '../../../src/control-plane/bootstrap.js';
import { newPersonalApiKey } from '../../../src/control-plane/keys/tokens.js';

let db: TestDatabase;
let http: RunningHttp;
let key: string;
let projectId: number;

const echo = (name: string): Route['handler'] => async (ctx) => ({ status: 200, body: { route: name, params: ctx.params } });
const routes: Route[] = [
  { method: 'GET', path: '/api/projects/:project_id/feature_flags', scope: null, handler: echo('list') },
  { method: 'POST', path: '/api/projects/:project_id/feature_flags', scope: null, handler: echo('create') },
  { method: 'GET', path: '/api/projects/:project_id/feature_flags/:id', scope: null, handler: echo('detail') },
  { method: 'DELETE', path: '/api/projects/:project_id/feature_flags/:id', scope: null, handler: echo('delete') },
  { method: 'GET', path: '/api/projects/:project_id/feature_flags/activity', scope: null, handler: echo('activity') },
];

before(async () => {
  db = await createTestDatabase();
  key = newPersonalApiKey();
  const config = testConfig({ bootstrapPersonalApiKey: key });
  projectId = (await bootstrap(db.sql, config)).projectId;
  http = await startHttpServer({ sql: db.sql, config, log: createLogger('silent') }, routes, { ready: async () => true, metrics: async () => '' }, 0);
});
after(async () => { await http.close(); await db.drop(); });

async function call(method: string, path: string) {
  const res = await fetch(http.url + path.replace('{p}', String(projectId)), { method, headers: { authorization: `Bearer ${key}` } });
  const text = await res.text();
  return { status: res.status, allow: res.headers.get('allow'), body: text ? JSON.parse(text) : undefined };
}

const cases: { name: string; method: string; path: string; status: number; route?: string; params?: Record<string, string>; allow?: string }[] = [
  { name: 'list with trailing slash', method: 'GET', path: '/api/projects/{p}/feature_flags/', status: 200, route: 'list' },
  { name: 'list without trailing slash', method: 'GET', path: '/api/projects/{p}/feature_flags', status: 200, route: 'list' },
  { name: 'literal beats parameter', method: 'GET', path: '/api/projects/{p}/feature_flags/activity', status: 200, route: 'activity' },
  { name: 'parameter', method: 'GET', path: '/api/projects/{p}/feature_flags/42/', status: 200, route: 'detail', params: { id: '42' } },
  { name: 'wrong method → 405 with allow', method: 'DELETE', path: '/api/projects/{p}/feature_flags/', status: 405, allow: 'GET, POST' },
  { name: 'a literal path does not fall through to the parameter route for another method', method: 'DELETE', path: '/api/projects/{p}/feature_flags/activity', status: 405, allow: 'GET' },
  { name: 'unknown path', method: 'GET', path: '/api/nothing', status: 404 },
  { name: 'malformed percent-encoding', method: 'GET', path: '/api/projects/%E0%A4%A/feature_flags', status: 404 },
];

for (const c of cases) {
  test(`routing: ${c.name}`, async () => {
    const r = await call(c.method, c.path);
    assert.equal(r.status, c.status);
    if (c.route) assert.equal(r.body.route, c.route);
    for (const [k, v] of Object.entries(c.params ?? {})) assert.equal(r.body.params[k], v);
    if (c.status === 405) {
      assert.equal(r.allow, c.allow);
      assert.deepEqual(r.body, { type: 'invalid_request', code: 'method_not_allowed', detail: `Method "${c.method}" not allowed.`, attr: null });
    }
    if (c.status === 404) assert.equal(r.body.code, 'not_found');
  });
}

test('routing: duplicate routes are refused at start-up', async () => {
  const config = testConfig({ bootstrapPersonalApiKey: key });
  await assert.rejects(startHttpServer({ sql: db.sql, config, log: createLogger('silent') }, [routes[0]!, { ...routes[0]! }],
    { ready: async () => true, metrics: async () => '' }, 0), /duplicate route/);
});
