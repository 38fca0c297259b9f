import { chromium } from 'playwright-core';
const extra = process.argv.slice(2);
const args = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage', ...extra];
const t0 = Date.now();
const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args, headless: true });
const p = await b.newPage();
await p.setContent('<html><body><h1>hi</h1><button>x</button></body></html>');
await p.screenshot({ path: '/tmp/bw/x.png', fullPage: true });
await b.close();
console.log('wall', Date.now() - t0);
