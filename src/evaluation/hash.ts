/**
 * PostHog's bucketing hash (research/posthog-flag-evaluation.md §2.1; Rust
 * `flags/flag_matching_utils.rs` `calculate_hash`):
 *
 *   hash01(prefix, identifier, salt) = top60(SHA-1(utf8(prefix + identifier + salt))) / 2^60
 *
 * where top60 is the first 15 hex digits of the digest as an unsigned integer, converted to
 * binary64 with round-to-nearest-even, and 2^60 is `binary64(0xFFFFFFFFFFFFFFF)`. The result is
 * in [0, 1]; `vectors/harness-hash_sha1_60_v1.json` pins it bit for bit.
 *
 * Speed: SHA-1 dominates evaluation cost, so this is a hand-written SHA-1 specialised for short
 * messages (sha1-unrolled.ts, generated): the message is written as words into one reused array and
 * no hex string is built: `h0 * 2^28 + (h1 >>> 4)` is the 60-bit prefix, and that single
 * floating-point addition rounds it to nearest-even exactly as `u64 as f64` does; the division by
 * 2^60 is exact. The identifier is encoded once per request and reused for every flag (see
 * {@link Utf8Id}). bench/evaluation.ts compares it with `crypto.createHash` and `crypto.hash`.
 * {@link sha1} is a plain loop version kept for tests (full digest against the vectors).
 *
 * Not re-entrant across threads by design (module scratch buffers); JS is single-threaded per
 * isolate, and each worker has its own module instance.
 */
import { sha1Top60 } from './sha1-unrolled.js';

const W = new Int32Array(80);
const EMPTY_BYTES = new Uint8Array(0);

/** UTF-8 bytes of `s`. Lone surrogates become U+FFFD, as in `TextEncoder`. */
export function utf8(s: string): Uint8Array {
  let ascii = true;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) > 0x7f) { ascii = false; break; }
  }
  if (!ascii) return ENCODER.encode(s);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
const ENCODER = new TextEncoder();

/** An identifier with its UTF-8 bytes, encoded once and hashed under many prefixes. */
export interface Utf8Id {
  readonly text: string;
  readonly bytes: Uint8Array;
  /**
   * The message words after a prefix, built on first use by {@link hashId} and reused by every
   * flag of the request: by `salt.slot * 4 + prefix length % 4`. Never shared between threads.
   */
  layouts: (Int32Array | undefined)[] | null;
}

/** Wraps `text` with its UTF-8 bytes for {@link hashBytes}. */
export function utf8Id(text: string): Utf8Id {
  return { text, bytes: text.length === 0 ? EMPTY_BYTES : utf8(text), layouts: null };
}

/** A hash salt compiled for {@link hashId}: its bytes and a small distinct slot (0–7). */
export interface HashSalt {
  readonly bytes: Uint8Array;
  readonly slot: number;
}

/** The salts of PostHog's flag hashes: rollout (`""`) and variant (`"variant"`). */
export const ROLLOUT_SALT: HashSalt = Object.freeze({ bytes: EMPTY_BYTES, slot: 0 });
export const VARIANT_SALT: HashSalt = Object.freeze({ bytes: utf8('variant'), slot: 1 });

/**
 * Truncates `s` to its first `max` Unicode scalar values (Rust `MAX_DISTINCT_ID_LEN` = 200,
 * `flags/flag_request.rs`; research §2.4). Counting is by code point, not UTF-16 unit or byte;
 * a lone surrogate counts as one.
 */
export function truncateScalars(s: string, max = 200): string {
  if (s.length <= max) return s; // at most s.length scalar values
  let count = 0;
  for (let i = 0; i < s.length; i++) {
    if (count === max) return s.slice(0, i);
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    count++;
  }
  return s;
}

/**
 * A hash prefix (a flag's `key + "."`, the holdout's `holdout-`) compiled once into the message
 * words {@link hashPrefixed} starts from: its whole big-endian words, and the 0–3 bytes after them.
 */
export interface HashPrefix {
  /** UTF-8 of the prefix. */
  readonly bytes: Uint8Array;
  /** The prefix's whole words (`floor(bytes.length / 4)` of them). */
  readonly words: Int32Array;
  /** The last `bytes.length % 4` bytes, big-endian in the low bits (0 when none). */
  readonly tail: number;
}

