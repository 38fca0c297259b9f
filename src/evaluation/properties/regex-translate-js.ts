/**
 * The Rust fancy_regex dialect translated into JavaScript `u`-mode syntax, for the few patterns
 * RE2 cannot run (lookaround, backreferences, or `\b` on a non-ASCII subject): leading inline
 * flags become JS flags, `\d` `\w` `\s` `\b` and `\p{…}` get Rust's Unicode meaning, POSIX
 * classes expand, and constructs JS would run with different semantics (atomic groups, set
 * operations) are refused with {@link Unsupported}. Such patterns run on V8's backtracking
 * engine under a time limit (regex.ts), which stands in for fancy_regex's backtrack limit.
 * Pure; no state outside one {@link BacktrackingTranslator}.
 */

import { RustPatternScanner, Unsupported } from './regex-scan.js';

export { Unsupported };

/** Rust's Unicode `\w` (UTS#18 Annex C), as the inside of a JS `u` class. */
const WORD_UNICODE = '\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}';
const WORD_ASCII = '0-9A-Za-z_';

/** Characters JS allows after `\` in `u` mode outside a class (SyntaxCharacter and `/`). */
const JS_SYNTAX_CHARS = new Set('^$\\.*+?()[]{}|/'.split(''));

/** `\u{…}` for a code point (valid inside and outside classes with the `u` flag). */
function codePoint(cp: number): string {
  return '\\u{' + cp.toString(16).toUpperCase() + '}';
}

const PROPERTY_KEYS: Readonly<Record<string, string>> = {
  gc: 'General_Category', General_Category: 'General_Category',
  sc: 'Script', Script: 'Script', scx: 'Script_Extensions', Script_Extensions: 'Script_Extensions',
};
const propertyCache = new Map<string, string | null>();

/**
 * The JS property escape body for a Rust `\p{name}` (`L`, `Greek`, `sc=Greek`, `gc:Lu`, …), or
 * `null` when JS does not know it verbatim. Each spelling is checked once by compiling it.
 */
function jsProperty(name: string): string | null {
  const hit = propertyCache.get(name);
  if (hit !== undefined) return hit;
  const kv = /^\s*([A-Za-z_]+)\s*[=:]\s*([A-Za-z0-9_]+)\s*$/.exec(name);
  const candidates = kv !== null
    ? (PROPERTY_KEYS[kv[1]] !== undefined ? [`${PROPERTY_KEYS[kv[1]]}=${kv[2]}`] : [])
    : [name.trim(), `Script_Extensions=${name.trim()}`];
  let found: string | null = null;
  for (const c of candidates) {
    if (!/^[A-Za-z0-9_=]+$/.test(c)) continue;
    try { new RegExp(`\\p{${c}}`, 'u'); found = c; break; } catch { /* try the next spelling */ }
  }
  propertyCache.set(name, found);
  return found;
}

/** Translates one Rust-syntax pattern into a JS `u`-mode source and flags (for V8). */
export class BacktrackingTranslator extends RustPatternScanner {
  private groups = 0;
  private maxBackref = 0;

  /** The JS source and flags. @throws Unsupported */
  translate(): { source: string; flags: string } {
    this.scan();
    if (this.maxBackref > this.groups) throw new Unsupported('backreference to a missing group');
    return { source: this.out, flags: 'u' + (this.flags.i ? 'i' : '') + (this.flags.m ? 'm' : '') };
  }

  protected term(): void {
    const c = this.p[this.i]!;
    switch (c) {
      case '(': this.group(); return;
      case ')': this.closeGroup(); return;
      case '[': this.out += this.klass(); return;
      case '.': this.i++; this.out += this.flags.s ? '[^]' : '[^\\n]'; return;
      case '\\': this.out += this.escape(false); return;
      case '*': case '+': case '?': case '{': this.out += this.quantifier(); return;
      case '|': case '^': case '$': this.i++; this.out += c; return;
      case ']': case '}': case '/': this.i++; this.out += '\\' + c; return; // literal in Rust; escaped for `u`
      default: this.out += this.literal(); return;
    }
  }

