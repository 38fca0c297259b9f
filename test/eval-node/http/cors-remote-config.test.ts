/**
 * What posthog-js needs from a node before it sends anything — the remote
 * config (`/array/<token>/config` and `config.js`, from the project's settings and flags) and
 * CORS preflights answered on every public route — and no CORS on the server-side feed.
 * Real LMDB store and uWebSockets.js server; real HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import vm from 'node:vm';
import { flag, PERSONAL_KEY, PROJECT_TOKEN, request, standardFlags, startTestNode, worldChanges } from './fixture.js';
import type { StoreChange } from '../../../src/eval-node/store/lmdb.js';

const ORIGIN = 'https://shop.example';
const PUBLIC_PATHS = ['/flags/', '/flags', '/decide/', '/e/', '/i/v0/e/', '/batch/', '/capture/', '/track/', '/engage/', '/s/',
  `/array/${PROJECT_TOKEN}/config`, `/array/${PROJECT_TOKEN}/config.js`];

/** The world's changes with project 1's settings replaced by `settings`. */
function withSettings(changes: StoreChange[], settings: Record<string, boolean>): StoreChange[] {
  return changes.map((c) => c.kind === 'project' && c.entityId === '1'
    ? { ...c, payload: { ...(c.payload as object), settings: {
      autocapture_opt_out: false, autocapture_exceptions_opt_in: false, heatmaps_opt_in: false, capture_dead_clicks: false, capture_performance_opt_in: false, ...settings } } }
    : c);
}

test('every public route answers a browser preflight with the origin mirrored', async () => {
  const node = await startTestNode({ capture: async () => ({ status: 200, body: { status: 1 } }) });
  try {
    for (const path of PUBLIC_PATHS) {
      const pre = await request(node.url + path, { method: 'OPTIONS', headers: {
        origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,traceparent' } });
      assert.equal(pre.status, 200, path);
      assert.equal(pre.headers['access-control-allow-origin'], ORIGIN, path);
      assert.equal(pre.headers['access-control-allow-credentials'], 'true', path);
      assert.match(String(pre.headers['access-control-allow-methods']), /POST/, path);
      assert.equal(pre.headers['access-control-allow-headers'], 'content-type,traceparent', path);
    }
    // A malformed header list is not mirrored.
    const odd = await request(node.url + '/e/', { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-headers': 'x;y=1' } });
    assert.equal(odd.headers['access-control-allow-headers'], 'content-type');
    // Actual capture answers carry the origin too.
    const cap = await request(node.url + '/e/', { method: 'POST', body: '{}', headers: { origin: ORIGIN, 'content-type': 'text/plain' } });
    assert.equal(cap.headers['access-control-allow-origin'], ORIGIN);
    // The server-side feed (personal API key) is not for browsers: no CORS.
    const defs = await request(`${node.url}/flags/definitions?token=${PROJECT_TOKEN}`, { headers: { origin: ORIGIN, authorization: `Bearer ${PERSONAL_KEY}` } });
    assert.equal(defs.status, 200);
    assert.equal(defs.headers['access-control-allow-origin'], undefined);
  } finally {
    await node.close();
  }
});

test('remote config follows the project settings and flags, as JSON and as the config.js script', async () => {
  const node = await startTestNode({ changes: withSettings(worldChanges(standardFlags()), { heatmaps_opt_in: true, autocapture_opt_out: true }) });
  const noFlags = await startTestNode({ changes: worldChanges([flag('off', { groups: [] }, { active: false })]) });
  try {
    const r = await request(`${node.url}/array/${PROJECT_TOKEN}/config`, { headers: { origin: ORIGIN } });
    assert.equal(r.status, 200);
    assert.equal(r.headers['access-control-allow-origin'], ORIGIN);
    const config = r.json();
    assert.equal(config.token, PROJECT_TOKEN);
    assert.deepEqual(config.supportedCompression, ['gzip', 'gzip-js']);
    assert.equal(config.hasFeatureFlags, true);
    assert.equal(config.heatmaps, true);
    assert.equal(config.autocapture_opt_out, true);
    assert.equal(config.captureDeadClicks, false);
    assert.equal(config.sessionRecording, false, 'no replay product: posthog-js must not start the recorder');
    assert.equal(config.surveys, false);
    assert.deepEqual(config.analytics, { endpoint: '/i/v0/e/' });

    const js = await request(`${node.url}/array/${PROJECT_TOKEN}/config.js`);
    assert.equal(js.status, 200);
    assert.match(String(js.headers['content-type']), /javascript/);
    const window: Record<string, any> = {};
    vm.runInNewContext(js.text, { window });
    const fromScript = JSON.parse(JSON.stringify(window._POSTHOG_REMOTE_CONFIG[PROJECT_TOKEN])); // out of the vm realm
    assert.deepEqual(fromScript.config, config, 'the script carries the same config');
    assert.deepEqual(fromScript.siteApps, []);

    const none = (await request(`${noFlags.url}/array/${PROJECT_TOKEN}/config`)).json();
    assert.equal(none.hasFeatureFlags, false, 'only inactive flags');
    assert.equal(none.heatmaps, false, 'defaults when the project has no settings');

    const unknown = await request(`${node.url}/array/phc_unknownUnknownUnknown0000/config`);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json().type, 'invalid_request');
  } finally {
    await node.close();
    await noFlags.close();
  }
});

test('remote config before the first snapshot asks the browser to retry', async () => {
  const empty = await startTestNode({ snapshot: false });
  try {
    const r = await request(`${empty.url}/array/${PROJECT_TOKEN}/config`);
    assert.equal(r.status, 503);
    assert.equal(r.json().code, 'not_ready');
  } finally {
    await empty.close();
  }
});