/** Compiles `prefix` (a string) for {@link hashPrefixed}. */
export function hashPrefix(prefix: string): HashPrefix {
  const bytes = utf8(prefix);
  const words = new Int32Array(bytes.length >>> 2);
  let tail = 0;
  for (let i = 0; i < bytes.length; i++) {
    tail = (tail << 8) | bytes[i]!;
    if ((i & 3) === 3) { words[i >>> 2] = tail; tail = 0; }
  }
  return { bytes, words, tail };
}

/**
 * hash01 of the concatenation `prefix + id + salt`, all given as UTF-8 bytes. Returns a number in
 * [0, 1]. Allocation-free unless the message exceeds the scratch words (then they grow once).
 *
 * The padded message goes straight into big-endian 32-bit words (SHA-1's message schedule input):
 * bytes are shifted into a register and stored once per word, and the padding is whole words.
 * Writing a byte buffer first and reassembling the words from it cost as much as the 80 rounds
 * themselves (cpu-prof of `make bench`; bench/evaluation.ts "SHA-1 → hash01").
 */
export function hashBytes(prefix: Uint8Array, id: Uint8Array, salt: Uint8Array): number {
  const pl = prefix.length;
  const w = words(pl + id.length + salt.length);
  let acc = 0; // bytes of the word being filled, shifted in from the right
  for (let i = 0; i < pl; i++) {
    acc = (acc << 8) | prefix[i]!;
    if ((i & 3) === 3) w[i >>> 2] = acc;
  }
  return finish(w, acc, pl, id, salt);
}

/** {@link hashBytes} with a compiled prefix: its whole words are copied, not rebuilt from bytes. */
export function hashPrefixed(prefix: HashPrefix, id: Uint8Array, salt: Uint8Array): number {
  const pw = prefix.words;
  const w = words(prefix.bytes.length + id.length + salt.length);
  for (let i = 0; i < pw.length; i++) w[i] = pw[i]!;
  return finish(w, prefix.tail, prefix.bytes.length, id, salt);
}

/**
 * `hashPrefixed(prefix, id.bytes, salt.bytes)`, with the words of `id + salt + 0x80` laid out once
 * per request for the prefix's alignment (`id.layouts`) instead of shifted in byte by byte for
 * every flag: a hash copies the prefix's whole words, then the laid-out words (the prefix's 0–3
 * tail bytes merged into the first), zeros and the bit length. Same result bit for bit.
 */
export function hashId(prefix: HashPrefix, id: Utf8Id, salt: HashSalt): number {
  const pb = prefix.bytes.length;
  const align = pb & 3;
  const key = salt.slot * 4 + align;
  const layouts = (id.layouts ??= []);
  const lay = layouts[key] ?? (layouts[key] = layout(id.bytes, salt.bytes, align));
  const len = pb + id.bytes.length + salt.bytes.length;
  const w = words(len);
  const pw = prefix.words;
  const k = pw.length;
  for (let i = 0; i < k; i++) w[i] = pw[i]!;
  w[k] = lay[0]! | (align === 0 ? 0 : prefix.tail << (8 * (4 - align)));
  for (let i = 1; i < lay.length; i++) w[k + i] = lay[i]!;
  const n = (((len + 8) >>> 6) + 1) * 16;
  for (let i = k + lay.length; i < n - 1; i++) w[i] = 0; // the high length word (n - 2) is 0
  w[n - 1] = len * 8;
  return sha1Top60(w, n);
}

/** Big-endian words of `align` zero bytes, `id`, `salt` and the 0x80 terminator, the last word zero-filled. */
function layout(id: Uint8Array, salt: Uint8Array, align: number): Int32Array {
  const total = align + id.length + salt.length + 1;
  const out = new Int32Array((total + 3) >>> 2);
  let p = align;
  const put = (b: number): void => { out[p >>> 2]! |= b << (8 * (3 - (p & 3))); p++; };
  for (let i = 0; i < id.length; i++) put(id[i]!);
  for (let i = 0; i < salt.length; i++) put(salt[i]!);
  put(0x80);
  return out;
}

/** The scratch words, grown to hold the padded message of `len` bytes. */
function words(len: number): Int32Array {
  // SHA-1 padding: 0x80, zeros, 64-bit big-endian bit length; total a multiple of 64 bytes.
  const n = (((len + 8) >>> 6) + 1) * 16;
  if (n > WORDS.length) WORDS = new Int32Array(n * 2);
  return WORDS;
}
let WORDS = new Int32Array(32);

