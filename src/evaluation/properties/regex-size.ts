/**
 * An estimate of an RE2 program's size, in the program units of regex.ts' `programUnits`, read
 * from the RE2 source (regex-translate.ts' output) without compiling it. Compiling is linear in
 * the program, and the program of a counted repetition is the repeated part copied out:
 * `(?i)\w{1,1000}` repeated a thousand times is a 10 KB pattern whose compile held the thread for
 * over a second before it could be refused. regex.ts refuses a pattern whose estimate is far over
 * the bound before compiling it, so compiling costs at most a few times the bound.
 *
 * A class or property escape weighs what it compiles to alone, with the pattern's case folding
 * (compiled once per text and remembered; a class is small, so this is cheap); past
 * {@link MAX_EXACT_CLASSES} distinct ones in a pattern, a class weighs the sum of its members'
 * ranges instead, doubled under `(?i)` (an upper bound: RE2 merges overlapping ranges). A counted
 * repetition `{m,n}` weighs n copies (`{m,}`: m + 1), `*` `+` `?` one copy plus one instruction;
 * each group and alternative adds instructions. Within 0.75–1.6× of the compiled size on the
 * shapes the tests hold it to (typical patterns and hostile repetitions); large programs, where it
 * matters, come within a few percent. Pure apart from the remembered weights.
 */
import { RE2JS } from 're2js';

/** Program units of a compiled program (regex.ts `programUnits`). */
type RangeCounter = (re: RE2JS) => number;

/** Most atoms whose weight is remembered (atoms are attacker-chosen text). */
const MAX_CACHED_ATOMS = 512;
/** Most distinct classes or escapes one estimate compiles (the rest are summed: see the module doc). */
export const MAX_EXACT_CLASSES = 16;

/** Program units of a class or property escape compiled alone, by flags and text (1 when it does not compile). */
const atomUnits = new Map<string, number>();

/**
 * Estimates the program units of the RE2 source `source` (see the module doc). `ranges` counts
 * the ranges of a compiled one-property program (regex.ts passes `programUnits`). Never throws:
 * syntax it does not follow is weighed as literal characters (the compile that follows judges it).
 */
export function estimateProgramUnits(source: string, ranges: RangeCounter): number {
  return new SizeReader(source, ranges).total();
}

class SizeReader {
  private i = 0;
  private fold = false;
  /** The leading flags group, prefixed to an atom compiled alone. */
  private flags = '';
  /** Atoms compiled (or found remembered) for this estimate. */
  private exact = 0;

  constructor(private readonly s: string, private readonly ranges: RangeCounter) {}

  total(): number {
    // Leading inline flags, as regex-translate.ts emits them: `(?i)`, `(?is)`, `(?-u)`.
    const flags = /^\(\?([a-zA-Z-]*)\)/.exec(this.s);
    if (flags) { this.fold = /^[^-]*i/.test(flags[1]!); this.flags = flags[0]; this.i = flags[0].length; }
    let units = 0;
    while (this.i < this.s.length) {
      units += this.alternation();
      if (this.s[this.i] === ')') this.i++; // an unbalanced `)`: the compile refuses it
    }
    return units;
  }

  /** `a|b|…` up to `)` or the end. */
  private alternation(): number {
    let units = this.sequence();
    while (this.s[this.i] === '|') { this.i++; units += 1 + this.sequence(); }
    return units;
  }

  /** Items up to `|`, `)` or the end. */
  private sequence(): number {
    let units = 0;
    while (this.i < this.s.length && this.s[this.i] !== '|' && this.s[this.i] !== ')') units += this.repeated(this.atom());
    return units;
  }

  /** Applies the quantifiers after an atom of `units`. */
  private repeated(units: number): number {
    for (;;) {
      const c = this.s[this.i];
      if (c === '*' || c === '+' || c === '?') {
        this.i++;
        units += 1;
      } else if (c === '{') {
        const m = /^\{(\d*)(?:(,)(\d*))?\}/.exec(this.s.slice(this.i, this.i + 24));
        if (m === null) return units; // a literal `{`: the atom loop reads it
        this.i += m[0].length;
        const min = Number(m[1] || 0);
        const copies = m[2] === undefined ? min : m[3] ? Number(m[3]) : min + 1;
        units = units * Math.max(1, copies) + copies;
      } else {
        return units;
      }
      if (this.s[this.i] === '?') this.i++; // lazy
    }
  }

