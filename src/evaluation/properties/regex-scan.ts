/**
 * What both regex translators share (regex-translate.ts for RE2, regex-translate-js.ts for V8):
 * a left-to-right scanner over one pattern in Rust's `regex`/fancy_regex dialect that reads the
 * parts whose syntax does not depend on the target — leading inline flags, `(?x)` whitespace and
 * comments, quantifiers, hex escapes, `\p{…}` names, POSIX classes inside brackets — and refuses
 * what Rust rejects. Each subclass decides what text every part becomes. Sources: the `regex`
 * crate's syntax documentation; rules summarised in regex.ts's module doc. Pure.
 */

/** Thrown by the translators for syntax they do not translate or Rust rejects; the message says which. */
export class Unsupported extends Error {}

/** ASCII POSIX classes (`[[:alpha:]]`), as class contents valid in RE2 and JS `u` mode. */
const POSIX_CLASSES: Readonly<Record<string, string>> = {
  alnum: '0-9A-Za-z', alpha: 'A-Za-z', ascii: '\\x00-\\x7F', blank: '\\t ', cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9', graph: '!-~', lower: 'a-z', print: ' -~', punct: '!-\\/:-@\\[-`{-~',
  space: '\\t\\n\\v\\f\\r ', upper: 'A-Z', word: '0-9A-Za-z_', xdigit: '0-9A-Fa-f',
};

/** Rust's inline flags in effect. */
export interface Flags { i: boolean; m: boolean; s: boolean; x: boolean; U: boolean; u: boolean }

/** The shared scanner; see the module doc. */
export abstract class RustPatternScanner {
  protected i = 0;
  protected out = '';
  protected readonly flags: Flags = { i: false, m: false, s: false, x: false, U: false, u: true };
  /** Open groups. */
  protected depth = 0;

  constructor(protected readonly p: string) {}

  /** Reads and emits one term at `i` (after `(?x)` whitespace). */
  protected abstract term(): void;

  /** An escape at `\` (`inClass`: for use inside a class); returns its target text. */
  protected abstract escapeInClass(): string;

  /** Whether a literal `c` inside a class needs a backslash in the target. */
  protected abstract classLiteralNeedsEscape(c: string): boolean;

  /** Scans the whole pattern. @throws Unsupported */
  protected scan(): void {
    this.leadingFlags();
    while (this.i < this.p.length) {
      this.skipExtended();
      if (this.i < this.p.length) this.term();
    }
    if (this.depth !== 0) throw new Unsupported('unbalanced (');
  }

  /** Only leading inline flags are accepted (`(?i)`, `(?-u)`, `(?ix)`, …; `R` ignored). */
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

  /** Under `(?x)`, skips whitespace and `#` comments. */
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

  /** The code point at `i` as text (a surrogate pair stays whole); advances past it. */
  protected literal(): string {
    const len = this.p.codePointAt(this.i)! > 0xffff ? 2 : 1;
    const ch = this.p.slice(this.i, this.i + len);
    this.i += len;
    return ch;
  }

  /** A quantifier at `i` (`*`, `+`, `?`, `{n}`, `{n,}`, `{,m}`, `{n,m}`, lazy `?`, `(?U)` swap) as target text. */
  protected quantifier(): string {
    const p = this.p;
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
    return q + (lazy ? '?' : '');
  }

  /** After `\x`, `\u` or `\U` (`c`): the code point of `{…}` or the fixed-width hex digits. */
  protected hexEscape(c: string): number {
    const rest = this.p.slice(this.i);
    const m = rest[0] === '{'
      ? /^\{([0-9A-Fa-f]{1,8})\}/.exec(rest)
      : c === 'x' ? /^([0-9A-Fa-f]{2})/.exec(rest) : c === 'u' ? /^([0-9A-Fa-f]{4})/.exec(rest) : /^([0-9A-Fa-f]{8})/.exec(rest);
    if (m === null) throw new Unsupported('bad hex escape');
    this.i += m[0].length;
    const cp = parseInt(m[1]!, 16);
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) throw new Unsupported('bad code point');
    return cp;
  }

  /** After `\p` or `\P` (`c`): the property name (`L`, `Greek`, `sc=Greek`) and whether it is negated (`\P`, `\p{^…}`). */
  protected propertyName(c: string): { name: string; negated: boolean } {
    const p = this.p;
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
    return { name, negated };
  }

  /** Refuses an escape of a non-ASCII, control, alphanumeric, `<` or `>` character (Rust rejects or means a boundary). */
  protected static checkPunctuationEscape(c: string): void {
    const code = c.charCodeAt(0);
    if (code >= 128 || code < 32 || /[0-9A-Za-z<>]/.test(c)) throw new Unsupported('escape \\' + c);
  }

  /** A bracketed class at `[`; returns its target text. Nested classes other than POSIX ones and set operations are refused. */
  protected klass(): string {
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
      if (c === '\\') { out += this.escapeInClass(); continue; }
      if (c === ']' || this.classLiteralNeedsEscape(c)) { out += '\\' + c; this.i++; continue; }
      out += this.literal();
    }
  }
}
