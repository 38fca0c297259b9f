/**
 * Fast JSON text of the /flags v2 and v1 bodies: byte-for-byte what
 * `JSON.stringify(toFlagsV2(result, extra))` / `JSON.stringify(toFlagsV1(result, extra))` give
 * (pinned by a property-based test), built without walking every nested object.
 *
 * Why: serialising a 50-flag v2 body with JSON.stringify costs more than evaluating it
 * (bench/evaluation.ts). Reason and metadata objects are frozen and shared by every request
 * (compile.ts, match-flag.ts), so their JSON text is computed once and cached in a WeakMap;
 * a flag key's JSON text is cached in a Map. Objects that are not frozen (failed entries built
 * per request) are stringified normally. Entries must have the {@link FlagResult} fields only, in
 * the order evaluateFlags builds them (key, enabled, variant, failed?, reason, metadata).
 */
import type { ResponseExtra } from './responses.js';
import type { EvaluationResult, FlagResult } from './types.js';
import { orderedResultsOf } from './evaluate.js';

const objectJson = new WeakMap<object, string>();
const keyJson = new Map<string, string>();
/** Bound on the key cache (keys come from definitions; the bound only guards against abuse). */
const MAX_CACHED_KEYS = 200_000;

function fragment(o: object): string {
  let s = objectJson.get(o);
  if (s === undefined) {
    s = JSON.stringify(o);
    if (Object.isFrozen(o)) objectJson.set(o, s);
  }
  return s;
}

function quoted(key: string): string {
  let s = keyJson.get(key);
  if (s === undefined) {
    s = JSON.stringify(key);
    if (keyJson.size < MAX_CACHED_KEYS) keyJson.set(key, s);
  }
  return s;
}

/**
 * Whole `"key":{…}` entries of shared results (frozen: one per distinct outcome of a compiled
 * flag, match-flag.ts), by identity: a hit is one lookup instead of a ten-piece concatenation per
 * flag (1,000-flag answers: the concatenations were most of the serializer's time).
 */
const entryJson = new WeakMap<FlagResult, string>();

function entry(r: FlagResult): string {
  let s = entryJson.get(r);
  if (s === undefined) {
    s = buildEntry(r);
    if (Object.isFrozen(r)) entryJson.set(r, s);
  }
  return s;
}

function buildEntry(r: FlagResult): string {
  // Same key order as the objects built in match-flag.ts: key, enabled, variant, failed?, reason, metadata.
  const k = quoted(r.key);
  return `${k}:{"key":${k},"enabled":${r.enabled ? 'true' : 'false'},"variant":${r.variant === null ? 'null' : quoted(r.variant)}${
    r.failed === true ? ',"failed":true' : ''},"reason":${fragment(r.reason)},"metadata":${fragment(r.metadata)}}`;
}

function tailJson(extra: ResponseExtra): string {
  let s = extra.quotaLimited ? ',"quotaLimited":["feature_flags"]' : '';
  s += `,"requestId":${JSON.stringify(extra.requestId)}`;
  if (extra.evaluatedAt !== undefined) s += `,"evaluatedAt":${JSON.stringify(extra.evaluatedAt)}`;
  return `${s}}`;
}

/** `JSON.stringify(toFlagsV2(result, extra))`, faster. */
export function serializeFlagsV2(result: EvaluationResult, extra: ResponseExtra): string {
  // Array + join gives one flat string; `+=` would build a rope that is flattened later, slowly.
  const parts: string[] = [];
  if (!extra.quotaLimited) {
    const ordered = orderedResultsOf(result);
    if (ordered !== null) for (let i = 0; i < ordered.length; i++) parts.push(entry(ordered[i]!));
    else for (const k in result.flags) parts.push(entry(result.flags[k]!));
  }
  return `{"errorsWhileComputingFlags":${!extra.quotaLimited && result.errorsWhileComputingFlags ? 'true' : 'false'},"flags":{${
    parts.join(',')}}${tailJson(extra)}`;
}

/** `JSON.stringify(toFlagsV1(result, extra))`, faster. */
export function serializeFlagsV1(result: EvaluationResult, extra: ResponseExtra): string {
  let flags = '';
  let payloads = '';
  if (!extra.quotaLimited) {
    for (const k in result.flags) {
      const r = result.flags[k]!;
      const q = quoted(r.key);
      const value = r.variant !== null ? quoted(r.variant) : r.enabled ? 'true' : 'false';
      flags += `${flags === '' ? '' : ','}${q}:${value}`;
      if (r.metadata.payload !== null) payloads += `${payloads === '' ? '' : ','}${q}:${JSON.stringify(r.metadata.payload)}`;
    }
  }
  return `{"errorsWhileComputingFlags":${!extra.quotaLimited && result.errorsWhileComputingFlags ? 'true' : 'false'},"featureFlags":{${flags}},"featureFlagPayloads":{${payloads}}${tailJson(extra)}`;
}
