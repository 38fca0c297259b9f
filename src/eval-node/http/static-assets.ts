/**
 * posthog-js's extension bundles on a node. posthog-js loads optional scripts from its api host
 * (`requestRouter.endpointFor('assets', …)`): `/static/<name>.js?v=<sdk version>` (surveys,
 * recorder, exception-autocapture, web-vitals, dead-clicks-autocapture, toolbar, …) and, with
 * `strict_script_versioning`, `/static/<version>/<name>.js`. PostHog's asset host serves them
 * from its posthog-js build; a node serves them from the posthog-js package installed beside it
 * (its `dist/<name>.js`, found with `require.resolve('posthog-js/package.json')`), so pages stop
 * getting 404s:
 * - `/static/<name>.js`: the installed bundle when there is one (like PostHog's host, which
 *   serves its current build whatever `?v=` says), else a no-op script (200) so posthog-js runs
 *   on without the extension. Cached for a year (`immutable`) when `?v=` names the installed
 *   version, else for an hour; the no-op for 5 minutes.
 * - `/static/<version>/<name>.js` (posthog-js's default, `strict_script_versioning: 'fallback'`):
 *   the installed bundle at exactly that version; at another version 404, so posthog-js falls
 *   back to the unversioned path and gets the installed bundle; the no-op script when there is
 *   no installed bundle of that name (a fallback could only bring the no-op too).
 * Answers are `application/javascript; charset=utf-8` with an `ETag` (304 on `If-None-Match`)
 * and CORS as the other public routes. Names are `[a-z0-9]` words joined by `-` or `.`, at most
 * 64 characters, so no path leaves the package's `dist/`; anything else is 404.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { errors } from '../../errors.js';
import type { NodeHttpContext } from './context.js';
import { Exchange } from './reply.js';

/** The installed posthog-js package: its version and `dist/` directory. */
export interface PosthogJsPackage { version: string; dist: string }

const NAME = /^[a-z0-9]+(?:[-.][a-z0-9]+)*$/;
const MAX_NAME = 64;
const VERSION = /^[0-9A-Za-z.+-]{1,64}$/;
const JS = 'application/javascript; charset=utf-8';
const YEAR = 'public, max-age=31536000, immutable';
const HOUR = 'public, max-age=3600';
const NOOP_CACHE = 'public, max-age=300';
/** Bundles above this size are not held in memory (the largest posthog-js bundle is ~1 MiB). */
const MAX_BUNDLE_BYTES = 8 * 1024 * 1024;

/**
 * Finds posthog-js installed beside this program (null when it is not: it is a development
 * dependency, absent from production installs). `resolve` is for tests.
 */
export function findPosthogJs(resolve: (id: string) => string = createRequire(import.meta.url).resolve): PosthogJsPackage | null {
  try {
    const manifest = resolve('posthog-js/package.json');
    const version = (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { version?: unknown }).version;
    const dist = path.join(path.dirname(manifest), 'dist');
    if (typeof version !== 'string' || !fs.statSync(dist).isDirectory()) return null;
    return { version, dist };
  } catch {
    return null;
  }
}

/** One asset answer: body, cache policy and entity tag. */
interface Asset { body: Uint8Array | string; cacheControl: string; etag: string }

/**
 * The bundles of one posthog-js package (or none), read from disk on first request and kept.
 * `asset(name, version, strict)` answers a request: the asset, or null for 404.
 */
export class StaticAssets {
  private readonly bundles = new Map<string, Uint8Array | null>();

  constructor(readonly pkg: PosthogJsPackage | null) {}

  /** The installed bundle `<name>.js`, or null when there is none (or the name is not one). */
  bundle(name: string): Uint8Array | null {
    if (this.pkg === null || name.length > MAX_NAME || !NAME.test(name)) return null;
    let b = this.bundles.get(name);
    if (b === undefined) {
      b = null;
      try {
        const file = path.join(this.pkg.dist, `${name}.js`);
        const st = fs.statSync(file);
        if (st.isFile() && st.size <= MAX_BUNDLE_BYTES) b = fs.readFileSync(file);
      } catch { /* absent: null */ }
      this.bundles.set(name, b);
    }
    return b;
  }

  /**
   * The answer for `name` asked at `version` ('' when unversioned); `strict` for the
   * `/static/<version>/<name>.js` form. Null means 404.
   */
  asset(name: string, version: string, strict: boolean): Asset | null {
    if (name.length > MAX_NAME || !NAME.test(name) || (version !== '' && !VERSION.test(version))) return null;
    const installed = this.pkg?.version;
    const bundle = this.bundle(name);
    if (strict && bundle !== null) {
      return version === installed ? { body: bundle, cacheControl: YEAR, etag: `"posthog-js@${installed}/${name}"` } : null;
    }
    if (bundle !== null) return { body: bundle, cacheControl: version === installed ? YEAR : HOUR, etag: `"posthog-js@${installed}/${name}"` };
    return { body: noopScript(name), cacheControl: NOOP_CACHE, etag: `"noop/${name}"` };
  }
}

/** The script answered for an extension the node cannot serve: valid JavaScript that does nothing. */
export function noopScript(name: string): string {
  return `/* Switchyard: posthog-js extension "${name}" is not available on this node; nothing to load. */\n`;
}

/** Registers `/static/<name>.js` and `/static/<version>/<name>.js` on `app`. */
export function registerStaticRoutes(app: TemplatedApp, ctx: NodeHttpContext, assets = new StaticAssets(findPosthogJs())): void {
  app.get('/static/:file', handler(ctx, assets, false));
  app.get('/static/:version/:file', handler(ctx, assets, true));
}

function handler(ctx: NodeHttpContext, assets: StaticAssets, strict: boolean): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    const ex = new Exchange(res, ctx.metrics, 'other', req.getHeader('origin'));
    const file = req.getParameter(strict ? 1 : 0) ?? '';
    const version = strict ? req.getParameter(0) ?? '' : new URLSearchParams(req.getQuery() ?? '').get('v') ?? '';
    const asset = file.endsWith('.js') ? assets.asset(file.slice(0, -3), version, strict) : null;
    if (asset === null) return ex.sendError(errors.notFound());
    const headers: [string, string][] = [['Cache-Control', asset.cacheControl], ['ETag', asset.etag], ['X-Content-Type-Options', 'nosniff']];
    if (req.getHeader('if-none-match') === asset.etag) return ex.send(304, '', headers, null);
    ex.send(200, asset.body, headers, JS);
  };
}
