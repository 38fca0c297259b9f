/**
 * The console's files on the control plane: `GET /` is the console's page for a
 * browser (with a same-origin Content-Security-Policy) and the JSON index for API clients; the
 * bundle's script and styles are served from dist/console.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { wantsHtml } from '../../../src/control-plane/http/console.js';

let t: TestControlPlane;
before(async () => { t = await startTestControlPlane(); });
after(async () => { await t?.close(); });

test('GET / negotiates: the console for browsers, the JSON index for API clients', async () => {
  const html = await fetch(`${t.baseUrl}/`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
  assert.equal(html.status, 200);
  assert.match(html.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(html.headers.get('content-security-policy') ?? '', /script-src 'self'/);
  const page = await html.text();
  assert.match(page, /<script type="module" src="\/console\/app.js">/);
  const json = await fetch(`${t.baseUrl}/`);
  assert.match(json.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(typeof (await json.json()), 'object');
  for (const [file, type] of [['app.js', /javascript/], ['app.css', /css/]] as const) {
    const r = await fetch(`${t.baseUrl}/console/${file}`);
    assert.equal(r.status, 200, file);
    assert.match(r.headers.get('content-type') ?? '', type);
    assert.ok((await r.arrayBuffer()).byteLength > 1000, `${file} is the built bundle`);
  }
  assert.equal((await fetch(`${t.baseUrl}/console/other.js`)).status, 404);
  assert.deepEqual([wantsHtml(undefined), wantsHtml('application/json'), wantsHtml('text/html')], [false, false, true]);
});
