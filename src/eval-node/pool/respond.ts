/**
 * The serialize stage: an {@link EvaluationResult} → the response body of the requested shape
 * (research/posthog-flag-evaluation.md §5.2–§5.3, built by the evaluation core's `toFlagsV2`,
 * `toFlagsV1`, `toDecide`), plus the remote-config fields that `config=true` and `/decide` add
 * (§5.2: "remote-config keys are flattened into the top level"). Shared by the inline path, the
 * pool workers and the quota-limited answer, so every path produces byte-identical bodies.
 */
import { orderedResultsOf, toDecide, toFlagsV1, toFlagsV2, type EvaluationResult, type FlagResult } from '../../evaluation/index.js';
import type { ResponseShape } from './job.js';

/** The result of evaluating nothing (disable_flags, quota limited). */
export const EMPTY_RESULT: EvaluationResult = Object.freeze({ flags: Object.freeze({}) as EvaluationResult['flags'], errorsWhileComputingFlags: false });

/**
 * The remote-config fields of PostHog's `/flags?config=true` for a project this service knows
 * nothing else about: autocapture on, no session recording, surveys, heatmaps or site apps.
 * `hasFeatureFlags` is filled per project. Values follow PostHog's defaults (research §5.2).
 */
function configFields(hasFeatureFlags: boolean): Record<string, unknown> {
  return {
    config: { enable_collect_everything: true },
    toolbarParams: {},
    isAuthenticated: false,
    supportedCompression: ['gzip', 'gzip-js'],
    hasFeatureFlags,
    sessionRecording: false,
    surveys: false,
    heatmaps: false,
    capturePerformance: false,
    autocaptureExceptions: false,
    autocapture_opt_out: false,
    siteApps: [],
    elementsChainAsString: true,
    defaultIdentifiedOnly: true,
  };
}

/** Options of {@link serializeResult}. */
export interface SerializeOptions {
  shape: ResponseShape;
  config: boolean;
  requestId: string;
  /** Unix ms of the evaluation. */
  evaluatedAt: number;
  quotaLimited?: boolean;
  /** Whether the project has any live flag (the config field `hasFeatureFlags`). */
  hasFeatureFlags: boolean;
}

/** The JSON body for `result` in `opts.shape`. */
export function serializeResult(result: EvaluationResult, opts: SerializeOptions): string {
  if (opts.shape === 'flags-v2' && !opts.config && !opts.quotaLimited) return flagsV2Json(result, opts.requestId, opts.evaluatedAt);
  const extra = { requestId: opts.requestId, evaluatedAt: opts.evaluatedAt, quotaLimited: opts.quotaLimited };
  let body: object;
  switch (opts.shape) {
    case 'flags-v2': body = toFlagsV2(result, extra); break;
    case 'flags-v1': body = toFlagsV1(result, extra); break;
    case 'decide-v2': body = toDecide(result, 2, extra); break;
    case 'decide-v1': body = toDecide(result, 1, extra); break;
  }
  if (opts.config) Object.assign(body, configFields(opts.hasFeatureFlags));
  return JSON.stringify(body);
}

/*
 * Fast path for the hot shape (/flags?v=2 without config): JSON.stringify of the nested v2 body
 * was 40 % of a request's evaluator CPU (cpu-prof, 20-flag project). The core shares the `reason`
 * and `metadata` objects of a result across requests (built once per compiled flag and condition;
 * frozen), and non-failed results themselves, so whole `"key":{entry}` members are cached by
 * result identity (see cachedMember); on a miss the reason and metadata JSON come from a WeakMap.
 * Failed entries (built per request) are serialized directly. Measured on the 50-flag workload:
 * 4.6 µs per body against 57 µs for JSON.stringify(toFlagsV2()) (same run, contended 2 vCPU). The output is byte-identical to `JSON.stringify(toFlagsV2(...))`, which
 * test/eval-node/http/respond.test.ts pins.
 */
const objectJson = new WeakMap<object, string>();
/** Flag keys and variants come from definitions (a bounded set); the cap guards against growth anyway. */
const stringJson = new Map<string, string>();
const STRING_JSON_CAP = 100_000;

function cachedObject(o: object): string {
  let s = objectJson.get(o);
  if (s === undefined) {
    s = JSON.stringify(o);
    objectJson.set(o, s);
  }
  return s;
}

function cachedString(v: string): string {
  let s = stringJson.get(v);
  if (s === undefined) {
    s = JSON.stringify(v);
    if (stringJson.size >= STRING_JSON_CAP) stringJson.clear();
    stringJson.set(v, s);
  }
  return s;
}

