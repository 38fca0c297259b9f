/**
 * PostHog's environment prefix is routed as the project prefix (src/control-plane/http/environments.ts):
 * which URLs are rewritten and which are left alone. The routes answering under both prefixes are
 * tested end to end in test/control-plane/projects/projects.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { projectPath } from '../../../src/control-plane/http/environments.js';

test('an environment path names the same project path, query string kept', () => {
  assert.equal(projectPath('/api/environments/12'), '/api/projects/12');
  assert.equal(projectPath('/api/environments/12/'), '/api/projects/12/');
  assert.equal(projectPath('/api/environments/@current/feature_flags/?limit=5'), '/api/projects/@current/feature_flags/?limit=5');
  assert.equal(projectPath('/api/environments/12?token=phc_x'), '/api/projects/12?token=phc_x');
});

test('other paths are left as they are', () => {
  for (const url of ['/api/environments/', '/api/environments', '/api/environments//flags', '/api/environmentsx/1/', '/api/projects/1/', '/flags', '/api/x/api/environments/1/']) {
    assert.equal(projectPath(url), url, url);
  }
});
