/**
 * What posthog-js needs from a node, as a user sees it: posthog-js, unchanged (its `array.js` bundle, as the
 * snippet loads it), in Debian's headless Chromium on a page served from another origin, pointed
 * at a real node of a real cluster. Remote config (`config.js`), CORS preflights, /flags and
 * capture all cross origins, and no request to the node fails (its extension scripts included);
 * flags must equal what POST /flags answers for the same 40 users (rollout, multivariate with
 * payloads, person property, group property, cohort, inactive), and
 * $pageview, $identify, a custom event and $feature_flag_called must reach Postgres, the event
 * definitions and the flag's `last_called_at`. Chromium is /usr/bin/chromium (the Makefile
 * installs Debian's package); playwright-core drives it and never downloads a browser.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { type Browser } from 'playwright-core';
import { boundPort } from '../support/ports.js';
import { waitFor } from '../support/wait.js';
import { assertChromium, launchChromium } from '../support/browser.js';
import { seedCohort } from '../support/seed.js';
import { createFlag, flags, startCluster, waitReady, type SystemCluster } from './support.js';

/**
 * Users compared with /flags: enough that every flag but the inactive one takes more than one
 * value among them (the ids are fixed, so the split is too); each is one more posthog-js instance
 * and /flags round trip in the browser.
 */
const USERS = 40;

const posthogBundle = (): string => {
  const require = createRequire(import.meta.url);
  return fs.readFileSync(path.join(path.dirname(require.resolve('posthog-js/package.json')), 'dist', 'array.js'), 'utf8');
};