  /** One atom: a group, a class, an escape or a character. */
  private atom(): number {
    const c = this.s[this.i]!;
    if (c === '(') {
      const prefix = /^\((?:\?(?:P?<[^>]*>|:|[a-zA-Z-]*:))?/.exec(this.s.slice(this.i, this.i + 40))![0];
      this.i += prefix.length;
      const units = this.alternation();
      if (this.s[this.i] === ')') this.i++;
      return units + 2; // the capture or grouping instructions
    }
    if (c === '[') return this.klass();
    if (c === '\\') return this.escape();
    this.i += c.codePointAt(0)! > 0xffff ? 2 : 1;
    return this.fold ? 2 : 1;
  }

  /**
   * `[…]`: compiled alone, or (past the exact budget) the sum of its members' ranges, read again
   * only then (see the module doc).
   */
  private klass(): number {
    const start = this.i;
    this.summedClass(false);
    const exact = this.exactly(this.s.slice(start, this.i));
    if (exact !== null) return exact;
    const end = this.i;
    this.i = start;
    const summed = this.summedClass(true);
    this.i = end;
    return summed;
  }

  /** Reads a class; with `weigh`, returns the sum of its members' ranges (else 0, nothing compiled). */
  private summedClass(weigh: boolean): number {
    this.i++;
    if (this.s[this.i] === '^') this.i++;
    let ranges = 0;
    let first = true;
    while (this.i < this.s.length && (this.s[this.i] !== ']' || first)) {
      first = false;
      if (this.s[this.i] === '[' && this.s[this.i + 1] === ':') {
        const end = this.s.indexOf(':]', this.i);
        this.i = end < 0 ? this.s.length : end + 2;
        ranges += 8;
      } else if (this.s[this.i] === '\\') {
        ranges += this.escape(weigh ? 'class' : 'skip');
      } else {
        this.i += this.s.codePointAt(this.i)! > 0xffff ? 2 : 1;
        ranges += 1;
      }
      // `lo-hi`: the `-` and the upper end belong to the same range.
      if (this.s[this.i] === '-' && this.s[this.i + 1] !== ']' && this.i + 1 < this.s.length) {
        this.i++;
        if (this.s[this.i] === '\\') this.escape('skip'); else this.i += this.s.codePointAt(this.i)! > 0xffff ? 2 : 1;
      }
    }
    this.i++; // `]`
    return 1 + (this.fold ? 2 : 1) * ranges;
  }

  /**
   * `\p{…}`, `\pL`, `\x{…}` and the other escapes. A property weighs its compiled size: with the
   * pattern's flags on its own (`atom`), without them inside a class being summed (`class`: the
   * class applies case folding once), or nothing when only skipped over (`skip`).
   */
  private escape(as: 'atom' | 'class' | 'skip' = 'atom'): number {
    const rest = this.s.slice(this.i, this.i + 64);
    const prop = /^\\[pP](?:\{[^}]*\}|[A-Za-z])/.exec(rest);
    if (prop) {
      this.i += prop[0].length;
      if (as === 'skip') return 0;
      const alone = compiledUnits(prop[0], this.ranges) ?? 1;
      return as === 'class' ? alone : this.exactly(prop[0]) ?? (this.fold ? 2 : 1) * alone;
    }
    const hex = /^\\x(?:\{[0-9A-Fa-f]*\}|[0-9A-Fa-f]{2})/.exec(rest);
    this.i += hex ? hex[0].length : Math.min(2, rest.length);
    const letter = hex ? '' : rest[1] ?? '';
    // RE2's own Perl classes (the translator emits Unicode ones as \p classes instead).
    return 'dDsSwW'.includes(letter) && letter !== '' ? 8 : this.fold ? 2 : 1;
  }

  /**
   * Units of `atom` compiled alone with the pattern's flags, or null past {@link MAX_EXACT_CLASSES}
   * atoms not remembered in this estimate.
   */
  private exactly(atom: string): number | null {
    const key = this.flags + atom;
    if (!atomUnits.has(key)) {
      if (this.exact >= MAX_EXACT_CLASSES) return null;
      this.exact++;
    }
    return compiledUnits(key, this.ranges) ?? 1;
  }
}

/** Units of `source` compiled alone (remembered), or null when it does not compile. */
function compiledUnits(source: string, ranges: RangeCounter): number | null {
  let n = atomUnits.get(source);
  if (n === undefined) {
    // The program around the atom (capture, match: 3 instructions) is not part of its weight.
    try { n = Math.max(1, ranges(RE2JS.compile(source)) - 3); } catch { n = -1; }
    if (atomUnits.size >= MAX_CACHED_ATOMS) atomUnits.clear();
    atomUnits.set(source, n);
  }
  return n < 0 ? null : n;
}
