/**
 * The web console in Debian's Chromium (playwright-core; never a downloaded browser).
 * Signed in with the keyboard, an empty project gets the first-run guide with its own key; a flag
 * created through the console's form is served by a real node on /flags, its activity reads as a
 * creation and a readable filters diff, and disabling it from the list switches it off there too;
 * an experiment created and launched in the console, fed exposures and purchases through
 * posthog-node and the node, shows its results (means with n, conversions with counts, computed
 * here from what the test sent), exposed users per day, daily results computed on request, and
 * metrics edited after creation; holdouts and shared metrics are created, edited and deleted;
 * lists read past one page; the console fits a phone's width.
 * With SWITCHYARD_UPDATE_SCREENSHOTS=1 it saves screenshots to test-output/console/ and
 * docs/screenshots/ (the README's).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Browser, type Page } from 'playwright-core';
import { PostHog } from 'posthog-node';
import { waitFor } from '../support/wait.js';
import { assertChromium, launchChromium, screenshot as shot } from '../support/browser.js';
import { createFlag, flags, startCluster, waitReady } from './support.js';
import { checkExperimentPage, checkHoldoutsAndSharedMetrics, checkPaging } from './console-steps.js';

const USERS = 120;


test('the console: sign in, create and disable a flag the node serves, launch an experiment and read its results', { timeout: 240_000, skip: process.env.SWITCHYARD_SKIP_BROWSER === '1' && 'SWITCHYARD_SKIP_BROWSER=1' }, async () => {
  assertChromium();
  const c = await startCluster();
  let browser: Browser | null = null;
  let ph: PostHog | null = null;
  try {
    const t = c.t;
    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const failures: string[] = [];
    page.on('pageerror', (e) => failures.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') failures.push(m.text()); });
    // Listening for responses makes playwright report every one to this process: only to debug.
    if (process.env.CONSOLE_DEBUG) page.on('response', (r) => { process.stderr.write(`${r.request().method()} ${r.url()} ${r.status()}\n`); });

    // Sign in with the keyboard only.
    const res = await page.goto(`${t.baseUrl}/`);
    assert.match(res!.headers()['content-security-policy'] ?? '', /default-src 'self'/);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'key', 'the key field is the first stop');
    await page.keyboard.type(t.personalKey);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Feature flags' }).waitFor();

    // An empty project: the first-run guide, with this project's key in the SDK snippets.
    await page.getByText('has no feature flags yet').waitFor();
    await page.locator('[data-project-key]', { hasText: t.projectKey }).waitFor();
    assert.ok((await page.locator('.first-run pre').first().innerText()).includes(`new PostHog('${t.projectKey}'`));
    await shot(page, 'first-run');

    // A flag through the form: 100 % of persons whose email ends in example.com, with a payload.
    await page.getByRole('link', { name: 'Create your first flag' }).click();
    await page.getByLabel('Key', { exact: true }).fill('console-flag');
    await page.getByLabel('Description', { exact: true }).fill('Made in the console');
    await page.getByRole('button', { name: 'Add a filter' }).click();
    await page.getByLabel('Property', { exact: true }).fill('email');
    await page.getByRole('combobox', { name: /^Operator/ }).selectOption('icontains');
    await page.getByLabel('Value', { exact: true }).fill('@example.com');
    await page.getByLabel('Payload for the enabled flag (JSON)').fill('{"banner": "new"}');
    await page.getByRole('button', { name: 'Create flag' }).click();
    await page.waitForURL(/#\/flags\/\d+$/);
    await page.getByRole('heading', { name: 'Activity' }).waitFor();
    // The creation reads "created" with the fields that say something, the filters as words.
    const created = page.locator('ol.activity li[data-activity="created"]');
    await created.waitFor();
    const createdText = await created.innerText();
    assert.match(createdText, /Condition set 1: email icontains @example\.com — 100 %/);
    assert.match(createdText, /Payload when enabled: \{"banner": "new"\}/);
    assert.doesNotMatch(createdText, /null|→/, 'no null → value rows');
    assert.equal(await created.locator('tr[data-field="active"]').count(), 1);
    assert.equal(await created.locator('tr[data-field="deleted"]').count(), 0, 'false fields are left out');
    const ask = (email: string) => flags(node.http.url, t.projectKey, email, { person_properties: { email } });
    await waitFor('the node serves the console\'s flag', async () => (await ask('ann@example.com')).body?.flags?.['console-flag']?.enabled === true, { timeoutMs: 30_000, intervalMs: 100 });
    const served = (await ask('ann@example.com')).body.flags['console-flag'];
    assert.equal(served.metadata.payload, '{"banner": "new"}', 'the payload as typed');
    assert.equal((await ask('bob@other.test')).body.flags['console-flag'].enabled, false);

    // An edit shows up in the activity with its diff; soft delete and restore from the flag's page.
    await page.getByLabel('Roll out to', { exact: false }).fill('50');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    const edit = page.locator('ol.activity li[data-activity="updated"] tr[data-field="filters"]').first();
    await edit.waitFor();
    assert.match(await edit.locator('li.removed').innerText(), /Condition set 1: email icontains @example\.com — 100 %/);
    assert.match(await edit.locator('li.added').innerText(), /Condition set 1: email icontains @example\.com — 50 %/);
    await shot(page, 'flag-activity');
    page.once('dialog', (d) => { void d.accept(); });
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('This flag is deleted').waitFor();
    await page.getByRole('button', { name: 'Restore' }).click();
    await page.getByRole('button', { name: 'Delete' }).waitFor();
    await page.getByLabel('Roll out to', { exact: false }).fill('100');
    await page.getByRole('button', { name: 'Save' }).click();
    await waitFor('the restored flag is served again', async () => (await ask('ann@example.com')).body?.flags?.['console-flag']?.enabled === true, { timeoutMs: 30_000, intervalMs: 100 });

    // Disabled from the list: the node stops serving it. (A few more flags, as a project has.)
    await createFlag(c, { key: 'new-onboarding', name: 'Onboarding v2, 30 % of users', filters: { groups: [{ properties: [], rollout_percentage: 30 }] } });
    await createFlag(c, { key: 'pricing-page', name: 'Three pricing layouts', filters: { groups: [{ properties: [], rollout_percentage: 100 }],
      multivariate: { variants: [{ key: 'control', rollout_percentage: 34 }, { key: 'annual-first', rollout_percentage: 33 }, { key: 'usage-based', rollout_percentage: 33 }] } } });
    await createFlag(c, { key: 'legacy-export', name: 'Old CSV export', active: false, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
    await page.getByRole('link', { name: 'Feature flags' }).click();
    await page.getByRole('row', { name: /console-flag/ }).waitFor();
    await shot(page, 'flags-list');
    await page.getByLabel('Enable console-flag').click();
    // A disabled flag is left out of /flags (PostHog evaluates active flags only).
    await waitFor('the node no longer serves the flag', async () => (await ask('ann@example.com')).body?.flags?.['console-flag']?.enabled !== true, { timeoutMs: 30_000, intervalMs: 100 });
    assert.equal((await ask('ann@example.com')).body.flags['console-flag'], undefined);

    // An experiment: created, launched, fed, read.
    await page.getByRole('link', { name: 'Experiments' }).click();
    await page.getByRole('link', { name: 'New experiment' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Checkout button');
    await page.getByLabel('Feature flag key', { exact: true }).fill('checkout-button');
    await page.getByLabel('Description', { exact: true }).fill('Does a green checkout button sell more?');
    await page.getByLabel('Event', { exact: true }).fill('purchase');
    await page.getByRole('button', { name: 'Create draft' }).click();
    await page.waitForURL(/#\/experiments\/\d+$/);
    await page.getByRole('button', { name: 'Launch' }).click();
    await page.getByText('running', { exact: true }).waitFor();
    await waitFor('the node serves the experiment flag', async () => typeof (await flags(node.http.url, t.projectKey, 'probe')).body?.flags?.['checkout-button']?.variant === 'string', { timeoutMs: 30_000, intervalMs: 100 });

    ph = new PostHog(t.projectKey, { host: node.http.url, flushAt: 50, flushInterval: 0, disableGeoip: true });
    const exposed = new Map<string, number>();
    const bought = new Map<string, { sum: number; buyers: number }>();
    let purchases = 0;
    for (let i = 0; i < USERS; i++) {
      const d = `shopper-${i}`;
      const variant = String(await ph.getFeatureFlag('checkout-button', d)); // sends $feature_flag_called
      exposed.set(variant, (exposed.get(variant) ?? 0) + 1);
      const n = (i % 5 === 0 ? 2 : 0) + (variant === 'test' && i % 3 === 0 ? 1 : 0);
      for (let k = 0; k < n; k++) ph.capture({ distinctId: d, event: 'purchase' });
      purchases += n;
      const b = bought.get(variant) ?? { sum: 0, buyers: 0 };
      bought.set(variant, { sum: b.sum + n, buyers: b.buyers + (n > 0 ? 1 : 0) });
    }
    await ph.flush();
    await waitFor('exposures and purchases ingested', async () => {
      const [r] = await t.db.sql<{ e: number; p: number }[]>`SELECT count(*) FILTER (WHERE event = '$feature_flag_called')::int AS e,
        count(*) FILTER (WHERE event = 'purchase')::int AS p FROM events WHERE project_id = ${t.projectId} AND distinct_id LIKE 'shopper-%'`;
      return r!.e >= USERS && r!.p === purchases;
    }, { timeoutMs: 60_000, intervalMs: 200 });
    await page.reload();
    await page.locator('.interval-chart svg g[data-variant="test"] rect').waitFor({ timeout: 30_000 });
    for (const [variant, n] of exposed) {
      const cells = await page.locator(`table.results tr[data-variant="${variant}"] td`).allInnerTexts();
      assert.equal(cells[1], String(n), `exposures of ${variant} as sent`);
    }
    await checkExperimentPage(page, exposed, bought);
    await shot(page, 'experiment-results');
    await checkHoldoutsAndSharedMetrics(page);

    // A phone's width: nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('link', { name: 'Feature flags' }).click();
    await page.getByRole('row', { name: /console-flag/ }).waitFor();
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1), 'no horizontal scrolling at 390 px');
    await shot(page, 'flags-list-phone');
    await page.setViewportSize({ width: 1280, height: 800 });
    await checkPaging(page, t);
    assert.deepEqual(failures, [], 'no script errors in the page');
  } finally {
    await ph?.shutdown();
    await browser?.close();
    await c.close();
  }
});
