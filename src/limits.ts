/**
 * The bounds every layer applies to public input: one place, so the
 * edge (capture, `/flags`, the management API), ingestion, the change feed and the node's
 * store agree on what can ever reach them. A value the edge accepts must be one that every
 * later stage (msgpackr, LMDB keys, Postgres btree indexes, our own recursive code) can carry.
 *
 * Pure: no IO. The "Limits on public input" table of docs/api.md lists these numbers.
 */

/**
 * Longest distinct id, in UTF-16 code units (capture-rs truncates at 200 characters). Ids and
 * aliases longer than this are truncated at capture and refused everywhere they become keys.
 */
export const MAX_DISTINCT_ID_CHARS = 200;

/**
 * Deepest nesting of a JSON value (objects and arrays) accepted anywhere: event properties,
 * `$set`/`$set_once`, person and group properties, flag `filters`, request bodies. 128 is
 * serde_json's recursion limit, so PostHog's Rust services refuse what we refuse; msgpackr's
 * recursive codec overflows the stack near 1,250.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * Largest JSON-encoded size of one person's or group's stored properties, in bytes. An update
 * that would grow them past this is not applied (the event is still stored).
 */
export const MAX_PROPERTIES_BYTES = 512 * 1024;

/** Largest size of one captured event, JSON-encoded, in bytes (capture-rs: 1 MiB). */
export const MAX_EVENT_BYTES = 1024 * 1024;

/**
 * Deepest msgpack payload carried between processes (gRPC entity and event payloads) and kept
 * in the node's LMDB: twice {@link MAX_JSON_DEPTH}, room for the envelope (entity, filters,
 * event) around a body the edge bounded, and far below msgpackr's stack overflow (~1,250).
 * Deeper payloads are refused by the codec (src/contract/payload.ts) instead of crashing it.
 */
export const MAX_PAYLOAD_DEPTH = 2 * MAX_JSON_DEPTH;

/**
 * Deepest management API body: the body object around field values bounded by
 * {@link MAX_JSON_DEPTH}. Refused before parsing (src/json-budget.ts), so no later recursive
 * walk (validators, postgres.js's JSON.stringify of a jsonb parameter) can overflow the stack.
 */
export const MAX_API_BODY_DEPTH = MAX_JSON_DEPTH + 1;

/**
 * Most array elements plus object members in one `/flags`, `/decide` or management API body,
 * counted before parsing (src/json-budget.ts). Their byte limits are 1 MiB by default, so a
 * legitimate body (person properties by the thousand, a flag with hundreds of groups, a list of
 * ids by the ten thousand) averages far more than 10 bytes a member; a body of tiny members
 * (`[0,0,...]`, a 100,000-key object) costs far more to build than its bytes suggest.
 */
export const MAX_BODY_MEMBERS = 100_000;

/**
 * Most array elements plus object members in one capture request, once decoded (its byte limit
 * is 20 MiB): five times what a dense 1 MB body holds, the most posthog-js sends at once
 * (recordings are split near 0.9 MB and usually compressed into strings).
 */
export const MAX_CAPTURE_MEMBERS = 500_000;

/**
 * Most events in one capture request (the top-level array or the `batch` array). SDKs send at
 * most 100 (posthog-node and posthog-python `maxBatchSize`/`upload_size`, mobile SDKs 50) and
 * posthog-js flushes every few seconds; each event costs validation, a uuid and a
 * serialisation, so a 600,000-event body under the byte limit held a node for seconds.
 */
export const MAX_CAPTURE_EVENTS = 10_000;

/**
 * Longest id (distinct id, group key, token, entity id) used verbatim inside an LMDB key, in
 * UTF-16 code units; longer ids are replaced by a fixed-size digest in the key (at most 3 bytes
 * per code unit, so 400 code units stay well under {@link LMDB_MAX_KEY_BYTES} with the other
 * key parts).
 */
export const MAX_KEY_PART_CHARS = 400;

/** LMDB's largest key, in bytes (lmdb-js default build: 1978). Keys are built to stay under it. */
export const LMDB_MAX_KEY_BYTES = 1978;

