/**
 * The Rust `regex` dialect translated into RE2 syntax, run by re2js (a linear-time engine). The two dialects share most syntax (Rust's crate descends from RE2); this
 * translator rewrites where they differ and refuses what RE2 cannot run: leading inline flags
 * become RE2 inline flags, `\d` `\w` `\s` get Rust's Unicode meaning (RE2's are ASCII), POSIX
 * classes expand, Rust property names map to RE2's, and backreferences, lookaround, atomic
 * groups, possessive quantifiers and class set operations are refused with {@link Unsupported}.
 * The rules and their sources are in regex.ts's module doc; this file is only the translator,
 * used by `compileRegex` there. Pure; no state outside one {@link Translator}.
 */

import { RustPatternScanner, Unsupported } from './regex-scan.js';

export { Unsupported };

/**
 * Rust's Unicode `\w` (UTS#18 Annex C: Alphabetic + M + Nd + Pc + Join_Control) as the inside of
 * an RE2 class. RE2 has no binary properties: Alphabetic is approximated by L + Nl (+ M, already
 * there); Other_Alphabetic code points outside M (e.g. circled letters U+24B6–U+24E9) are missed.
 */
const WORD_UNICODE = '\\p{L}\\p{Nl}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}';
const WORD_ASCII = '0-9A-Za-z_';
/** Rust's Unicode `\s` (the White_Space property) as the inside of an RE2 class. */
const SPACE_UNICODE = '\\t\\n\\x{B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}';
const SPACE_ASCII = '\\t\\n\\x{B}\\f\\r ';

/** `\x{…}` for a code point (valid inside and outside classes in RE2). */
function codePoint(cp: number): string {
  return '\\x{' + cp.toString(16).toUpperCase() + '}';
}

/** Rust property keys RE2 understands through the bare value (RE2 knows scripts and general categories only). */
const PROPERTY_KEYS: ReadonlySet<string> = new Set(['gc', 'General_Category', 'sc', 'Script', 'scx', 'Script_Extensions']);
/** Binary properties Rust knows that are expressible as RE2 classes. */
const BINARY_PROPERTIES: Readonly<Record<string, string>> = { White_Space: SPACE_UNICODE, Alphabetic: '\\p{L}\\p{Nl}\\p{M}' };

/**
 * The RE2 class body for a Rust `\p{name}` (`L`, `Greek`, `sc=Greek`, `gc:Lu`, `White_Space`),
 * or `null` when RE2 cannot express it. `valid` tells whether RE2 knows a bare name.
 */
function re2Property(name: string, valid: (body: string) => boolean): string | null {
  const kv = /^\s*([A-Za-z_]+)\s*[=:]\s*([A-Za-z0-9_]+)\s*$/.exec(name);
  const bare = kv !== null ? (PROPERTY_KEYS.has(kv[1]!) ? kv[2]! : null) : name.trim();
  if (bare === null || !/^[A-Za-z0-9_]+$/.test(bare)) return null;
  if (BINARY_PROPERTIES[bare] !== undefined && kv === null) return BINARY_PROPERTIES[bare]!;
  return valid(`\\p{${bare}}`) ? `\\p{${bare}}` : null;
}

/** Translates one Rust-syntax pattern into an RE2 source (flags inline). */
export class Translator extends RustPatternScanner {
  /** Whether the last thing emitted can take a quantifier. */
  private quantifiable = false;
  /** The pattern uses `\b` or `\B` (RE2's are ASCII-only: regex.ts runs non-ASCII subjects elsewhere). */
  boundaries = false;

  /**
   * @param p the Rust pattern
   * @param valid whether RE2 compiles a small pattern (used to check property names)
   */
  constructor(p: string, private readonly valid: (re2: string) => boolean) { super(p); }

  /** The RE2 source. @throws Unsupported */
  translate(): string {
    this.scan();
    const f = (this.flags.i ? 'i' : '') + (this.flags.m ? 'm' : '');
    return (f ? `(?${f})` : '') + this.out;
  }

  private emit(text: string, quantifiable: boolean): void {
    this.out += text;
    this.quantifiable = quantifiable;
  }

