/**
 * posthog-js's extension bundles on a node (`/static/<name>.js`, `/static/<version>/<name>.js`):
 * over real HTTP against a real node server, the bytes of the installed posthog-js's
 * `dist/<name>.js` with their cache policy and ETag, a no-op script for an extension the package
 * lacks, 404 for a strict version of a bundle the node has at another version (posthog-js falls
 * back) and for names outside the package; and, without the package (a production install),
 * no-op scripts for everything.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import { createRequire } from 'node:module';
import { request, startTestNode } from './fixture.js';
import { findPosthogJs, noopScript, StaticAssets } from '../../../src/eval-node/http/static-assets.js';

const ORIGIN = 'https://shop.example';
const manifest = createRequire(import.meta.url).resolve('posthog-js/package.json');
const version = (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { version: string }).version;
const distFile = (name: string) => fs.readFileSync(path.join(path.dirname(manifest), 'dist', `${name}.js`), 'utf8');

test('a node serves the installed posthog-js bundles posthog-js asks for, and a no-op for one it lacks', async () => {
  const node = await startTestNode();
  try {
    for (const name of ['surveys', 'recorder', 'exception-autocapture', 'web-vitals', 'dead-clicks-autocapture']) {
      const r = await request(`${node.url}/static/${name}.js?v=${version}`, { headers: { origin: ORIGIN } });
      assert.equal(r.status, 200, name);
      assert.equal(r.text, distFile(name), `${name}: the package's dist file`);
      assert.equal(r.headers['content-type'], 'application/javascript; charset=utf-8');
      assert.equal(r.headers['cache-control'], 'public, max-age=31536000, immutable', 'the version in ?v= is the installed one');
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      assert.equal(r.headers['access-control-allow-origin'], ORIGIN);
    }
    // Another SDK version, or none: the installed bundle (as PostHog's asset host serves its
    // current build), cached briefly.
    for (const query of ['?v=0.0.1', '']) {
      const r = await request(`${node.url}/static/surveys.js${query}`);
      assert.equal(r.status, 200);
      assert.equal(r.text, distFile('surveys'));
      assert.equal(r.headers['cache-control'], 'public, max-age=3600', query);
    }
    const etag = (await request(`${node.url}/static/surveys.js?v=${version}`)).headers.etag!;
    assert.equal(etag, `"posthog-js@${version}/surveys"`);
    const again = await request(`${node.url}/static/surveys.js?v=${version}`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');

    // strict_script_versioning (posthog-js's default): exactly the installed version, else 404
    // (posthog-js then falls back to the unversioned path); a name the package lacks is the no-op.
    const strict = await request(`${node.url}/static/${version}/surveys.js`);
    assert.equal(strict.status, 200);
    assert.equal(strict.text, distFile('surveys'));
    assert.equal((await request(`${node.url}/static/0.0.1/surveys.js`)).status, 404);
    const strictNoop = await request(`${node.url}/static/0.0.1/toolbar.js`);
    assert.equal(strictNoop.status, 200);
    assert.equal(strictNoop.text, noopScript('toolbar'));

    // The toolbar is not in the package: a script that runs and does nothing.
    const toolbar = await request(`${node.url}/static/toolbar.js?v=${version}&t=1700000000000`);
    assert.equal(toolbar.status, 200);
    assert.equal(toolbar.headers['content-type'], 'application/javascript; charset=utf-8');
    assert.equal(toolbar.headers['cache-control'], 'public, max-age=300');
    assert.equal(toolbar.text, noopScript('toolbar'));
    vm.runInNewContext(toolbar.text); // valid JavaScript

    // Nothing outside dist/*.js.
    for (const p of ['/static/surveys.js.map', '/static/..%2Fpackage.json', '/static/%2e%2e%2fpackage.js', '/static/Surveys.js',
      '/static/a..b.js', `/static/${'a'.repeat(65)}.js`, '/static/1.0.0/x.css', '/static/x/y/z.js']) {
      const r = await request(node.url + p);
      assert.equal(r.status, 404, p);
      assert.equal(r.json().type, 'invalid_request', p);
    }
  } finally {
    await node.close();
  }
});

test('without posthog-js installed, every extension is a no-op script, at any version', () => {
  assert.equal(findPosthogJs(() => { throw new Error("Cannot find module 'posthog-js/package.json'"); }), null);
  const none = new StaticAssets(null);
  for (const name of ['surveys', 'recorder', 'toolbar']) {
    for (const strict of [false, true]) {
      assert.deepEqual(none.asset(name, version, strict), { body: noopScript(name), cacheControl: 'public, max-age=300', etag: `"noop/${name}"` });
    }
  }

  // A package found through the resolver is the one served, at its own version.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-posthog-js-'));
  try {
    fs.mkdirSync(path.join(dir, 'dist'));
    fs.writeFileSync(path.join(dir, 'package.json'), '{"name": "posthog-js", "version": "9.8.7"}');
    fs.writeFileSync(path.join(dir, 'dist', 'surveys.js'), 'window.surveysLoaded = true;');
    const pkg = findPosthogJs(() => path.join(dir, 'package.json'));
    assert.deepEqual(pkg, { version: '9.8.7', dist: path.join(dir, 'dist') });
    const assets = new StaticAssets(pkg);
    assert.equal(String(assets.asset('surveys', '9.8.7', true)?.body), 'window.surveysLoaded = true;');
    assert.equal(assets.asset('surveys', '9.8.7', false)?.cacheControl, 'public, max-age=31536000, immutable');
    assert.equal(assets.asset('surveys', version === '9.8.7' ? '0.0.1' : version, true), null);
    assert.equal(assets.asset('recorder', '9.8.7', false)?.body, noopScript('recorder'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
