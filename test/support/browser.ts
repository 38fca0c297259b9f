/**
 * Debian's Chromium for the browser tests (never a downloaded browser): the path (CHROMIUM_PATH,
 * set by `make test`; default /usr/bin/chromium), the flags every test launches it with, and a
 * launch that fails saying how to get it when it is missing.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, BrowserType } from 'playwright-core';

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