/** A serialized `"key":{entry}` member of one (shared, frozen) result. */
interface CachedMember {
  /** The flags-object key it was built under (evaluateFlags uses `r.key`; checked anyway). */
  key: string;
  json: string;
  /** UTF-8 of `json`, copied into the response buffer by {@link flagsV2Bytes}. */
  bytes: Buffer;
}

/**
 * Whole `"key":{…}` members cached by result identity: the core shares non-failed results (one
 * frozen object per distinct outcome of a compiled flag, match-flag.ts `result`), so a hit is one
 * WeakMap lookup, and entries die with the compilation that made their results. Measured
 * in-process on the 50-flag workload: 3.3 µs per byte body against 4.2 µs with the previous
 * per-key Map and identity scan of (reason, metadata, enabled, variant).
 */
const memberCache = new WeakMap<FlagResult, CachedMember>();

function memberJson(key: string, r: FlagResult): string {
  if (r.failed) return `${JSON.stringify(key)}:${JSON.stringify(r)}`;
  return cachedMember(key, r).json;
}

/** The cached member of a non-failed result (built on first sight). */
function cachedMember(key: string, r: FlagResult): CachedMember {
  const hit = memberCache.get(r);
  if (hit !== undefined && hit.key === key) return hit;
  const json = `${cachedString(key)}:{"key":${cachedString(r.key)},"enabled":${r.enabled},"variant":${r.variant === null ? 'null' : cachedString(r.variant)},"reason":${cachedObject(r.reason)},"metadata":${cachedObject(r.metadata)}}`;
  const member: CachedMember = { key, json, bytes: Buffer.from(json) };
  if (hit === undefined) memberCache.set(r, member);
  return member;
}

/** `JSON.stringify(toFlagsV2(result, {requestId, evaluatedAt}))`, from cached fragments. */
export function flagsV2Json(result: EvaluationResult, requestId: string, evaluatedAt: number): string {
  let flags = '';
  const ordered = orderedResultsOf(result);
  if (ordered !== null) {
    // Shared results in key order (no failed entry): r.key is the member's key.
    for (let i = 0; i < ordered.length; i++) {
      const r = ordered[i]!;
      const m = cachedMember(r.key, r).json;
      flags = i === 0 ? m : flags + ',' + m;
    }
  } else for (const key in result.flags) {
    const m = memberJson(key, result.flags[key]!);
    flags = flags === '' ? m : flags + ',' + m;
  }
  return `{"errorsWhileComputingFlags":${result.errorsWhileComputingFlags},"flags":{${flags}},"requestId":${JSON.stringify(requestId)},"evaluatedAt":${evaluatedAt}}`;
}

/*
 * The same body as bytes, for the inline path (the IO thread hands it straight to uWS). Why: the
 * string body was a rope of ~100 pieces that uWS had to flatten (a 12 KB copy on the V8 heap) and
 * transcode to UTF-8 (another pass) on every `res.end`, and the 12 KB string itself was most of a
 * request's garbage (cpu-prof: the `res.end` frame was the largest self-time entry of the node;
 * measured before/after in the commit). Here every cached member also keeps its UTF-8 bytes, the
 * body is assembled by memcpy (TypedArray#set) into one reused buffer, and uWS copies the view
 * out during `res.end`. test/eval-node/http/respond.test.ts pins the bytes against flagsV2Json.
 */
/** Reused response buffer (grown by doubling, never shrunk; bodies beyond it are rare). */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);
const ERRORS_FALSE = Buffer.from('{"errorsWhileComputingFlags":false,"flags":{');
const ERRORS_TRUE = Buffer.from('{"errorsWhileComputingFlags":true,"flags":{');

/**
 * The member last written at each position of an ordered answer, and its bytes: most flags give
 * most users the same answer (and rollouts one of two), so an identity check against the previous
 * answer's member at that position skips the WeakMap lookup (cpu-prof: the lookup was a fifth of
 * this function). Results are compared by identity, so a position used by another project or a
 * recompiled one simply misses; at most one stale result per position is kept alive.
 */
const slotResult: (FlagResult | undefined)[] = [];
const slotBytes: (Buffer | undefined)[] = [];

/** Makes room for `extra` more bytes after `used` (copying what is there). */
function ensure(used: number, extra: number): Buffer {
  if (used + extra <= scratch.length) return scratch;
  const grown = Buffer.allocUnsafeSlow(Math.max(scratch.length * 2, used + extra));
  scratch.copy(grown, 0, 0, used);
  scratch = grown;
  return grown;
}

