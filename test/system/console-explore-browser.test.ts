/**
 * The console's events explorer, persons pages and scheduled flag changes in Debian's Chromium
 * (playwright-core), against one real control plane and one real node; every event is sent
 * through capture on the node with posthog-node. The walk: the events list is newest first and
 * pages through the API's `next` to every stored event; the live tail shows an event captured
 * after the page opened; filtered by distinct id, an event opens with its properties and links to
 * its person; the person page lists its distinct ids and properties, the cohorts it is in (a
 * dynamic cohort on its plan, linked; not one on the other plan) and each flag's value and
 * reason, as the node serves them (a disabled flag: "Feature flag is disabled"); the persons
 * search finds it; on a flag's page an enable scheduled ~3 s ahead is applied (the node serves
 * the flag; the console shows the change executed), a pending change is deleted, and a change
 * that fails shows its failure reason. With SWITCHYARD_UPDATE_SCREENSHOTS=1 it saves
 * screenshots to test-output/console/ and docs/screenshots/.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Browser, type Locator, type Page } from 'playwright-core';
import { PostHog } from 'posthog-node';
import { waitFor } from '../support/wait.js';
import { assertChromium, launchChromium, screenshot as shot } from '../support/browser.js';
import { createFlag, flags, startCluster, waitReady } from './support.js';

const SHOPPERS = ['ana', 'bo', 'cy', 'di', 'ed', 'flo'];


/** The console's UTC text for an instant (`YYYY-MM-DD HH:MM:SS UTC`) as milliseconds. */
const parseUtc = (s: string): number => Date.parse(s.replace(' UTC', 'Z').replace(' ', 'T'));