/** Serves the test page and posthog-js's bundle on its own origin. */
async function startPageServer(): Promise<{ url: string; close(): Promise<void> }> {
  const bundle = posthogBundle();
  const server = http.createServer((req, res) => {
    if (req.url === '/posthog.js') { res.writeHead(200, { 'content-type': 'application/javascript' }); res.end(bundle); return; }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><html><head><title>shop</title><script src="/posthog.js"></script></head><body><button id="buy">Buy</button></body></html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = boundPort(server);
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

/** What the browser reports per flag: the value getFeatureFlag gives and the parsed payload. */
type Seen = Record<string, [unknown, unknown]>;

test('posthog-js in Chromium: remote config, flags equal to /flags, and every event captured', { timeout: 240_000, skip: process.env.SWITCHYARD_SKIP_BROWSER === '1' && 'SWITCHYARD_SKIP_BROWSER=1' }, async () => {
  assertChromium();
  const c = await startCluster();
  const page$ = await startPageServer();
  let browser: Browser | null = null;
  try {
    const node = await c.startNode(c.tempDir());
    const mv = await createFlag(c, { key: 'bx-mv', filters: {
      groups: [{ properties: [], rollout_percentage: 100 }],
      multivariate: { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] },
      payloads: { control: '{"color":"blue"}', test: '{"color":"green"}' },
    } });
    await createFlag(c, { key: 'bx-rollout', filters: { groups: [{ properties: [], rollout_percentage: 40 }], payloads: { true: '"yes"' } } });
    await createFlag(c, { key: 'bx-off', active: false, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
    await createFlag(c, { key: 'bx-email', filters: { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }], rollout_percentage: 100 }] } });
    await createFlag(c, { key: 'bx-org-pro', filters: { aggregation_group_type_index: 0,
      groups: [{ properties: [{ key: 'plan', type: 'group', group_type_index: 0, operator: 'exact', value: ['pro'] }], rollout_percentage: 100 }] } });
    const cohort = await seedCohort(c.t.db.sql, c.t.projectId, 'x.com people'); // email icontains @x.com
    await createFlag(c, { key: 'bx-cohort', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: cohort }], rollout_percentage: 100 }] } });
    const keys = ['bx-mv', 'bx-rollout', 'bx-off', 'bx-email', 'bx-org-pro', 'bx-cohort'];
    await waitReady(node.http.url);
    await waitFor('the node serving the flags', async () => (await flags(node.http.url, c.t.projectKey, 'probe')).body.flags?.['bx-cohort'] !== undefined, { timeoutMs: 30_000, intervalMs: 100 });

    browser = await launchChromium();
    const page = await browser.newPage();
    // Every request the page makes to the node succeeds, posthog-js's extension scripts
    // (`/static/<name>.js`, served from the installed posthog-js) included.
    const failed: string[] = [];
    const scripts: string[] = [];
    page.on('requestfailed', (r) => { failed.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`); });
    page.on('response', (r) => {
      if (!r.url().startsWith(node.http.url)) return;
      if (r.status() >= 400) failed.push(`${r.status()} ${r.request().method()} ${r.url()}`);
      if (new URL(r.url()).pathname.startsWith('/static/')) scripts.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
    await page.goto(page$.url);

    // Flags for many users, one posthog-js instance each (bootstrapped distinct id), with person
    // properties and a group (the default project's group type 0 is `organization`) set before
    // its first /flags request.
    const ids = Array.from({ length: USERS }, (_, i) => `browser-user-${i}`);
    const person = (i: number) => ({ email: i % 3 === 0 ? `u${i}@example.com` : i % 3 === 1 ? `u${i}@x.com` : `u${i}@other.org` });
    const org = (i: number) => ({ key: `org-${i % 7}`, props: { plan: i % 2 === 0 ? 'pro' : 'free' } });
    const people = ids.map((_, i) => ({ person: person(i), org: org(i) }));
    const seen = await page.evaluate(async ({ token, host, ids, keys, people }) => {
      const ph = (window as any).posthog;
      const out: Record<string, Record<string, [unknown, unknown]>> = {};
      await Promise.all(ids.map((id, i) => new Promise<void>((resolve) => {
        const inst = ph.init(token, {
          api_host: host, bootstrap: { distinctID: id }, autocapture: false, capture_pageview: false, disable_session_recording: true,
          persistence: 'memory', disable_surveys: true,
          // posthog-js aborts a /flags request after 3 s; many instances at once on a shared 2-core
          // machine can take longer, and an aborted request fails this test's "no request failed".
          feature_flag_request_timeout_ms: 30_000,
          loaded: (p: any) => {
            p.setPersonPropertiesForFlags(people[i]!.person, false);
            p.group('organization', people[i]!.org.key, people[i]!.org.props);
          },
        }, `u${i}`);
        inst.onFeatureFlags(() => {
          out[id] = Object.fromEntries(keys.map((k) => [k, [inst.getFeatureFlag(k, { send_event: false }) ?? null, inst.getFeatureFlagPayload(k) ?? null]]));
          resolve();
        });
      })));
      return out;
    }, { token: c.t.projectKey, host: node.http.url, ids, keys, people });

    for (const [i, id] of ids.entries()) {
      const r = await flags(node.http.url, c.t.projectKey, id, { person_properties: person(i),
        groups: { organization: org(i).key }, group_properties: { organization: org(i).props } });
      assert.equal(r.status, 200);
      const expected: Seen = {};
      for (const k of keys) {
        const f = r.body.flags[k];
        if (f === undefined) { expected[k] = [null, null]; continue; } // inactive: not served, undefined in posthog-js
        const value = f.enabled ? (f.variant ?? true) : false;
        const payload = f.enabled && f.metadata.payload != null ? JSON.parse(f.metadata.payload) : null;
        expected[k] = [value, payload];
      }
      assert.deepEqual(seen[id], expected, id);
    }
    for (const k of ['bx-mv', 'bx-rollout', 'bx-email', 'bx-org-pro', 'bx-cohort']) {
      const values = new Set(ids.map((id) => JSON.stringify(seen[id]![k]![0])));
      assert.ok(values.size >= 2, `${k} takes more than one value among the users: ${[...values].join(', ')}`);
    }

    // The main instance: remote config from the node, then a pageview, identify, a custom
    // event and a flag call, all cross-origin with preflights.
    const main = await page.evaluate(async ({ token, host }) => {
      const ph = (window as any).posthog;
      // posthog-js drops events from browsers that look automated (HeadlessChrome, navigator.webdriver);
      // opt_out_useragent_filter is its switch for end-to-end tests.
      const inst = ph.init(token, { api_host: host, person_profiles: 'always', persistence: 'memory', disable_session_recording: true,
        opt_out_useragent_filter: true }, 'main');
      let loads = 0;
      inst.onFeatureFlags(() => { loads++; });
      const loaded = async (n: number) => { while (loads < n) await new Promise((r) => setTimeout(r, 20)); };
      await loaded(1);
      inst.identify('browser-identified', { email: 'ada@example.com' }); // reloads the flags for the new id
      await loaded(2);
      inst.capture('browser_clicked', { button: 'buy' });
      const variant = inst.getFeatureFlag('bx-mv');
      const remote = (window as any)._POSTHOG_REMOTE_CONFIG?.[token]?.config ?? null;
      return { variant, remote, distinctId: inst.get_distinct_id() };
    }, { token: c.t.projectKey, host: node.http.url });
    assert.equal(main.distinctId, 'browser-identified');
    assert.equal(main.remote?.token, c.t.projectKey, 'config.js loaded from the node');
    assert.ok(main.remote.supportedCompression.includes('gzip-js'));
    assert.equal(main.variant, (await flags(node.http.url, c.t.projectKey, 'browser-identified')).body.flags['bx-mv'].variant);

    const rows = await waitFor('the browser\'s events in Postgres', async () => {
      const r = await c.t.db.sql<{ event: string; distinct_id: string; flag: string | null }[]>`
        SELECT event, distinct_id, properties->>'$feature_flag' AS flag FROM events WHERE project_id = ${c.t.projectId}`;
      const names = new Set(r.map((e) => e.event));
      return ['$pageview', '$identify', 'browser_clicked', '$feature_flag_called'].every((n) => names.has(n)) ? r : null;
    }, { timeoutMs: 60_000, intervalMs: 250 });
    assert.ok(rows.some((e) => e.event === '$feature_flag_called' && e.flag === 'bx-mv' && e.distinct_id === 'browser-identified'));
    assert.ok(rows.some((e) => e.event === 'browser_clicked' && e.distinct_id === 'browser-identified'));

    const defs = await c.t.request('GET', `/api/projects/${c.t.projectId}/event_definitions/?limit=100`);
    const names = (defs.body.results as { name: string }[]).map((d) => d.name);
    for (const n of ['$pageview', '$identify', 'browser_clicked', '$feature_flag_called']) assert.ok(names.includes(n), `${n} in ${names.join(', ')}`);
    await waitFor('last_called_at of bx-mv', async () => {
      const f = await c.t.request('GET', `/api/projects/${c.t.projectId}/feature_flags/${mv.id}/`);
      return typeof f.body.last_called_at === 'string';
    }, { timeoutMs: 30_000, intervalMs: 250 });
    assert.deepEqual(failed, [], 'no request from the page failed');
    assert.ok(scripts.some((s) => /^200 \/static\/.*surveys\.js$/.test(s)), `posthog-js loaded surveys.js from the node: ${scripts.join(', ')}`);
  } finally {
    await browser?.close().catch(() => {});
    await page$.close();
    await c.close();
  }
});
