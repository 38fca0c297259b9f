/**
 * Runtime detection for /flags (spec/API.md §4.4 rules 3–4; research/posthog-flag-evaluation.md
 * §4 "Runtime filter"): an explicit body `evaluation_runtime` of `client` or `server` wins;
 * otherwise the `User-Agent` decides when it matches a known pattern; otherwise any of
 * `Origin`, `Referer`, `Sec-Fetch-Mode`, `Sec-Fetch-Site` means a browser, so client; otherwise
 * the runtime is undetermined (null), and the core keeps only flags with no runtime or `all`.
 *
 * The spec writes SDK agents as `sdk-<name>/`, standing for the vendor's SDK name; PostHog's SDKs
 * send `posthog-<name>/` (posthog-node: `posthog-node/5.x`), so both spellings are matched.
 */

/** Detected runtime; null = undetermined. */
export type Runtime = 'client' | 'server' | null;

/** The request headers runtime detection reads (lower-case names; '' when absent). */
export interface RuntimeHeaders {
  userAgent: string;
  origin: string;
  referer: string;
  secFetchMode: string;
  secFetchSite: string;
}

const BROWSER_AGENTS = ['Mozilla/', 'Chrome/', 'Safari/', 'Firefox/', 'Edge/'];
const CLIENT_SDKS = ['android', 'ios', 'react-native', 'flutter'];
const SERVER_SDKS = ['python', 'ruby', 'php', 'java', 'go', 'node', 'dotnet', 'elixir'];
const SERVER_AGENTS = ['python-requests/', 'curl/'];

// Built once at load: one alternation per side instead of a loop of includes() per request.
const CLIENT_RE = new RegExp(
  [...BROWSER_AGENTS.map(escape), ...CLIENT_SDKS.flatMap((s) => [`posthog-${escape(s)}/`, `sdk-${escape(s)}/`])].join('|'),
);
const SERVER_RE = new RegExp(
  [...SERVER_AGENTS.map(escape), ...SERVER_SDKS.flatMap((s) => [`posthog-${escape(s)}/`, `sdk-${escape(s)}/`])].join('|'),
);

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** Runtime from the User-Agent alone (null when it matches neither side). Client patterns are checked first. */
export function runtimeFromUserAgent(ua: string): Runtime {
  if (ua === '') return null;
  if (CLIENT_RE.test(ua)) return 'client';
  if (SERVER_RE.test(ua)) return 'server';
  return null;
}

/**
 * The runtime of a request: `explicit` (the body's `evaluation_runtime`) when it is `client` or
 * `server`; then the User-Agent; then browser-only headers (client); else null.
 */
export function detectRuntime(headers: RuntimeHeaders, explicit: unknown): Runtime {
  if (explicit === 'client' || explicit === 'server') return explicit;
  const fromUa = runtimeFromUserAgent(headers.userAgent);
  if (fromUa !== null) return fromUa;
  if (headers.origin !== '' || headers.referer !== '' || headers.secFetchMode !== '' || headers.secFetchSite !== '') return 'client';
  return null;
}