  protected term(): void {
    const c = this.p[this.i]!;
    switch (c) {
      case '(': this.group(); return;
      case ')':
        if (this.depth === 0) throw new Unsupported('unbalanced )');
        this.i++; this.depth--; this.emit(')', true); return;
      case '[': this.emit(this.klass(), true); return;
      case '.': this.i++; this.emit(this.flags.s ? '(?s:.)' : '[^\\n]', true); return;
      case '\\': { const [text, q] = this.escape(false); this.emit(text, q); return; }
      case '*': case '+': case '?': case '{':
        if (!this.quantifiable) throw new Unsupported('nothing to repeat');
        this.emit(this.quantifier(), false);
        return;
      case '|': this.i++; this.emit('|', false); return;
      case '^': case '$': this.i++; this.emit(c, false); return; // zero-width
      case ']': case '}': case '/': this.i++; this.emit('\\' + c, true); return; // literal in Rust
      default: this.emit(this.literal(), true); return;
    }
  }

  private group(): void {
    const rest = this.p.slice(this.i);
    let m: RegExpExecArray | null;
    let open: string;
    if (/^\(\?P=/.test(rest) || /^\(\?(?:=|!|<=|<!)/.test(rest)) {
      throw new Unsupported('backreferences and lookaround need a backtracking engine (not linear-time)');
    }
    if ((m = /^\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>/.exec(rest)) !== null) open = '(?P<' + m[1] + '>';
    else if ((m = /^\(\?:/.exec(rest)) !== null) open = '(?:';
    else if (rest.startsWith('(?')) throw new Unsupported('inline flags, atomic or other special group');
    else { m = /^\(/.exec(rest)!; open = '('; }
    this.i += m[0].length;
    this.depth++;
    this.emit(open, false);
  }

  /** The inside of an RE2 class for Rust's `\w` under the current `u` flag. */
  private wordSet(): string {
    return this.flags.u ? WORD_UNICODE : WORD_ASCII;
  }

  private spaceSet(): string {
    return this.flags.u ? SPACE_UNICODE : SPACE_ASCII;
  }

  protected escapeInClass(): string {
    return this.escape(true)[0];
  }

  protected classLiteralNeedsEscape(): boolean {
    return false;
  }

  /** An escape at `\`; returns its RE2 text (`inClass`: for use inside a class) and whether a quantifier may follow. */
  private escape(inClass: boolean): [string, boolean] {
    const p = this.p;
    const c = p[this.i + 1];
    if (c === undefined) throw new Unsupported('trailing backslash');
    this.i += 2;
    if (c >= '0' && c <= '9') throw new Unsupported('backreferences need a backtracking engine (not linear-time)');
    const u = this.flags.u;
    const set = (inside: string, negated: boolean): [string, boolean] => {
      if (!inClass) return [(negated ? '[^' : '[') + inside + ']', true];
      if (negated) throw new Unsupported(`\\${c} inside a class`);
      return [inside, true];
    };
    switch (c) {
      case 'd': return u ? ['\\p{Nd}', true] : set('0-9', false);
      case 'D': return u ? ['\\P{Nd}', true] : set('0-9', true);
      case 's': return set(this.spaceSet(), false);
      case 'S': return set(this.spaceSet(), true);
      case 'w': return set(this.wordSet(), false);
      case 'W': return set(this.wordSet(), true);
      case 'n': case 't': case 'r': case 'f': case 'v': return [c === 'v' ? '\\x{B}' : '\\' + c, true];
      case 'b': case 'B':
        if (inClass) throw new Unsupported('\\b in class');
        if (p[this.i] === '{') throw new Unsupported('\\b{...}');
        this.boundaries = true;
        return ['\\' + c, false]; // RE2's ASCII word boundary: exact for ASCII subjects
      case 'p': case 'P': {
        const { name, negated } = this.propertyName(c);
        const prop = re2Property(name, this.valid);
        if (prop === null) throw new Unsupported(`unknown Unicode class ${JSON.stringify(name)}`);
        if (prop.startsWith('\\p{') && prop.indexOf('\\', 1) < 0) return [negated ? '\\P' + prop.slice(2) : prop, true];
        return set(prop, negated);
      }
      case 'a': return ['\\x07', true];
      case 'A': if (inClass) throw new Unsupported('\\A in class'); return ['\\A', false];
      case 'z': if (inClass) throw new Unsupported('\\z in class'); return ['\\z', false];
      case 'k': throw new Unsupported('backreferences need a backtracking engine (not linear-time)');
      case 'x': case 'u': case 'U': return [codePoint(this.hexEscape(c)), true];
      default:
        RustPatternScanner.checkPunctuationEscape(c);
        return ['\\' + c, true]; // RE2 accepts any escaped ASCII punctuation
    }
  }
}
