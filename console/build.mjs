/**
 * Builds the web console into dist/console: esbuild bundles console/src/main.tsx
 * (Preact, uPlot) into one minified app.js with its CSS, and copies index.html. Everything the
 * browser loads is served by the control plane (src/control-plane/http/console.ts): no CDN.
 */
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, '..', 'dist', 'console');
fs.mkdirSync(out, { recursive: true });
await build({
  entryPoints: [path.join(here, 'src', 'main.tsx')],
  bundle: true, minify: true, sourcemap: false, format: 'esm', target: ['chrome110', 'firefox110', 'safari16'],
  jsx: 'automatic', jsxImportSource: 'preact', outfile: path.join(out, 'app.js'), logLevel: 'warning',
  loader: { '.css': 'css' },
});
fs.copyFileSync(path.join(here, 'index.html'), path.join(out, 'index.html'));
