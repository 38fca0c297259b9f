/**
 * The web console's files, served by the control plane: `GET /` answers the console's
 * page to a browser (an `Accept` that prefers text/html) and the JSON index to everything else;
 * `GET /console/app.js` and `/console/app.css` are the bundle console/build.mjs writes to
 * dist/console. The files are read once at start; with no bundle built, `/` keeps the JSON index
 * and the asset paths answer 404. A restrictive Content-Security-Policy allows only this origin's
 * scripts, styles, images and API calls.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { PACKAGE_ROOT } from '../../paths.js';

/** Where the bundle is read from. */
export const CONSOLE_DIR = path.join(PACKAGE_ROOT, 'dist', 'console');

/** The console's security policy: nothing from elsewhere, no inline script. */
export const CONSOLE_CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

interface Asset { body: Buffer; type: string }

function load(dir: string): Map<string, Asset> | null {
  const files: [string, string][] = [['index.html', 'text/html; charset=utf-8'], ['app.js', 'text/javascript; charset=utf-8'], ['app.css', 'text/css; charset=utf-8']];
  if (!files.every(([f]) => fs.existsSync(path.join(dir, f)))) return null;
  return new Map(files.map(([f, type]) => [f, { body: fs.readFileSync(path.join(dir, f)), type }]));
}

/** True when the request's Accept header prefers HTML (a browser navigating to `/`). */
export function wantsHtml(accept: string | undefined): boolean {
  return typeof accept === 'string' && /\btext\/html\b/.test(accept);
}

/**
 * Registers the console's routes; `index` answers `/` for API clients.
 * @returns whether a console bundle was found.
 */
export function addConsoleRoutes(app: FastifyInstance, index: () => unknown, dir: string = CONSOLE_DIR): boolean {
  const assets = load(dir);
  const hidden = { schema: { hide: true } as object, config: { noBody: true } };
  app.get('/', hidden, async (req, reply) => {
    const page = assets?.get('index.html');
    if (page && wantsHtml(req.headers.accept)) {
      return reply.type(page.type).header('content-security-policy', CONSOLE_CSP).header('cache-control', 'no-cache').send(page.body);
    }
    return reply.type('application/json').send(JSON.stringify(index()));
  });
  for (const name of ['app.js', 'app.css']) {
    app.get(`/console/${name}`, hidden, async (_req, reply) => {
      const a = assets?.get(name);
      if (!a) return reply.code(404).type('application/json').send(JSON.stringify({ type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null }));
      return reply.type(a.type).header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff').send(a.body);
    });
  }
  return assets !== null;
}
