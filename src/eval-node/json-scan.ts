/**
 * Nesting depth of JSON text, measured before it is parsed (issue 8 item 4): V8's JSON.parse
 * does not overflow on deep input but builds all of it, so 20 M `[` took seconds and 32 M
 * gigabytes. One pass over the characters, strings and escapes skipped, stopping as soon as
 * the depth passes the limit. Pure.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * True when `text` (JSON, possibly invalid) opens more than `limit` arrays or objects inside one
 * another. Brackets inside strings do not count. Cost: O(text length), no allocation.
 */
export function jsonTextTooDeep(text: string, limit: number): boolean {
  if (text.length <= limit) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === 0x5b || c === 0x7b) { if (++depth > limit) return true; }
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