/**
 * Writes `id` and `salt` after the `p` prefix bytes already in `w` (whole words stored, the rest
 * in `acc`), pads, and hashes.
 */
function finish(w: Int32Array, acc: number, p: number, id: Uint8Array, salt: Uint8Array): number {
  const len = p + id.length + salt.length;
  for (let i = 0; i < id.length; i++) {
    acc = (acc << 8) | id[i]!;
    if ((++p & 3) === 0) w[(p >>> 2) - 1] = acc;
  }
  for (let i = 0; i < salt.length; i++) {
    acc = (acc << 8) | salt[i]!;
    if ((++p & 3) === 0) w[(p >>> 2) - 1] = acc;
  }
  // The 0x80 terminator, then zeros to the end of its word (older bytes shift out of the int32).
  acc = (acc << 8) | 0x80;
  p++;
  const rest = p & 3;
  if (rest !== 0) acc <<= 8 * (4 - rest);
  let k = (p + 3) >>> 2; // words written once the terminator's word is stored
  w[k - 1] = acc;
  const n = (((len + 8) >>> 6) + 1) * 16;
  while (k < n - 1) w[k++] = 0; // the high length word (n - 2) is 0: messages here are far below 2^29 bytes
  w[n - 1] = len * 8;
  return sha1Top60(w, n);
}

/** hash01 for plain strings (compiles nothing; convenient outside the hot path). */
export function hash01(prefix: string, identifier: string, salt: string): number {
  return hashBytes(utf8(prefix), utf8(identifier), utf8(salt));
}

/** Full SHA-1 digest of `bytes` (20 bytes). Used by tests to pin the primitive against vectors. */
export function sha1(bytes: Uint8Array): Uint8Array {
  const total = ((bytes.length + 8) >>> 6) * 64 + 64;
  const m = new Uint8Array(total);
  m.set(bytes, 0);
  m[bytes.length] = 0x80;
  const bits = bytes.length * 8;
  const dv = new DataView(m.buffer);
  dv.setUint32(total - 8, Math.floor(bits / 0x100000000));
  dv.setUint32(total - 4, bits >>> 0);
  const h = compress(m, total);
  const out = new Uint8Array(20);
  const odv = new DataView(out.buffer);
  for (let i = 0; i < 5; i++) odv.setUint32(i * 4, h[i]! >>> 0);
  return out;
}

/** SHA-1 compression over `m[0..total)` (already padded); returns the 5 state words. */
function compress(m: Uint8Array, total: number): Int32Array {
  let h0 = 0x67452301 | 0;
  let h1 = 0xefcdab89 | 0;
  let h2 = 0x98badcfe | 0;
  let h3 = 0x10325476 | 0;
  let h4 = 0xc3d2e1f0 | 0;
  const w = W;
  for (let off = 0; off < total; off += 64) {
    for (let i = 0; i < 16; i++) {
      const j = off + i * 4;
      w[i] = (m[j]! << 24) | (m[j + 1]! << 16) | (m[j + 2]! << 8) | m[j + 3]!;
    }
    for (let i = 16; i < 80; i++) {
      const x = w[i - 3]! ^ w[i - 8]! ^ w[i - 14]! ^ w[i - 16]!;
      w[i] = (x << 1) | (x >>> 31);
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4;
    for (let i = 0; i < 20; i++) {
      const t = (((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + e + w[i]! + 0x5a827999) | 0;
      e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = t;
    }
    for (let i = 20; i < 40; i++) {
      const t = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + w[i]! + 0x6ed9eba1) | 0;
      e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = t;
    }
    for (let i = 40; i < 60; i++) {
      const t = (((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + e + w[i]! + 0x8f1bbcdc) | 0;
      e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = t;
    }
    for (let i = 60; i < 80; i++) {
      const t = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + w[i]! + 0xca62c1d6) | 0;
      e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = t;
    }
    h0 = (h0 + a) | 0; h1 = (h1 + b) | 0; h2 = (h2 + c) | 0; h3 = (h3 + d) | 0; h4 = (h4 + e) | 0;
  }
  STATE[0] = h0; STATE[1] = h1; STATE[2] = h2; STATE[3] = h3; STATE[4] = h4;
  return STATE;
}
const STATE = new Int32Array(5);
