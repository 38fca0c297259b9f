/**
 * PostHog-shaped request bodies for `switchyard load`, generated ahead of the run from a seed so a
 * run costs the generator no serialisation:
 *
 * - **flags**: `POST /flags?v=2` with posthog-node's body (`@posthog/core` `getFlags`: `token`,
 *   `distinct_id`, `groups`, `person_properties`, `group_properties`, `geoip_disable`, and
 *   `flag_keys_to_evaluate` when keys are given).
 * - **capture**: `POST /batch/` with posthog-node's batch (`sendBatch`: `api_key`, `batch`,
 *   `sent_at`), each event `{event, distinct_id, properties: {…, $lib, $lib_version}, timestamp}`.
 *   Events carry no `uuid`, so the node assigns a fresh one to every event sent (spec/API.md §4.5):
 *   a body repeated by the generator still stores new events instead of being deduplicated.
 *
 * Distinct ids: 30 % of bodies come from 100 returning users (ids repeat), the rest are drawn
 * uniformly from `users` users (mostly distinct); one user in four is an anonymous
 * posthog-js-style UUID id, the others `user-<n>`. Person properties follow the user number.
 */
import type { Mix } from './options.js';

/** A request autocannon sends as given (path relative to the node's base URL). */
export interface LoadRequest { method: 'POST'; path: string; headers: Record<string, string>; body: string }

/** What the bodies depend on. */
export interface BodySpec { key: string; mix: Mix; flagKeys: string[] | null; users: number; batchSize: number }

/** Share of bodies drawn from the returning users. */
const RETURNING_SHARE = 0.3;
/** Returning users (user numbers 0 … RETURNING-1). */
const RETURNING = 100;

const PLANS = ['free', 'free', 'free', 'pro', 'enterprise'];
const COUNTRIES = ['US', 'GB', 'DE', 'FR', 'IN', 'BR', 'JP', 'CA'];
const BROWSERS = ['Chrome', 'Safari', 'Firefox', 'Edge'];
const EVENTS = ['$pageview', '$pageview', '$pageview', '$autocapture', 'signed_up', 'checkout_started', '$feature_flag_called'];
const LIB = { $lib: 'posthog-node', $lib_version: '5.0.0' };
const HEADERS = { 'content-type': 'application/json', 'user-agent': 'posthog-node/5.0.0' };

/** mulberry32: a small seeded PRNG returning floats in [0, 1). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** User number → distinct id: every fourth user an anonymous UUID-shaped id, else `user-<n>`. */
export function distinctId(n: number): string {
  if (n % 4 !== 3) return `user-${n}`;
  const h = (x: number) => (Math.imul(n ^ x, 0x9e3779b1) >>> 0).toString(16).padStart(8, '0');
  return `${h(1)}-${h(2).slice(0, 4)}-7${h(3).slice(0, 3)}-8${h(4).slice(0, 3)}-${h(5)}${h(6).slice(0, 4)}`;
}

/** The person properties an SDK would send for user n. */
export function personProperties(n: number): Record<string, unknown> {
  return {
    email: `user${n}@${n % 3 === 0 ? 'example.com' : 'mail.test'}`,
    plan: PLANS[n % PLANS.length],
    $geoip_country_code: COUNTRIES[(n >> 2) % COUNTRIES.length],
    $browser: BROWSERS[(n >> 4) % BROWSERS.length],
    signed_up_days_ago: n % 365,
    is_beta: n % 10 === 0,
  };
}

/** Draws a user number: returning users 30 % of the time, else uniform over `users`. */
function drawUser(rnd: () => number, users: number): number {
  const pool = rnd() < RETURNING_SHARE ? Math.min(RETURNING, users) : users;
  return Math.floor(rnd() * pool);
}

/** The `/flags?v=2` body for user n. */
export function flagsBody(key: string, n: number, flagKeys: string[] | null): string {
  const body: Record<string, unknown> = {
    token: key, distinct_id: distinctId(n),
    groups: n % 2 === 0 ? { company: `company-${n % 50}` } : {},
    person_properties: personProperties(n), group_properties: {}, geoip_disable: true,
  };
  if (flagKeys) body.flag_keys_to_evaluate = flagKeys;
  return JSON.stringify(body);
}

/** A `/batch/` body of `size` events from users drawn with `rnd`, stamped at `now`. */
export function batchBody(key: string, size: number, rnd: () => number, users: number, now: Date): string {
  const ts = now.toISOString();
  const batch = Array.from({ length: size }, (_, i) => {
    const n = drawUser(rnd, users);
    const event = EVENTS[Math.floor(rnd() * EVENTS.length)]!;
    const properties: Record<string, unknown> = { ...LIB, $current_url: `https://app.example.com/page/${i}`, $set: { plan: PLANS[n % PLANS.length] } };
    if (event === '$feature_flag_called') Object.assign(properties, { $feature_flag: 'load-test-flag', $feature_flag_response: n % 2 === 0 });
    return { event, distinct_id: distinctId(n), properties, timestamp: ts };
  });
  return JSON.stringify({ api_key: key, batch, sent_at: ts });
}

/**
 * `count` requests in the proportions of `spec.mix` (each kind's share rounded, interleaved evenly
 * so every stretch of the list keeps the mix), from a PRNG seeded with `seed`.
 */
export function buildRequests(spec: BodySpec, count: number, seed: number, now = new Date()): LoadRequest[] {
  const rnd = seeded(seed);
  const out: LoadRequest[] = [];
  let captureDebt = 0;
  for (let i = 0; i < count; i++) {
    captureDebt += spec.mix.capture / 100;
    if (captureDebt >= 1 - 1e-9) {
      captureDebt -= 1;
      out.push({ method: 'POST', path: '/batch/', headers: HEADERS, body: batchBody(spec.key, spec.batchSize, rnd, spec.users, now) });
    } else {
      out.push({ method: 'POST', path: '/flags?v=2', headers: HEADERS, body: flagsBody(spec.key, drawUser(rnd, spec.users), spec.flagKeys) });
    }
  }
  return out;
}
