/**
 * Debian's Chromium for the browser tests (never a downloaded browser): the path (CHROMIUM_PATH,
 * set by `make test`; default /usr/bin/chromium), the flags every test launches it with, a
 * launch that fails saying how to get it when it is missing, and screenshots for the docs.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { Browser, BrowserType, Locator, Page } from 'playwright-core';
import { PACKAGE_ROOT } from '../../src/paths.js';

/**
 * playwright-core through `require`: imported as ESM, Node runs its CommonJS bundle (several MB)
 * through its ESM translation and export lexer, about 0.4 CPU-s more per test file than this.
 * Loaded on first launch only.
 */
let chromium: BrowserType | null = null;

/** The Chromium executable the tests drive. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Flags for a headless Chromium in a container with no network beyond loopback. */
export const CHROMIUM_ARGS: readonly string[] = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

/** Fails the test when {@link CHROMIUM} is missing, naming how to install it. */
export function assertChromium(): void {
  assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: run make test (it installs Debian's chromium) or set CHROMIUM_PATH`);
}

/** Launches {@link CHROMIUM} headless with {@link CHROMIUM_ARGS}. */
export function launchChromium(): Promise<Browser> {
  chromium ??= (createRequire(import.meta.url)('playwright-core') as { chromium: BrowserType }).chromium;
  return chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS], headless: true });
}

/**
 * Saves a screenshot of the page (full length) or of `part` as `name`.png in test-output/console/
 * and docs/screenshots/ (the README's pictures), only when SWITCHYARD_UPDATE_SCREENSHOTS=1: no
 * assertion reads them, and rendering and encoding a full page costs the browser and the test
 * process CPU on every run.
 */
export async function screenshot(page: Page, name: string, part?: Locator): Promise<void> {
  if (process.env.SWITCHYARD_UPDATE_SCREENSHOTS !== '1') return;
  const out = path.join(PACKAGE_ROOT, 'test-output', 'console');
  const docs = path.join(PACKAGE_ROOT, 'docs', 'screenshots');
  fs.mkdirSync(out, { recursive: true });
  fs.mkdirSync(docs, { recursive: true });
  const file = path.join(out, `${name}.png`);
  if (part) await part.screenshot({ path: file }); else await page.screenshot({ path: file, fullPage: true });
  fs.copyFileSync(file, path.join(docs, `${name}.png`));
}
