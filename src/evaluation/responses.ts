/**
 * Response bodies built from one {@link EvaluationResult} (research/posthog-flag-evaluation.md
 * §5.2–§5.3; Rust `handler/response_builder.rs`, harness `legacy_projection` corpus):
 *
 * - /flags v2 (`v=2`, `/decide?v>=4`): `{errorsWhileComputingFlags, flags: {key: entry},
 *   quotaLimited?, requestId, evaluatedAt?}`; entries are {@link FlagResult}s (`failed` only on
 *   error entries).
 * - /flags v1 (`v` absent or 1, `/decide?v=3`): `{errorsWhileComputingFlags, featureFlags:
 *   {key: variant ?? enabled}, featureFlagPayloads: {key: payload}, quotaLimited?, requestId,
 *   evaluatedAt?}`; every evaluated flag appears in `featureFlags` (a failed one as false);
 *   `featureFlagPayloads` holds only flags with a payload, as the stored raw string.
 * - /decide v1: `featureFlags` is the list of enabled keys; /decide v2: `featureFlags` maps enabled
 *   keys to their value. Both also carry `errorsWhileComputingFlags`, `requestId` and
 *   `evaluatedAt`, which the SDKs ignore.
 *
 * Quota limited: `flags`/`featureFlags` are empty, `quotaLimited: ["feature_flags"]`, and
 * `errorsWhileComputingFlags` is false (research §5.2).
 */
import type { EvaluationResult, FlagResult } from './types.js';

/** Response extras shared by every shape. `evaluatedAt` is Unix ms; omitted when undefined. */
export interface ResponseExtra {
  requestId: string;
  evaluatedAt?: number;
  quotaLimited?: boolean;
}

/** /flags v2 body. */
export interface FlagsV2Response {
  errorsWhileComputingFlags: boolean;
  flags: Record<string, FlagResult>;
  quotaLimited?: string[];
  requestId: string;
  evaluatedAt?: number;
}

/** /flags v1 body. */
export interface FlagsV1Response {
  errorsWhileComputingFlags: boolean;
  featureFlags: Record<string, boolean | string>;
  featureFlagPayloads: Record<string, string>;
  quotaLimited?: string[];
  requestId: string;
  evaluatedAt?: number;
}

/** /decide v1 and v2 bodies. */
export interface DecideLegacyResponse {
  errorsWhileComputingFlags: boolean;
  featureFlags: string[] | Record<string, boolean | string>;
  quotaLimited?: string[];
  requestId: string;
  evaluatedAt?: number;
}

const QUOTA_LIMITED = ['feature_flags'];

function tail<T extends object>(body: T, extra: ResponseExtra): T {
  const b = body as T & { quotaLimited?: string[]; requestId: string; evaluatedAt?: number };
  if (extra.quotaLimited) b.quotaLimited = [...QUOTA_LIMITED];
  b.requestId = extra.requestId;
  if (extra.evaluatedAt !== undefined) b.evaluatedAt = extra.evaluatedAt;
  return b;
}

function entries(result: EvaluationResult, extra: ResponseExtra): FlagResult[] {
  return extra.quotaLimited ? [] : Object.values(result.flags);
}

function setKey<V>(obj: Record<string, V>, key: string, value: V): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** The v1 value of an entry: variant if any, else enabled (research §4 "Value"). */
export function flagValue(r: FlagResult): boolean | string {
  return r.variant ?? r.enabled;
}

/** /flags?v=2 body (also /decide?v>=4). */
export function toFlagsV2(result: EvaluationResult, extra: ResponseExtra): FlagsV2Response {
  const flags: Record<string, FlagResult> = {};
  for (const r of entries(result, extra)) setKey(flags, r.key, r);
  return tail({ errorsWhileComputingFlags: extra.quotaLimited ? false : result.errorsWhileComputingFlags, flags } as FlagsV2Response, extra);
}

/** /flags v1 body (also /decide?v=3). */
export function toFlagsV1(result: EvaluationResult, extra: ResponseExtra): FlagsV1Response {
  const featureFlags: Record<string, boolean | string> = {};
  const featureFlagPayloads: Record<string, string> = {};
  for (const r of entries(result, extra)) {
    setKey(featureFlags, r.key, flagValue(r));
    if (r.metadata.payload !== null) setKey(featureFlagPayloads, r.key, r.metadata.payload);
  }
  return tail({
    errorsWhileComputingFlags: extra.quotaLimited ? false : result.errorsWhileComputingFlags,
    featureFlags, featureFlagPayloads,
  } as FlagsV1Response, extra);
}

/**
 * Legacy /decide body for `decideVersion`: 1 (or less) → list of enabled keys, 2 → map of enabled
 * keys to values, 3 → /flags v1, 4 and above → /flags v2.
 */
export function toDecide(result: EvaluationResult, decideVersion: number, extra: ResponseExtra): FlagsV2Response | FlagsV1Response | DecideLegacyResponse {
  if (decideVersion >= 4) return toFlagsV2(result, extra);
  if (decideVersion === 3) return toFlagsV1(result, extra);
  const enabled = entries(result, extra).filter((r) => r.enabled);
  let featureFlags: string[] | Record<string, boolean | string>;
  if (decideVersion === 2) {
    const m: Record<string, boolean | string> = {};
    for (const r of enabled) setKey(m, r.key, flagValue(r));
    featureFlags = m;
  } else {
    featureFlags = enabled.map((r) => r.key);
  }
  return tail({ errorsWhileComputingFlags: extra.quotaLimited ? false : result.errorsWhileComputingFlags, featureFlags } as DecideLegacyResponse, extra);
}
