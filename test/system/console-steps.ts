/**
 * Steps of the console's browser walk (console-browser.test.ts), kept apart so the walk stays
 * readable: an experiment's page (values with their counts, exposures per day, daily results on
 * request, metrics edited after creation), holdouts and shared metrics, and lists past one page.
 */
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import type { TestControlPlane } from '../support/control-plane.js';

/** The experiment page after the walk fed it: `exposed` users and their purchases per variant, as sent. */
export async function checkExperimentPage(page: Page, exposed: Map<string, number>, bought: Map<string, { sum: number; buyers: number }>): Promise<void> {
  // Description, start date and days running.
  await page.getByText('Does a green checkout button sell more?').waitFor();
  assert.equal(await page.locator('dl.facts dd[data-days]').innerText(), '0');
  assert.match(await page.locator('dl.facts').innerText(), /Start date\s+\S/);

  // A mean reads with its n: purchases per exposed user, as sent.
  for (const [variant, n] of exposed) {
    const value = await page.locator(`article.metric table.results tr[data-variant="${variant}"] td.value`).first().innerText();
    const sum = bought.get(variant)?.sum ?? 0;
    assert.equal(value, `${(sum / n).toFixed(3)} (n = ${n})`, `mean of ${variant}`);
  }

  // Exposed users per day: one line per variant, dated, with the totals sent.
  const chart = page.locator('figure.exposure-chart');
  await chart.waitFor();
  const today = await page.evaluate(() => new Date().toLocaleDateString(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' }));
  assert.ok((await chart.locator('text.day').allTextContents()).includes(today), `the chart is dated (${today})`);
  assert.match(await chart.locator('svg').getAttribute('aria-label') ?? '', new RegExp(new Date().toISOString().slice(0, 10)));
  const caption = await chart.locator('figcaption').innerText();
  for (const [variant, n] of exposed) assert.match(caption, new RegExp(`${variant}:\\s+${n}\\s+users`));

  // Daily results: not stuck on "pending": computing is shown, then the finished state.
  const first = page.locator('article.metric').first();
  await first.getByText('Daily results are not computed yet.').waitFor();
  await first.getByRole('button', { name: 'Recalculate daily results' }).click();
  await first.getByText(/Daily results computed for all 1 day\b/).waitFor({ timeout: 60_000 });
  await first.getByRole('button', { name: 'Recalculate daily results' }).waitFor();

  // A funnel metric added after creation: conversions read "x % — buyers / exposed".
  await page.getByRole('button', { name: 'Edit description and metrics' }).click();
  const primary = page.locator('fieldset', { hasText: 'Primary metrics' });
  await primary.getByRole('button', { name: 'Add a metric' }).click();
  await primary.getByRole('combobox', { name: /^Type/ }).last().selectOption('funnel');
  await primary.getByLabel('Steps (comma-separated events)').fill('purchase');
  await page.getByRole('button', { name: 'Save metrics' }).click();
  const funnel = page.locator('article.metric', { has: page.getByRole('heading', { name: 'purchase', exact: true }) });
  await funnel.locator('table.results').waitFor({ timeout: 30_000 });
  for (const [variant, n] of exposed) {
    const buyers = bought.get(variant)?.buyers ?? 0;
    const value = await funnel.locator(`tr[data-variant="${variant}"] td.value`).innerText();
    assert.equal(value, `${((buyers / n) * 100).toFixed(1)} % — ${buyers} / ${n}`, `conversion of ${variant}`);
  }
  assert.equal(await page.locator('article.metric').count(), 2, 'the first metric is kept');
}

/** Holdouts and shared metrics: create, edit, delete, each checked against the API's list. */
export async function checkHoldoutsAndSharedMetrics(page: Page): Promise<void> {
  await page.getByRole('link', { name: 'Experiments' }).click();
  await page.getByRole('link', { name: 'Holdouts' }).click();
  await page.getByRole('heading', { name: 'Holdouts' }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill('Global holdout');
  await page.getByLabel('Users held out', { exact: false }).fill('10');
  await page.getByRole('button', { name: 'Create holdout' }).click();
  const row = page.locator('tr[data-holdout="Global holdout"]');
  assert.match(await row.innerText(), /10 %/);
  await page.getByRole('button', { name: 'Edit Global holdout' }).click();
  await page.locator('.holdout-form').first().getByLabel('Users held out', { exact: false }).fill('5');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await row.filter({ hasText: '5 %' }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill('Spare holdout');
  await page.getByRole('button', { name: 'Create holdout' }).click();
  page.once('dialog', (d) => { void d.accept(); });
  await page.getByRole('button', { name: 'Delete Spare holdout' }).click();
  await page.locator('tr[data-holdout="Spare holdout"]').waitFor({ state: 'detached' });

  await page.goto(page.url().replace(/#.*$/, '#/saved-metrics'));
  await page.getByRole('heading', { name: 'Shared metrics' }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill('Purchases per user');
  await page.getByLabel('Event', { exact: true }).fill('purchase');
  await page.getByRole('button', { name: 'Create shared metric' }).click();
  const saved = page.locator('tr[data-saved-metric="Purchases per user"]');
  assert.match(await saved.innerText(), /mean: purchase/);
  await page.getByRole('button', { name: 'Edit Purchases per user' }).click();
  await page.locator('.saved-metric-form').first().getByRole('combobox', { name: /^Type/ }).selectOption('funnel');
  await page.locator('.saved-metric-form').first().getByLabel('Steps (comma-separated events)').fill('$pageview, purchase');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await saved.filter({ hasText: 'funnel: $pageview → purchase' }).waitFor();
  page.once('dialog', (d) => { void d.accept(); });
  await page.getByRole('button', { name: 'Delete Purchases per user' }).click();
  await saved.waitFor({ state: 'detached' });
  await page.goto(page.url().replace(/#.*$/, '#/holdouts'));
  await page.locator('tr[data-holdout="Global holdout"]').waitFor();
}

/** Flags, cohorts and experiments past one page of the API (rows seeded in bulk: listing does not depend on how they were made). */
export async function checkPaging(page: Page, t: TestControlPlane): Promise<void> {
  const [flag] = await t.db.sql<{ id: number }[]>`SELECT id::int AS id FROM feature_flags WHERE project_id = ${t.projectId} AND key = 'checkout-button'`;
  await t.db.sql`INSERT INTO feature_flags (project_id, key, name, filters)
    SELECT ${t.projectId}, 'bulk-' || lpad(g::text, 3, '0'), 'Bulk flag ' || g, '{"groups": [{"properties": [], "rollout_percentage": 100}]}'::jsonb FROM generate_series(1, 230) g`;
  await t.db.sql`INSERT INTO cohorts (project_id, name) SELECT ${t.projectId}, 'Bulk cohort ' || g FROM generate_series(1, 210) g`;
  await t.db.sql`INSERT INTO experiments (project_id, name, feature_flag_id) SELECT ${t.projectId}, 'Bulk experiment ' || g, ${flag!.id} FROM generate_series(1, 205) g`;
  const counts = { flags: 0, cohorts: 0, experiments: 0 };
  for (const [kind, path] of [['flags', 'feature_flags'], ['cohorts', 'cohorts'], ['experiments', 'experiments']] as const) {
    counts[kind] = (await t.request('GET', `/api/projects/${t.projectId}/${path}/?limit=1`)).body.count;
    assert.ok(counts[kind] > 200, `${kind}: ${counts[kind]}`);
  }
  // Each list is read afresh when its page mounts (a route change, no reload): the walk ends on the
  // flags list, so that one comes last, after the others have replaced it.
  assert.ok(!/#\/(cohorts|experiments)$/.test(page.url()), `the walk is not on a list it reads next: ${page.url()}`);
  for (const [kind, hash, last] of [['cohorts', '#/cohorts', 'Bulk cohort 1'], ['experiments', '#/experiments', 'Bulk experiment 1'], ['flags', '#/flags', 'bulk-230']] as const) {
    await page.goto(page.url().replace(/#.*$/, hash));
    const status = page.locator('.more-rows [role="status"]');
    await status.filter({ hasText: `Showing 100 of ${counts[kind]} ${kind}` }).waitFor();
    for (let shown = 100; shown < counts[kind]; shown = Math.min(shown + 100, counts[kind])) {
      await page.getByRole('button', { name: 'Load more' }).click();
      await status.filter({ hasText: `Showing ${Math.min(shown + 100, counts[kind])} of ${counts[kind]}` }).waitFor();
    }
    assert.equal(await page.getByRole('button', { name: 'Load more' }).count(), 0, `${kind}: no page left`);
    await page.getByRole('cell', { name: last, exact: true }).or(page.getByRole('link', { name: last, exact: true })).first().waitFor();
  }
}