/**
 * Depth of `value`: 0 for a scalar, 1 for `{}` or `[]`, 1 + the deepest child otherwise.
 * Iterative (an explicit stack), so it cannot itself overflow the call stack, and it stops as
 * soon as `limit` is passed: cost O(nodes visited), at most the whole value.
 * @returns the depth, or `limit + 1` as soon as the value is known to be deeper than `limit`.
 */
export function jsonDepth(value: unknown, limit: number = MAX_JSON_DEPTH): number {
  if (typeof value !== 'object' || value === null) return 0;
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (d > max) { max = d; if (max > limit) return limit + 1; }
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) { const c = v[i]; if (typeof c === 'object' && c !== null) stack.push([c, d + 1]); }
    } else {
      for (const k in v as Record<string, unknown>) {
        const c = (v as Record<string, unknown>)[k];
        if (typeof c === 'object' && c !== null) stack.push([c, d + 1]);
      }
    }
  }
  return max;
}

/** True when `value` nests deeper than `limit` (default {@link MAX_JSON_DEPTH}). */
export function tooDeep(value: unknown, limit: number = MAX_JSON_DEPTH): boolean {
  return jsonDepth(value, limit) > limit;
}

/**
 * Largest compiled regex program accepted for a `regex` / `not_regex` filter, in program units:
 * one unit per instruction of the RE2 program (re2js) plus one per range of each character
 * class it tests, so both a long program and a program full of large Unicode classes count
 * (the measure tracks the program's memory, as Rust regex's `size_limit`, 10 MiB by default,
 * and RE2's `max_mem` do). PostHog's Rust service builds patterns with fancy_regex, whose build
 * errors (including the size limit) make both operators false; a pattern over this bound is
 * likewise refused on write (400) and false for both operators at evaluation.
 *
 * 250,000 units accept every ordinary pattern (an e-mail domain, a URL path: tens of units) and
 * the longer shapes people write, such as a whole e-mail address with Unicode classes
 * (`[\w.+-]{1,64}@[\w-]{1,63}\.[a-z]{2,10}$`: 101,822; Unicode `\w` is ~800 ranges) or
 * `(?i)\w{1,250}!` (200,002: its first search of 8 KiB builds the lazy DFA in ~0.25 s, later ones
 * take ~4 ms), and refuse `(?i)\w{1,1000}!` (800,002: 1.3–2.4 s per search of 8 KiB).
 */
export const MAX_REGEX_PROGRAM_UNITS = 250_000;

/**
 * Longest property value (its string form, in UTF-16 code units) that `regex`, `not_regex`,
 * `icontains` and `not_icontains` look into. A longer value is a match-time error, answered as
 * PostHog answers one (fancy_regex's limit error, `.unwrap_or(false)` in Rust's flag matching):
 * no match for both the positive and the negated operator, so neither can be steered by an
 * oversized value. 8 KiB holds any e-mail, URL or user agent; it bounds the cost of one search
 * (a linear-time search is still linear in the subject: ~1 s per 10 KB with the worst patterns
 * before {@link MAX_REGEX_PROGRAM_UNITS}), which the per-request budget cannot interrupt.
 * PostHog itself has no such bound: a value past it is the one place answers differ.
 */
export const MAX_MATCH_SUBJECT_CHARS = 8_192;

/**
 * Default evaluation budget of one /flags request across all its flags, in milliseconds of
 * wall-clock time on the evaluating thread (`SWITCHYARD_EVAL_BUDGET_MS`; src/evaluation/budget.ts).
 * An ordinary request evaluates 50 flags in tens of microseconds, so only pathological
 * definitions (hundreds of backtracking regex conditions, huge property values) reach it; it is
 * generous enough that a GC pause or a busy core does not fail ordinary requests.
 */
export const DEFAULT_EVAL_BUDGET_MS = 50;

/**
 * Largest capture outbox bound a node accepts, in bytes (8 TiB; SWITCHYARD_MAX_OUTBOX_BYTES,
 * eval-node/capture/outbox.ts): the outbox's LMDB environment maps twice the bound up front, and
 * a map past the process's address space (x86-64: 128 TiB) made LMDB crash the process instead of
 * failing.
 */
export const MAX_OUTBOX_BYTES = 2 ** 43;