  private group(): void {
    const rest = this.p.slice(this.i);
    let open: string;
    let m: RegExpExecArray | null;
    if ((m = /^\(\?P=([A-Za-z_][A-Za-z0-9_]*)\)/.exec(rest)) !== null) {
      this.i += m[0].length;
      this.out += '\\k<' + m[1] + '>';
      return;
    }
    if ((m = /^\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>/.exec(rest)) !== null) {
      open = '(?<' + m[1] + '>'; this.groups++;
    } else if ((m = /^\(\?(?::|=|!|<=|<!)/.exec(rest)) !== null) {
      open = m[0];
    } else if (rest.startsWith('(?')) {
      throw new Unsupported('inline flags, atomic or other special group');
    } else {
      m = /^\(/.exec(rest)!; open = '('; this.groups++;
    }
    this.i += m[0].length;
    this.out += open;
    this.depth++;
  }

  private closeGroup(): void {
    if (this.depth === 0) throw new Unsupported('unbalanced )');
    this.i++;
    this.depth--;
    this.out += ')';
  }

  /** The inside of a JS class for Rust's `\w` under the current `u` flag. */
  private wordSet(): string {
    return this.flags.u ? WORD_UNICODE : WORD_ASCII;
  }

  protected escapeInClass(): string {
    return this.escape(true);
  }

  protected classLiteralNeedsEscape(c: string): boolean {
    return c === '/';
  }

  /** An escape at `\`; returns its JS text (`inClass`: for use inside a class). */
  private escape(inClass: boolean): string {
    const p = this.p;
    const c = p[this.i + 1];
    if (c === undefined) throw new Unsupported('trailing backslash');
    this.i += 2;
    if (c >= '1' && c <= '9') {
      if (inClass) throw new Unsupported('backreference in class');
      let n = c;
      while ((p[this.i] ?? '') >= '0' && (p[this.i] ?? '') <= '9') n += p[this.i++];
      this.maxBackref = Math.max(this.maxBackref, Number(n));
      return '(?:\\' + n + ')';
    }
    const u = this.flags.u;
    switch (c) {
      case 'd': return u ? '\\p{Nd}' : inClass ? '0-9' : '[0-9]';
      case 'D':
        if (u) return '\\P{Nd}';
        if (inClass) throw new Unsupported('\\D inside a class under (?-u)');
        return '[^0-9]';
      case 's': return u ? '\\p{White_Space}' : inClass ? '\\t\\n\\v\\f\\r ' : '[\\t\\n\\v\\f\\r ]';
      case 'S':
        if (u) return '\\P{White_Space}';
        if (inClass) throw new Unsupported('\\S inside a class under (?-u)');
        return '[^\\t\\n\\v\\f\\r ]';
      case 'w': return inClass ? this.wordSet() : '[' + this.wordSet() + ']';
      case 'W':
        if (inClass) throw new Unsupported('\\W inside a class');
        return '[^' + this.wordSet() + ']';
      case 'n': case 't': case 'r': case 'f': case 'v':
        return '\\' + c;
      case 'b': case 'B': {
        if (inClass) throw new Unsupported('\\b in class');
        if (p[this.i] === '{') throw new Unsupported('\\b{...}');
        const w = '[' + this.wordSet() + ']';
        return c === 'b'
          ? `(?:(?<=${w})(?!${w})|(?<!${w})(?=${w}))`
          : `(?:(?<=${w})(?=${w})|(?<!${w})(?!${w}))`;
      }
      case 'p': case 'P': {
        const { name, negated } = this.propertyName(c);
        const prop = jsProperty(name);
        if (prop === null) throw new Unsupported(`unknown Unicode class ${JSON.stringify(name)}`);
        return (negated ? '\\P{' : '\\p{') + prop + '}';
      }
      case 'a': return '\\x07';
      case 'A': if (inClass) throw new Unsupported('\\A in class'); return '(?<![^])';
      case 'z': if (inClass) throw new Unsupported('\\z in class'); return '(?![^])';
      case 'k': {
        const m = /^<([A-Za-z_][A-Za-z0-9_]*)>/.exec(p.slice(this.i));
        if (m === null || inClass) throw new Unsupported('\\k');
        this.i += m[0].length;
        return '\\k<' + m[1] + '>';
      }
      case 'x': case 'u': case 'U': return codePoint(this.hexEscape(c));
      default:
        RustPatternScanner.checkPunctuationEscape(c);
        if (JS_SYNTAX_CHARS.has(c) || (inClass && c === '-')) return '\\' + c;
        return c; // the `u` flag forbids `\#`, `\@`, …; the bare character means the same
    }
  }
}
