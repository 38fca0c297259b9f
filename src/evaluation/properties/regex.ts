/**
 * `regex` / `not_regex` patterns: translate Rust `fancy_regex` syntax into a JavaScript `RegExp`
 * once, at compile time. Source: Rust `rust/feature-flags/src/properties/property_matching.rs`
 * (patterns built with `fancy_regex::RegexBuilder`, backtrack limit 10,000; a build error or a
 * limit error makes both `regex` and `not_regex` false) and research/posthog-flag-evaluation.md
 * §3.3 "regex".
 *
 * Translation (JavaScript without the `u` flag, so Annex-B accepts Rust's extra identity escapes
 * such as `\-`, `\#`, `\@`):
 * - leading inline flag groups `(?i)`, `(?m)`, `(?s)`, `(?x)`, `(?U)` (and `(?-i)` …) become JS
 *   flags, or are applied by the translator (`x`: whitespace and `#` comments dropped; `U`:
 *   greedy and lazy quantifiers swapped); `u` and `R` are accepted and ignored;
 * - `.` becomes `[^\n]` (Rust excludes only `\n`; JS also excludes `\r`, U+2028, U+2029), or
 *   `[\s\S]` under `s`;
 * - `\A` → start of text, `\z` → end of text, `(?P<n>…)` → `(?<n>…)`, `(?P=n)` → `\k<n>`,
 *   `\x{…}`/`\u{…}`/`\uHHHH`/`\U{…}`/`\UHHHHHHHH` → `\uHHHH` (astral code points as surrogate
 *   pairs outside classes), `{,n}` → `{0,n}`, POSIX classes `[[:alpha:]]` → ASCII ranges.
 *
 * Unsupported (the pattern counts as invalid: both operators give false, and
 * {@link isValidRegex} says false; Rust would accept them): inline flags anywhere but the very
 * start, scoped flag groups `(?i:…)`, `\p{…}`/`\P{…}`, nested classes and class set operations
 * (`&&`, `--`, `~~`), negated POSIX classes, atomic groups, possessive quantifiers, `\<`, `\>`,
 * `\b{…}`, `\K`, `\Z`, astral code points inside classes.
 *
 * Dialect gaps that change results (documented, not translated): `\d`, `\w` and `\b` are ASCII
 * in JS but Unicode-aware in Rust (so `\d` misses `٣`, `\w` misses `é`); `(?i)` uses JS's simple
 * case folding (close to Rust's); under `(?m)`, JS `^`/`$` also treat `\r`, U+2028 and U+2029 as
 * line ends.
 *
 * Backtracking guard: V8 has no backtrack limit, while Rust runs plain patterns on the linear
 * `regex` crate and fancy ones under a 10,000-step limit. Two guards here:
 * - a pattern with an unbounded quantifier applied to a group that itself holds an unbounded
 *   quantifier (the shape of `(a+)+`, `(\w+\.)*`, `(?:[a-z]+|[0-9]+)*`) is refused as
 *   unsupported: V8 is exponential on such patterns (measured: `(?:[a-z]+|[a-z0-9]+)*@` takes
 *   5 s on 16 characters), and no subject-length cap small enough to be safe would leave them
 *   useful. Rust would accept and evaluate them; {@link describeRegexProblem} says why. Other
 *   ambiguous shapes (`(a|aa)*b`) are not detected;
 * - a subject longer than {@link MAX_REGEX_SUBJECT_LENGTH} UTF-16 units is treated like Rust's
 *   limit error: no match for either operator. This bounds, but does not remove, polynomial
 *   blow-ups such as `.*a.*a.*b`. A linear-time engine would remove both gaps.
 */

/** Subjects longer than this (UTF-16 code units) never match (`regex` and `not_regex` false). */
export const MAX_REGEX_SUBJECT_LENGTH = 10_000;

/** A pattern compiled once. */
export interface CompiledRegex {
  readonly regex: RegExp;
  /** The longest subject tested; longer subjects count as a limit error (false). */
  readonly maxSubjectLength: number;
}

/** Thrown inside the translator; never escapes this module. */
class Unsupported extends Error {}

