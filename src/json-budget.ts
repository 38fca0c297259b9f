/**
 * A budget for JSON text, checked in one pass over the characters before the text is parsed
 * (both tiers: the node's capture and `/flags` bodies, the management API's bodies). V8's
 * JSON.parse has no limits of its own: it builds every array and object of a body before anyone
 * can look at it, and what it builds is then walked, copied and serialised again. A body under
 * the byte limit can still hold millions of members (a 1.5 M-key object cost seconds and
 * hundreds of MB) or hundreds of thousands of events. The scan refuses such a body at the first
 * character past the budget, so a refusal costs at most one read of the text.
 *
 * What is counted (strings are skipped, escapes included, so brackets inside them do not count):
 * - depth: arrays and objects open inside one another;
 * - members: array elements plus object members, over the whole text;
 * - events: elements of the event list a capture body carries, which is the top-level array,
 *   or the array under the top-level key `batch` (PostHog capture's batch envelope).
 *
 * The scan does not validate the grammar: invalid text is left for JSON.parse to refuse (its
 * counts are then meaningless but still bounded by the text's length). Pure: no IO.
 * Cost: O(text length), no allocation unless the text is over budget.
 */

/** Limits a text must stay within; `maxEvents` is checked only when given. */
export interface JsonBudget {
  readonly maxDepth: number;
  readonly maxMembers: number;
  readonly maxEvents?: number;
}

/** Which limit a text passes first, the limit, and the top-level key it happened under (if any). */
export interface JsonBudgetExcess {
  readonly kind: 'depth' | 'members' | 'events';
  readonly limit: number;
  /**
   * The top-level object key whose value broke the limit (decoded), or null when the text is not
   * an object or the limit broke at the top level. Used as PostHog's `attr`.
   */
  readonly key: string | null;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * Checks `text` against `budget` in one pass.
 * @returns null when the text stays within every limit, else the first limit it passes.
 */
export function checkJsonBudget(text: string, budget: JsonBudget): JsonBudgetExcess | null {
  const maxDepth = budget.maxDepth;
  const maxMembers = budget.maxMembers;
  const maxEvents = budget.maxEvents ?? Infinity;
  if (withinByBounds(text, maxDepth, Math.min(maxMembers, maxEvents))) return null;
  let depth = 0;
  let members = 0;
  let events = 0;
  // Depth of the event array while it is open (1: the text is an array; 2: `batch`), else -1.
  let eventDepth = -1;
  // An array or object just opened: its first member, if any, has not been counted yet.
  let opened = false;
  // The top-level value is an object and the next string at depth 1 is a key.
  let topObject = false;
  let expectKey = false;
  // Bounds of the last top-level key, quotes excluded (keyEnd < 0: none yet).
  let keyStart = 0;
  let keyEnd = -1;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (opened) {
      if (isSpace(c)) continue;
      opened = false;
      if (c !== CLOSE_ARRAY && c !== CLOSE_OBJECT) {
        if (++members > maxMembers) return excess('members', maxMembers, text, depth, keyStart, keyEnd);
        if (depth === eventDepth && ++events > maxEvents) return excess('events', maxEvents, text, depth, keyStart, keyEnd);
      }
    }
    if (c === QUOTE) {
      const end = stringEnd(text, i + 1);
      if (end < 0) return null; // unterminated: JSON.parse refuses it
      if (depth === 1 && expectKey) { keyStart = i + 1; keyEnd = end; expectKey = false; }
      i = end;
    } else if (c === COMMA && depth > 0) {
      if (++members > maxMembers) return excess('members', maxMembers, text, depth, keyStart, keyEnd);
      if (depth === eventDepth && ++events > maxEvents) return excess('events', maxEvents, text, depth, keyStart, keyEnd);
      if (depth === 1 && topObject) expectKey = true;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > maxDepth) return excess('depth', maxDepth, text, depth, keyStart, keyEnd);
      opened = true;
      if (depth === 1) {
        topObject = c === OPEN_OBJECT;
        expectKey = topObject;
        if (!topObject) eventDepth = 1;
      } else if (depth === 2 && c === OPEN_ARRAY && topObject && isBatchKey(text, keyStart, keyEnd)) {
        eventDepth = 2;
      }
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      if (depth === eventDepth) eventDepth = -1;
      if (depth > 0) depth--;
    }
  }
  return null;
}

/**
 * True when `text` cannot pass the limits whatever its structure: every member (and event) takes
 * at least one character, so a text no longer than `maxCount` cannot hold more; and depth never
 * exceeds the number of `[` and `{` characters, counted with indexOf (strings included: an upper
 * bound). Small bodies, the usual /flags request, skip the character scan this way.
 */
function withinByBounds(text: string, maxDepth: number, maxCount: number): boolean {
  if (text.length > maxCount) return false;
  if (text.length <= maxDepth) return true;
  let opens = 0;
  for (let i = text.indexOf('{'); i >= 0; i = text.indexOf('{', i + 1)) if (++opens > maxDepth) return false;
  for (let i = text.indexOf('['); i >= 0; i = text.indexOf('[', i + 1)) if (++opens > maxDepth) return false;
  return true;
}

/**
 * Index of the quote closing the string whose text starts at `from`, or -1. Jumps from quote to
 * quote with indexOf (much faster than a loop over the characters, and strings are most of a
 * body); a quote after an odd run of backslashes is escaped and skipped.
 */
function stringEnd(text: string, from: number): number {
  for (;;) {
    const q = text.indexOf('"', from);
    if (q < 0) return -1;
    let k = q - 1;
    while (k >= from && text.charCodeAt(k) === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q;
    from = q + 1;
  }
}

/** True when the key between `start` and `end` (quotes excluded) reads `batch`, escapes decoded. */
function isBatchKey(text: string, start: number, end: number): boolean {
  const len = end - start;
  if (len === 5) return text.startsWith('batch', start);
  // `"ba\u0074ch"` is `batch` to JSON.parse too; escaped keys are rare, decoding them is cheap.
  if (len < 5 || len > 30 || text.indexOf('\\', start) >= end) return false;
  return decodeKey(text, start, end) === 'batch';
}

function decodeKey(text: string, start: number, end: number): string | null {
  try {
    return JSON.parse(text.slice(start - 1, end + 1)) as string;
  } catch {
    return null;
  }
}

function excess(kind: JsonBudgetExcess['kind'], limit: number, text: string, depth: number, keyStart: number, keyEnd: number): JsonBudgetExcess {
  // Past depth 1 the scan is inside the value of the last top-level key (when the text is an object).
  const key = depth >= 2 && keyEnd >= 0 ? decodeKey(text, keyStart, keyEnd) : null;
  return { kind, limit, key };
}

/** A refusal's message: which limit was passed, with its number (no final full stop). */
export function describeExcess(e: JsonBudgetExcess): string {
  switch (e.kind) {
    case 'depth': return `JSON nests deeper than ${e.limit} levels`;
    case 'members': return `JSON holds more than ${e.limit} array elements and object members`;
    case 'events': return `batch holds more than ${e.limit} events`;
  }
}
