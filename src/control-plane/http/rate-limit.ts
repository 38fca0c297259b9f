/**
 * Rate limits of the management API as PostHog sets them (research/posthog-management-api.md
 * §5.4; PostHog's `PersonalApiKeyRateThrottle` pair): per personal API key, a burst limit per
 * minute and a sustained limit per hour, both counted on every authenticated request; the
 * local-evaluation feed instead has PostHog's per-project limit per minute
 * (`LocalEvaluationThrottle`). Counting is `@fastify/rate-limit`'s fixed window in process
 * memory (one control plane per database; several would each allow the full rate).
 * Over a limit → 429 `throttled` with `Retry-After` (errors.throttled).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { errors } from '../../errors.js';
import type { AuthContext } from './types.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The counter the limiter being checked draws from (`key:<id>` or `project:<id>`). */
    throttleKey: string;
  }
}

/** Limits in requests; 0 turns that limit off. */
export interface RateLimits {
  /** Per personal API key per minute (PostHog 480). */
  burstPerMinute: number;
  /** Per personal API key per hour (PostHog 4,800). */
  sustainedPerHour: number;
  /** Per project per minute on the local-evaluation feed (PostHog 600). */
  feedPerMinute: number;
}

/** Which counter a route draws from. */
export type ThrottleClass = 'personal_key' | 'project_feed';

/** Checks one request against its limits. @throws ApiError 429 when over one. */
export type Throttle = (req: FastifyRequest, auth: AuthContext, projectId: number | null, cls: ThrottleClass) => Promise<void>;

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
/** Distinct keys (personal keys or projects) each window remembers. */
const KEYS_REMEMBERED = 100_000;

/** Registers the plugin on `app` and returns the throttle the request pipeline calls. */
export async function registerRateLimits(app: FastifyInstance, limits: RateLimits): Promise<Throttle> {
  await app.register(rateLimit, { global: false, cache: KEYS_REMEMBERED });
  app.decorateRequest('throttleKey', '');
  const byKey = (req: FastifyRequest) => req.throttleKey;
  const limiter = (max: number, timeWindow: number) => max > 0 ? app.createRateLimit({ max, timeWindow, keyGenerator: byKey }) : null;
  const burst = limiter(limits.burstPerMinute, MINUTE_MS);
  const sustained = limiter(limits.sustainedPerHour, HOUR_MS);
  const feed = limiter(limits.feedPerMinute, MINUTE_MS);

  return async (req, auth, projectId, cls) => {
    const checks = cls === 'project_feed' ? [[feed, `project:${projectId ?? 0}`] as const]
      : [[burst, `key:${auth.keyId}`] as const, [sustained, `key:${auth.keyId}`] as const];
    let retryAfterMs = 0;
    for (const [check, key] of checks) {
      if (!check) continue;
      req.throttleKey = key;
      const r = await check(req);
      if (!r.isAllowed && r.isExceeded) retryAfterMs = Math.max(retryAfterMs, r.ttl);
    }
    if (retryAfterMs > 0) throw errors.throttled(retryAfterMs / 1000);
  };
}