const POSIX_CLASSES: Readonly<Record<string, string>> = {
  alnum: '0-9A-Za-z', alpha: 'A-Za-z', ascii: '\\x00-\\x7F', blank: '\\t ', cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9', graph: '!-~', lower: 'a-z', print: ' -~', punct: '!-\\/:-@\\[-`{-~',
  space: '\\t\\n\\v\\f\\r ', upper: 'A-Z', word: '0-9A-Za-z_', xdigit: '0-9A-Fa-f',
};

interface Flags { i: boolean; m: boolean; s: boolean; x: boolean; U: boolean }

/** One open group while translating: whether it (transitively) holds an unbounded quantifier. */
interface Frame { unbounded: boolean }

function hex(cp: number): string {
  return '\\u' + cp.toString(16).toUpperCase().padStart(4, '0');
}

/** Emits a code point for use outside a class (astral as a surrogate pair, grouped). */
function codePointOutside(cp: number): string {
  if (cp <= 0xffff) return hex(cp);
  const v = cp - 0x10000;
  return '(?:' + hex(0xd800 + (v >> 10)) + hex(0xdc00 + (v & 0x3ff)) + ')';
}

class Translator {
  private i = 0;
  private out = '';
  private readonly flags: Flags = { i: false, m: false, s: false, x: false, U: false };
  private readonly stack: Frame[] = [{ unbounded: false }];
  /** Whether the last emitted atom was a group that holds an unbounded quantifier. */
  private lastAtomUnbounded = false;
  private groups = 0;
  private maxBackref = 0;

  constructor(private readonly p: string) {}

  translate(): { source: string; flags: string } {
    this.leadingFlags();
    while (this.i < this.p.length) this.term();
    if (this.stack.length !== 1) throw new Unsupported('unbalanced');
    if (this.maxBackref > this.groups) throw new Unsupported('backreference to a missing group');
    return { source: this.out, flags: (this.flags.i ? 'i' : '') + (this.flags.m ? 'm' : '') };
  }

  private leadingFlags(): void {
    const re = /^\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?\)/;
    for (;;) {
      const m = re.exec(this.p.slice(this.i));
      if (m === null || (m[1] === '' && m[2] === undefined)) return;
      this.setFlags(m[1], true);
      if (m[2] !== undefined) this.setFlags(m[2], false);
      this.i += m[0].length;
      this.skipExtended();
    }
  }

  private setFlags(letters: string, on: boolean): void {
    for (const c of letters) {
      if (c === 'i' || c === 'm' || c === 's' || c === 'x' || c === 'U') this.flags[c] = on;
      else if (c !== 'u' && c !== 'R') throw new Unsupported(`flag ${c}`);
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

  private term(): void {
    this.skipExtended();
    if (this.i >= this.p.length) return;
    const c = this.p[this.i];
    switch (c) {
      case '(': this.group(); return;
      case ')': this.closeGroup(); return;
      case '[': this.atom(this.klass()); return;
      case '.': this.i++; this.atom(this.flags.s ? '[\\s\\S]' : '[^\\n]'); return;
      case '\\': this.atom(this.escape(false)); return;
      case '*': case '+': case '?': case '{': this.quantifier(); return;
      case '|': case '^': case '$': this.i++; this.out += c; this.lastAtomUnbounded = false; return;
      default: this.i++; this.atom(c === '/' ? '\\/' : c); return;
    }
  }

  private atom(text: string, unboundedGroup = false): void {
    this.out += text;
    this.lastAtomUnbounded = unboundedGroup;
  }

  private group(): void {
    const rest = this.p.slice(this.i);
    let open: string;
    let m: RegExpExecArray | null;
    if ((m = /^\(\?P=([A-Za-z_][A-Za-z0-9_]*)\)/.exec(rest)) !== null) {
      this.i += m[0].length;
      this.atom('\\k<' + m[1] + '>');
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
    this.stack.push({ unbounded: false });
  }

  private closeGroup(): void {
    if (this.stack.length === 1) throw new Unsupported('unbalanced )');
    this.i++;
    const frame = this.stack.pop()!;
    if (frame.unbounded) this.stack[this.stack.length - 1].unbounded = true;
    this.atom(')', frame.unbounded);
  }

  private quantifier(): void {
    const p = this.p;
    let q: string;
    let unbounded: boolean;
    const c = p[this.i];
    if (c === '{') {
      const m = /^\{(\d*)(?:(,)(\d*))?\}/.exec(p.slice(this.i));
      if (m === null || (m[1] === '' && (m[2] === undefined || m[3] === ''))) throw new Unsupported('bad repetition');
      if (m[1] !== '' && m[3] !== undefined && m[3] !== '' && Number(m[1]) > Number(m[3])) throw new Unsupported('bad range');
      q = '{' + (m[1] === '' ? '0' : m[1]) + (m[2] ?? '') + (m[3] ?? '') + '}';
      unbounded = m[2] !== undefined && m[3] === '';
      this.i += m[0].length;
    } else {
      q = c; unbounded = c !== '?'; this.i++;
    }
    let lazy = false;
    if (p[this.i] === '?') { lazy = true; this.i++; }
    else if (p[this.i] === '+') throw new Unsupported('possessive quantifier');
    if (this.flags.U) lazy = !lazy;
    if (unbounded) {
      if (this.lastAtomUnbounded) throw new Unsupported('nested unbounded quantifiers (exponential backtracking in V8)');
      this.stack[this.stack.length - 1].unbounded = true;
    }
    this.out += q + (lazy ? '?' : '');
    this.lastAtomUnbounded = false;
  }

  /** An escape at `\`; returns its JS text. Inside a class, astral code points are unsupported. */
  private escape(inClass: boolean): string {
    const p = this.p;
    const c = p[this.i + 1];
    if (c === undefined) throw new Unsupported('trailing backslash');
    this.i += 2;
    if (c >= '1' && c <= '9') {
      if (inClass) throw new Unsupported('backreference in class');
      let n = c;
      while (p[this.i] >= '0' && p[this.i] <= '9') n += p[this.i++];
      this.maxBackref = Math.max(this.maxBackref, Number(n));
      return '(?:\\' + n + ')';
    }
    switch (c) {
      case 'd': case 'D': case 'w': case 'W': case 's': case 'S':
      case 'n': case 't': case 'r': case 'f': case 'v':
        return '\\' + c;
      case 'b': case 'B':
        if (inClass) throw new Unsupported('\\b in class');
        if (p[this.i] === '{') throw new Unsupported('\\b{...}');
        return '\\' + c;
      case 'a': return '\\x07';
      case 'A': if (inClass) throw new Unsupported('\\A in class'); return '(?<![\\s\\S])';
      case 'z': if (inClass) throw new Unsupported('\\z in class'); return '(?![\\s\\S])';
      case 'k': {
        const m = /^<([A-Za-z_][A-Za-z0-9_]*)>/.exec(p.slice(this.i));
        if (m === null || inClass) throw new Unsupported('\\k');
        this.i += m[0].length;
        return '\\k<' + m[1] + '>';
      }
      case 'x': case 'u': case 'U': {
        const rest = p.slice(this.i);
        const m = rest[0] === '{'
          ? /^\{([0-9A-Fa-f]{1,8})\}/.exec(rest)
          : c === 'x' ? /^([0-9A-Fa-f]{2})/.exec(rest) : c === 'u' ? /^([0-9A-Fa-f]{4})/.exec(rest) : /^([0-9A-Fa-f]{8})/.exec(rest);
        if (m === null) throw new Unsupported('bad hex escape');
        this.i += m[0].length;
        const cp = parseInt(m[1], 16);
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) throw new Unsupported('bad code point');
        if (cp > 0xffff && inClass) throw new Unsupported('astral code point in class');
        return inClass ? hex(cp) : codePointOutside(cp);
      }
      default: {
        const code = c.charCodeAt(0);
        // Rust allows escaping any ASCII character but [0-9A-Za-z<>] (`\<`/`\>` are boundaries).
        if (code >= 128 || code < 32 || /[0-9A-Za-z<>]/.test(c)) throw new Unsupported('escape \\' + c);
        return '\\' + c;
      }
    }
  }

  /** A bracketed class at `[`; returns its JS text. */
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
        if (m === null || m[1] === '^' || POSIX_CLASSES[m[2]] === undefined) throw new Unsupported('nested class');
        out += POSIX_CLASSES[m[2]];
        this.i += m[0].length;
        continue;
      }
      if ((c === '&' || c === '-' || c === '~') && p[this.i + 1] === c && !(c === '-' && p[this.i + 2] === ']')) {
        throw new Unsupported('class set operation');
      }
      if (c === '\\') { out += this.escape(true); continue; }
      if (c === ']' || c === '/') { out += '\\' + c; this.i++; continue; }
      const code = c.codePointAt(0)!;
      if (code > 0xffff) throw new Unsupported('astral code point in class');
      out += c;
      this.i++;
    }
  }
}

/**
 * Translates and compiles a Rust-syntax pattern once. `null` when the pattern is invalid in Rust
 * or uses syntax this module does not translate (see the module doc); both mean "no match for
 * `regex` and `not_regex`".
 */
export function compileRegex(pattern: string): CompiledRegex | null {
  return compileOrExplain(pattern).compiled;
}

function compileOrExplain(pattern: string): { compiled: CompiledRegex | null; problem: string | null } {
  try {
    const { source, flags } = new Translator(pattern).translate();
    return { compiled: { regex: new RegExp(source, flags), maxSubjectLength: MAX_REGEX_SUBJECT_LENGTH }, problem: null };
  } catch (e) {
    return { compiled: null, problem: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * Whether a pattern compiles here (Rust syntax, within the supported subset). The control
 * plane's validator uses it to reject patterns on write.
 */
export function isValidRegex(pattern: string): boolean {
  return compileRegex(pattern) !== null;
}

/**
 * Why a pattern does not compile here (a short English reason, for validation messages), or
 * `null` when it compiles.
 */
export function describeRegexProblem(pattern: string): string | null {
  return compileOrExplain(pattern).problem;
}

/**
 * Unanchored, case-sensitive (unless `(?i)`) search, as Rust's `Regex::find(..).is_some()`.
 * A subject over the length cap answers `null` (Rust's limit error; both operators false).
 */
export function regexSearch(compiled: CompiledRegex, subject: string): boolean | null {
  if (subject.length > compiled.maxSubjectLength) return null;
  return compiled.regex.test(subject);
}
