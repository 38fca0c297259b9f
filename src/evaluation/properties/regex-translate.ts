/**
 * The Rust `regex` dialect translated into RE2 syntax, run by re2js (a linear-time engine:
 * issue 8 item 3). The two dialects share most syntax (Rust's crate descends from RE2); this
 * translator rewrites where they differ and refuses what RE2 cannot run: leading inline flags
 * become RE2 inline flags, `\d` `\w` `\s` get Rust's Unicode meaning (RE2's are ASCII), POSIX
 * classes expand, Rust property names map to RE2's, and backreferences, lookaround, atomic
 * groups, possessive quantifiers and class set operations are refused with {@link Unsupported}.
 * The rules and their sources are in regex.ts's module doc; this file is only the translator,
 * used by `compileRegex` there. Pure; no state outside one {@link Translator}.
 */

/** Thrown by the translator for syntax it does not translate or Rust rejects; the message says which. */
export class Unsupported extends Error {}

const POSIX_CLASSES: Readonly<Record<string, string>> = {
  alnum: '0-9A-Za-z', alpha: 'A-Za-z', ascii: '\\x00-\\x7F', blank: '\\t ', cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9', graph: '!-~', lower: 'a-z', print: ' -~', punct: '!-\\/:-@\\[-`{-~',
  space: '\\t\\n\\v\\f\\r ', upper: 'A-Z', word: '0-9A-Za-z_', xdigit: '0-9A-Fa-f',
};

interface Flags { i: boolean; m: boolean; s: boolean; x: boolean; U: boolean; u: boolean }

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
export class Translator {
  private i = 0;
  private out = '';
  private readonly flags: Flags = { i: false, m: false, s: false, x: false, U: false, u: true };
  private depth = 0;
  /** Whether the last thing emitted can take a quantifier. */
  private quantifiable = false;
  /** The pattern uses `\b` or `\B` (RE2's are ASCII-only: regex.ts runs non-ASCII subjects elsewhere). */
  boundaries = false;

  /**
   * @param p the Rust pattern
   * @param valid whether RE2 compiles a small pattern (used to check property names)
   */
  constructor(private readonly p: string, private readonly valid: (re2: string) => boolean) {}

  translate(): string {
    this.leadingFlags();
    while (this.i < this.p.length) this.term();
    if (this.depth !== 0) throw new Unsupported('unbalanced (');
    const f = (this.flags.i ? 'i' : '') + (this.flags.m ? 'm' : '');
    return (f ? `(?${f})` : '') + this.out;
  }

  private leadingFlags(): void {
    const re = /^\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?\)/;
    for (;;) {
      const m = re.exec(this.p.slice(this.i));
      if (m === null || (m[1] === '' && m[2] === undefined)) return;
      this.setFlags(m[1]!, true);
      if (m[2] !== undefined) this.setFlags(m[2], false);
      this.i += m[0].length;
      this.skipExtended();
    }
  }

  private setFlags(letters: string, on: boolean): void {
    for (const c of letters) {
      if (c === 'i' || c === 'm' || c === 's' || c === 'x' || c === 'U' || c === 'u') this.flags[c] = on;
      else if (c !== 'R') throw new Unsupported(`flag ${c}`);
    }
  }

  private skipExtended(): void {
    if (!this.flags.x) return;
    const p = this.p;
    while (this.i < p.length) {
      const c = p[this.i];
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v') this.i++;
      else if (c === '#') { while (this.i < p.length && p[this.i] !== '\n') this.i++; }
      else return;
    }
  }

  private emit(text: string, quantifiable: boolean): void {
    this.out += text;
    this.quantifiable = quantifiable;
  }

  private term(): void {
    this.skipExtended();
    if (this.i >= this.p.length) return;
    const c = this.p[this.i]!;
    switch (c) {
      case '(': this.group(); return;
      case ')':
        if (this.depth === 0) throw new Unsupported('unbalanced )');
        this.i++; this.depth--; this.emit(')', true); return;
      case '[': this.emit(this.klass(), true); return;
      case '.': this.i++; this.emit(this.flags.s ? '(?s:.)' : '[^\\n]', true); return;
      case '\\': { const [text, q] = this.escape(false); this.emit(text, q); return; }
      case '*': case '+': case '?': case '{': this.quantifier(); return;
      case '|': this.i++; this.emit('|', false); return;
      case '^': case '$': this.i++; this.emit(c, false); return; // zero-width
      case ']': case '}': case '/': this.i++; this.emit('\\' + c, true); return; // literal in Rust
      default: {
        const len = this.p.codePointAt(this.i)! > 0xffff ? 2 : 1;
        this.emit(this.p.slice(this.i, this.i + len), true);
        this.i += len;
        return;
      }
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

  private quantifier(): void {
    const p = this.p;
    if (!this.quantifiable) throw new Unsupported('nothing to repeat');
    let q: string;
    const c = p[this.i]!;
    if (c === '{') {
      const m = /^\{(\d*)(?:(,)(\d*))?\}/.exec(p.slice(this.i));
      if (m === null || (m[1] === '' && (m[2] === undefined || m[3] === ''))) throw new Unsupported('bad repetition');
      if (m[1] !== '' && m[3] !== undefined && m[3] !== '' && Number(m[1]) > Number(m[3])) throw new Unsupported('bad range');
      q = '{' + (m[1] === '' ? '0' : m[1]) + (m[2] ?? '') + (m[3] ?? '') + '}';
      this.i += m[0].length;
    } else {
      q = c; this.i++;
    }
    let lazy = false;
    if (p[this.i] === '?') { lazy = true; this.i++; }
    else if (p[this.i] === '+') throw new Unsupported('possessive quantifier');
    if (this.flags.U) lazy = !lazy;
    this.emit(q + (lazy ? '?' : ''), false);
  }

  /** The inside of an RE2 class for Rust's `\w` under the current `u` flag. */
  private wordSet(): string {
    return this.flags.u ? WORD_UNICODE : WORD_ASCII;
  }

  private spaceSet(): string {
    return this.flags.u ? SPACE_UNICODE : SPACE_ASCII;
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
        let name: string;
        if (p[this.i] === '{') {
          const close = p.indexOf('}', this.i);
          if (close < 0) throw new Unsupported('unclosed \\p{');
          name = p.slice(this.i + 1, close);
          this.i = close + 1;
        } else {
          name = p[this.i] ?? '';
          this.i += 1;
        }
        let negated = c === 'P';
        if (name.startsWith('^')) { negated = !negated; name = name.slice(1); }
        const prop = re2Property(name, this.valid);
        if (prop === null) throw new Unsupported(`unknown Unicode class ${JSON.stringify(name)}`);
        if (prop.startsWith('\\p{') && prop.indexOf('\\', 1) < 0) return [negated ? '\\P' + prop.slice(2) : prop, true];
        return set(prop, negated);
      }
      case 'a': return ['\\x07', true];
      case 'A': if (inClass) throw new Unsupported('\\A in class'); return ['\\A', false];
      case 'z': if (inClass) throw new Unsupported('\\z in class'); return ['\\z', false];
      case 'k': throw new Unsupported('backreferences need a backtracking engine (not linear-time)');
      case 'x': case 'u': case 'U': {
        const rest = p.slice(this.i);
        const m = rest[0] === '{'
          ? /^\{([0-9A-Fa-f]{1,8})\}/.exec(rest)
          : c === 'x' ? /^([0-9A-Fa-f]{2})/.exec(rest) : c === 'u' ? /^([0-9A-Fa-f]{4})/.exec(rest) : /^([0-9A-Fa-f]{8})/.exec(rest);
        if (m === null) throw new Unsupported('bad hex escape');
        this.i += m[0].length;
        const cp = parseInt(m[1]!, 16);
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) throw new Unsupported('bad code point');
        return [codePoint(cp), true];
      }
      default: {
        const code = c.charCodeAt(0);
        // Rust allows escaping any ASCII character but [0-9A-Za-z<>] (`\<`/`\>` are boundaries).
        if (code >= 128 || code < 32 || /[0-9A-Za-z<>]/.test(c)) throw new Unsupported('escape \\' + c);
        return ['\\' + c, true]; // RE2 accepts any escaped ASCII punctuation
      }
    }
  }

  /** A bracketed class at `[`; returns its RE2 text. */
  private klass(): string {
    const p = this.p;
    this.i++;
    let out = '[';
    if (p[this.i] === '^') { out += '^'; this.i++; }
    let first = true;
    for (;;) {
      if (this.flags.x) while (/[ \t\n\r\f\v]/.test(p[this.i] ?? '')) this.i++;
      const c = p[this.i];
      if (c === undefined) throw new Unsupported('unclosed class');
      if (c === ']' && !first) { this.i++; return out + ']'; }
      first = false;
      if (c === '[') {
        const m = /^\[:(\^?)([a-z]+):\]/.exec(p.slice(this.i));
        if (m === null || m[1] === '^' || POSIX_CLASSES[m[2]!] === undefined) throw new Unsupported('nested class');
        out += POSIX_CLASSES[m[2]!];
        this.i += m[0].length;
        continue;
      }
      if ((c === '&' || c === '-' || c === '~') && p[this.i + 1] === c && !(c === '-' && p[this.i + 2] === ']')) {
        throw new Unsupported('class set operation');
      }
      if (c === '\\') { out += this.escape(true)[0]; continue; }
      if (c === ']') { out += '\\]'; this.i++; continue; }
      const len = p.codePointAt(this.i)! > 0xffff ? 2 : 1;
      out += p.slice(this.i, this.i + len);
      this.i += len;
    }
  }
}