test('the console: explore events, open a person with its flags and reasons, schedule a flag change', { timeout: 240_000, skip: process.env.SWITCHYARD_SKIP_BROWSER === '1' && 'SWITCHYARD_SKIP_BROWSER=1' }, async () => {
  assertChromium();
  const c = await startCluster();
  let browser: Browser | null = null;
  let ph: PostHog | null = null;
  try {
    const t = c.t;
    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    await createFlag(c, { key: 'pro-dashboard', name: 'New dashboard for the pro plan', filters: { groups: [{ properties: [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }], rollout_percentage: 100 }] } });
    await createFlag(c, { key: 'gradual-rollout', name: 'Search v2, 30 %', filters: { groups: [{ properties: [], rollout_percentage: 30 }] } });
    await createFlag(c, { key: 'pricing-page', name: 'Three pricing layouts', filters: { groups: [{ properties: [], rollout_percentage: 100 }],
      multivariate: { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'annual-first', rollout_percentage: 50 }] } } });
    const cohort = async (name: string, plan: string) => {
      const r = await t.request('POST', `/api/projects/${t.projectId}/cohorts/`, { body: { name, filters: { properties: { type: 'AND', values: [{ type: 'person', key: 'plan', operator: 'exact', value: [plan] }] } } } });
      assert.equal(r.status, 201, r.text);
      return r.body.id as number;
    };
    const proCohort = await cohort('Pro shoppers', 'pro');
    await cohort('Free shoppers', 'free');
    const banner = await createFlag(c, { key: 'beta-banner', name: 'Beta banner', active: false, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });

    // Events through capture on the node: identified shoppers browsing over the last hour, one purchase.
    ph = new PostHog(t.projectKey, { host: node.http.url, flushAt: 100, flushInterval: 0, disableGeoip: true });
    const start = Date.now() - 3_600_000;
    SHOPPERS.forEach((name, i) => ph!.identify({ distinctId: `${name}-${i + 1}`, properties: { email: `${name}@example.com`, plan: i % 2 === 0 ? 'pro' : 'free' } }));
    ph.alias({ distinctId: 'ana-1', alias: 'anon-7f3a' });
    for (let k = 0; k < 60; k++) {
      const who = `${SHOPPERS[k % SHOPPERS.length]}-${(k % SHOPPERS.length) + 1}`;
      ph.capture({ distinctId: who, event: '$pageview', properties: { $current_url: `https://shop.example.com/p/${k}` }, timestamp: new Date(start + k * 50_000) });
    }
    ph.capture({ distinctId: 'ana-1', event: 'purchase', properties: { amount: 42, currency: 'EUR' }, timestamp: new Date(start + 30 * 50_000 + 1) });
    await ph.flush();
    // 6 $identify, 1 $create_alias, 60 $pageview, 1 purchase.
    await waitFor('events and persons ingested', async () => {
      const [r] = await t.db.sql<{ e: number; p: number }[]>`SELECT (SELECT count(*)::int FROM events WHERE project_id = ${t.projectId}) AS e,
        (SELECT count(*)::int FROM person_distinct_ids WHERE project_id = ${t.projectId} AND distinct_id = 'anon-7f3a') AS p`;
      return r!.e === 68 && r!.p === 1;
    }, { timeoutMs: 60_000, intervalMs: 200 });
    const [stored] = await t.db.sql<{ total: number }[]>`SELECT count(*)::int AS total FROM events WHERE project_id = ${t.projectId}`;
    const total = stored!.total;

    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const failures: string[] = [];
    page.on('pageerror', (e) => failures.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') failures.push(m.text()); });
    await page.goto(`${t.baseUrl}/`);
    await page.locator('#key').fill(t.personalKey);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Feature flags' }).waitFor();

    // The events list: newest first, every stored event through the next links.
    await page.getByRole('link', { name: 'Events', exact: true }).click();
    await page.getByRole('heading', { name: 'Events' }).waitFor();
    const rows = page.locator('table.events tbody tr[data-event-id]');
    await rows.first().waitFor();
    while (await page.getByRole('button', { name: 'Load more' }).isVisible()) {
      const before = await rows.count();
      await page.getByRole('button', { name: 'Load more' }).click();
      await waitFor('the next page', async () => (await rows.count()) > before, { intervalMs: 50 });
    }
    assert.equal(await rows.count(), total, 'every stored event, once');
    const times = (await page.locator('table.events tbody tr[data-event-id] td:nth-child(3)').allInnerTexts()).map(parseUtc);
    assert.ok(times.every((x, i) => i === 0 || x <= times[i - 1]!), 'newest first');

    // The live tail shows an event captured after the page opened.
    await page.getByLabel('Live tail').check();
    ph.capture({ distinctId: 'bo-2', event: 'signed_up', properties: { source: 'tail' } });
    await ph.flush();
    await page.locator('table.events tbody tr[data-event-id]', { hasText: 'signed_up' }).waitFor({ timeout: 30_000 });
    await page.getByLabel('Live tail').uncheck();

    // Filtered by distinct id, an event opens with its properties; by a property, only the purchase.
    await page.getByLabel('Distinct id').fill('ana-1');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await waitFor('only ana-1 events', async () => {
      const people = await page.locator('table.events tbody tr[data-event-id] td:nth-child(2)').allInnerTexts();
      return people.length > 0 && people.every((p) => p === 'ana@example.com');
    }, { intervalMs: 50 });
    await page.getByRole('button', { name: 'purchase' }).click();
    const props = page.getByRole('table', { name: 'Properties of purchase' });
    assert.equal(await props.getByRole('row', { name: /^amount/ }).locator('td').innerText(), '42');
    assert.equal(await props.getByRole('row', { name: /^currency/ }).locator('td').innerText(), 'EUR');
    await shot(page, 'events-explorer');
    await page.getByLabel('Property', { exact: true }).fill('currency');
    await page.getByLabel('equals').fill('EUR');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await waitFor('only the purchase', async () => (await rows.count()) === 1 && (await rows.innerText()).startsWith('purchase'), { intervalMs: 50 });
    await page.getByRole('button', { name: 'purchase' }).click();

    // The person: distinct ids, properties, and each flag's value and reason as the node serves them.
    await page.getByRole('link', { name: /Open person/ }).click();
    await page.getByRole('heading', { name: 'ana@example.com' }).waitFor();
    assert.deepEqual((await page.getByRole('list', { name: 'Distinct ids' }).getByRole('listitem').allInnerTexts()).sort(), ['ana-1', 'anon-7f3a']);
    assert.equal(await page.getByRole('table', { name: 'Person properties' }).getByRole('row', { name: /^plan/ }).locator('td').innerText(), 'pro');
    const cohortLinks = page.getByRole('list', { name: 'Cohorts' }).getByRole('link');
    await cohortLinks.first().waitFor();
    assert.deepEqual(await cohortLinks.allInnerTexts(), ['Pro shoppers'], 'her plan\'s cohort only');
    assert.equal(await cohortLinks.first().getAttribute('href'), `#/cohorts/${proCohort}`);
    const flagRow = (key: string) => page.locator(`table.flag-values tr[data-flag="${key}"] td`);
    await flagRow('beta-banner').first().waitFor();
    const shown = page.locator('label', { hasText: 'Evaluate for distinct id' }).locator('select');
    const evaluatedFor = await shown.inputValue();
    // The node learns the person's properties through the change log: wait until it has them.
    const served = await waitFor('the node knows the person', async () => {
      const f = (await flags(node.http.url, t.projectKey, evaluatedFor)).body?.flags;
      return f?.['pro-dashboard']?.enabled === true ? f : null;
    }, { timeoutMs: 30_000, intervalMs: 100 });
    for (const key of ['pro-dashboard', 'gradual-rollout', 'pricing-page']) {
      const [, value, reason] = await flagRow(key).allInnerTexts();
      const s = served[key];
      assert.equal(value, String(s.variant ?? s.enabled), `${key}: the node's value`);
      assert.equal(await flagRow(key).nth(2).getAttribute('data-reason'), s.reason.code, `${key}: the node's reason`);
      assert.ok(reason!.length > 0);
    }
    assert.deepEqual((await flagRow('pro-dashboard').allInnerTexts()).slice(1), ['true', 'Matched condition set 1'], 'plan pro matches the first set');
    assert.deepEqual((await flagRow('beta-banner').allInnerTexts()).slice(1), ['false', 'Feature flag is disabled']);
    assert.equal(served['beta-banner'], undefined, 'the node leaves the disabled flag out');
    await shot(page, 'person-flags');

    // Its events: every event of both its distinct ids, and nothing wider than a phone.
    await page.getByRole('link', { name: 'Events of this person' }).click();
    await waitFor('the person\'s events', async () => (await rows.count()) > 0, { intervalMs: 50 });
    const [own] = await t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE project_id = ${t.projectId} AND distinct_id IN ('ana-1', 'anon-7f3a')`;
    assert.equal(await rows.count(), own!.n);
    await page.setViewportSize({ width: 390, height: 844 });
    await rows.first().getByRole('button').click();
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1), 'no horizontal scrolling at 390 px');
    await page.goBack();
    await page.getByRole('heading', { name: 'ana@example.com' }).waitFor();
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1), 'no horizontal scrolling at 390 px');
    await page.setViewportSize({ width: 1280, height: 800 });

    // The persons search finds her.
    await page.getByRole('link', { name: 'Persons', exact: true }).click();
    await page.getByRole('searchbox').fill('ana@');
    await page.getByRole('button', { name: 'Search' }).click();
    await waitFor('one match', async () => (await page.locator('table.persons tbody tr').allInnerTexts()).length === 1, { intervalMs: 50 });
    await page.getByRole('link', { name: 'ana@example.com' }).click();
    await page.getByRole('heading', { name: 'ana@example.com' }).waitFor();

    // Scheduling from the flag's page: a pending change deleted, a failing one, an enable ~3 s ahead.
    const bad = await t.request('POST', `/api/projects/${t.projectId}/scheduled_changes/`, {
      body: { record_id: String(banner.id), model_name: 'FeatureFlag', payload: { operation: 'rename', value: 'x' }, scheduled_at: new Date().toISOString() } });
    assert.equal(bad.status, 201, bad.text);
    await page.locator('table.flag-values tr[data-flag="beta-banner"] a').click();
    await page.getByRole('heading', { name: 'beta-banner' }).waitFor();
    const form = page.getByRole('form', { name: 'Schedule a change' });
    await form.getByRole('combobox', { name: /^Change/ }).selectOption('condition');
    await form.getByLabel('Rollout (%)').fill('25');
    await form.getByLabel('When (UTC)').fill('2099-06-01T09:30:00');
    await form.getByRole('button', { name: 'Schedule change' }).click();
    const pending = page.locator('table.scheduled tr[data-state="pending"]', { hasText: '2099-06-01 09:30:00 UTC' });
    await pending.waitFor();
    assert.match(await pending.innerText(), /Add a release condition: 25 % of everyone/);
    page.once('dialog', (d) => { void d.accept(); });
    await pending.getByRole('button', { name: /^Delete/ }).click();
    await pending.waitFor({ state: 'detached' });
    assert.equal((await t.db.sql`SELECT 1 FROM scheduled_changes WHERE scheduled_at = '2099-06-01T09:30:00Z'`).length, 0, 'deleted in the API');

    await form.getByRole('combobox', { name: /^Change/ }).selectOption('enable');
    await form.getByLabel('When (UTC)').fill(new Date(Date.now() + 3000).toISOString().slice(0, 19));
    await form.getByRole('button', { name: 'Schedule change' }).click();
    await page.locator('table.scheduled tr', { hasText: 'Enable the flag' }).waitFor();
    await waitFor('the node serves the scheduled enable', async () => (await flags(node.http.url, t.projectKey, 'ana-1')).body?.flags?.['beta-banner']?.enabled === true, { timeoutMs: 30_000, intervalMs: 100 });
    await page.locator('table.scheduled tr[data-state="executed"]', { hasText: 'Enable the flag' }).waitFor({ timeout: 30_000 });
    await page.locator('input[aria-label="Enabled"]:checked').waitFor(); // the flag's switch follows
    const failed = page.locator('table.scheduled tr[data-state="failed"]');
    assert.match(await failed.innerText(), /Unrecognized operation: rename/);
    await shot(page, 'flag-scheduled-changes', page.locator('section.schedule'));
    assert.deepEqual(failures, [], 'no script errors in the page');
  } finally {
    await ph?.shutdown();
    await browser?.close();
    await c.close();
  }
});
