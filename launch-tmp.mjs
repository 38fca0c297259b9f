import { chromium } from 'playwright-core';
const extra = process.argv.slice(2);
const args = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage', ...extra];
const b = await chromium.launch({ executablePath: '/tmp/bw/chr.sh', args, headless: true });
const p = await b.newPage({ viewport: { width: 1280, height: 800 } });
await p.setContent('<html><body><h1>hi</h1><table>' + '<tr><td>row</td><td>x</td></tr>'.repeat(300) + '</table><script>setTimeout(()=>{const d=document.createElement("div");d.id="late";d.textContent="late";document.body.prepend(d)},6000)</script></body></html>');
await p.locator('#late').waitFor();
await p.screenshot({ path: '/tmp/bw/x.png', fullPage: true });
await b.close();