/**
 * `flagsV2Json(...)` as UTF-8 bytes, in a buffer this module reuses: the view is valid only until
 * the next call, so the caller must hand it to uWS (which copies it) before evaluating anything else.
 */
export function flagsV2Bytes(result: EvaluationResult, requestId: string, evaluatedAt: number): Uint8Array {
  const head = result.errorsWhileComputingFlags ? ERRORS_TRUE : ERRORS_FALSE;
  let buf = ensure(0, head.length);
  buf.set(head, 0);
  let o = head.length;
  let first = true;
  const ordered = orderedResultsOf(result);
  if (ordered !== null) {
    // The usual case: every live flag answered, none failed, keys in slot order. Walking the
    // results array skips the flags object (a megamorphic keyed load per key, cpu profile).
    for (let i = 0; i < ordered.length; i++) {
      const r = ordered[i]!;
      let m: Buffer;
      if (slotResult[i] === r) m = slotBytes[i]!;
      else {
        m = cachedMember(r.key, r).bytes;
        slotResult[i] = r;
        slotBytes[i] = m;
      }
      if (o + m.length + 1 > buf.length) buf = ensure(o, m.length + 1);
      if (i !== 0) buf[o++] = 0x2c; // ','
      buf.set(m, o);
      o += m.length;
    }
    first = ordered.length === 0;
  } else for (const key in result.flags) {
    const r = result.flags[key]!;
    if (r.failed) {
      // Per-request failed entries: serialized directly (rare).
      const json = memberJson(key, r);
      buf = ensure(o, json.length * 3 + 1);
      if (!first) buf[o++] = 0x2c; // ','
      o += buf.write(json, o, 'utf8');
    } else {
      const m = cachedMember(key, r).bytes;
      buf = ensure(o, m.length + 1);
      if (!first) buf[o++] = 0x2c;
      buf.set(m, o);
      o += m.length;
    }
    first = false;
  }
  buf = ensure(o, TAIL_REQUEST_ID.length + requestId.length * 6 + TAIL_EVALUATED_AT.length + 24);
  buf.set(TAIL_REQUEST_ID, o);
  o += TAIL_REQUEST_ID.length;
  o = writeJsonString(buf, o, requestId);
  buf.set(TAIL_EVALUATED_AT, o);
  o += TAIL_EVALUATED_AT.length;
  if (Number.isSafeInteger(evaluatedAt) && evaluatedAt >= 0) o = writeDigits(buf, o, evaluatedAt);
  else o += buf.write(JSON.stringify(evaluatedAt), o, 'latin1');
  buf[o++] = 0x7d; // '}'
  return buf.subarray(0, o);
}

const TAIL_REQUEST_ID = Buffer.from('},"requestId":');
const TAIL_EVALUATED_AT = Buffer.from(',"evaluatedAt":');

/**
 * Writes `JSON.stringify(s)` at `o` and returns the end. Request ids (UUIDs) are printable ASCII
 * without `"` or `\`: their bytes are the characters, written in one loop instead of building
 * the quoted string and encoding it, checked as they are copied; anything else goes through
 * JSON.stringify. `buf` must have room for `s.length * 6 + 2` bytes.
 */
function writeJsonString(buf: Buffer, o: number, s: string): number {
  const start = o;
  buf[o++] = 0x22;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // Checked while copied (one pass): on a character that needs escaping, start over with JSON.stringify.
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return start + buf.write(JSON.stringify(s), start, 'utf8');
    buf[o++] = c;
  }
  buf[o++] = 0x22;
  return o;
}

/** Writes the decimal digits of the non-negative safe integer `n` at `o` (as JSON prints it) and returns the end. */
function writeDigits(buf: Buffer, o: number, n: number): number {
  let len = 1;
  for (let p = 10; p <= n; p *= 10) len++;
  for (let i = len - 1; i >= 0; i--) {
    const d = n % 10;
    buf[o + i] = 0x30 + d;
    n = (n - d) / 10;
  }
  return o + len;
}

/**
 * {@link serializeResult} as UTF-8 bytes: the hot shape (v2 without config) comes from
 * {@link flagsV2Bytes} (a view into a reused buffer, valid until the next call); the other shapes
 * are the string body.
 */
export function serializeResultBytes(result: EvaluationResult, opts: SerializeOptions): Uint8Array | string {
  if (opts.shape === 'flags-v2' && !opts.config && !opts.quotaLimited) return flagsV2Bytes(result, opts.requestId, opts.evaluatedAt);
  return serializeResult(result, opts);
}
