import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Router } from '../../../src/control-plane/http/router.js';
import type { Route } from '../../../src/control-plane/http/types.js';

const h = async () => ({ status: 200 });
const routes: Route[] = [
  { method: 'GET', path: '/api/projects/:project_id/feature_flags', scope: null, handler: h },
  { method: 'POST', path: '/api/projects/:project_id/feature_flags', scope: null, handler: h },
  { method: 'GET', path: '/api/projects/:project_id/feature_flags/:id', scope: null, handler: h },
  { method: 'GET', path: '/api/projects/:project_id/feature_flags/activity', scope: null, handler: h },
];
const router = new Router(routes);

const cases: { name: string; method: string; path: string; expect: string; params?: Record<string, string>; allow?: string[] }[] = [
  { name: 'list with trailing slash', method: 'GET', path: '/api/projects/1/feature_flags/', expect: 'found', params: { project_id: '1' } },
  { name: 'list without trailing slash', method: 'GET', path: '/api/projects/1/feature_flags', expect: 'found' },
  { name: 'literal beats parameter', method: 'GET', path: '/api/projects/1/feature_flags/activity', expect: 'found', params: { project_id: '1' } },
  { name: 'parameter', method: 'GET', path: '/api/projects/7/feature_flags/42/', expect: 'found', params: { project_id: '7', id: '42' } },
  { name: 'wrong method → 405 with allow', method: 'DELETE', path: '/api/projects/1/feature_flags/', expect: 'method_not_allowed', allow: ['GET', 'POST'] },
  { name: 'unknown path', method: 'GET', path: '/api/nothing', expect: 'not_found' },
  { name: 'malformed percent-encoding', method: 'GET', path: '/api/projects/%E0%A4%A/feature_flags', expect: 'not_found' },
];

for (const c of cases) {
  test(`router: ${c.name}`, () => {
    const m = router.match(c.method, c.path);
    assert.equal(m.kind, c.expect);
    if (m.kind === 'found' && c.params) {
      for (const [k, v] of Object.entries(c.params)) assert.equal(m.params[k], v);
      if (c.path.endsWith('/activity')) assert.equal(m.route.path.endsWith('/activity'), true);
    }
    if (m.kind === 'method_not_allowed') assert.deepEqual([...m.allow].sort(), c.allow);
  });
}

test('router: duplicate routes are rejected', () => {
  assert.throws(() => new Router([routes[0]!, { ...routes[0]! }]), /duplicate route/);
});
