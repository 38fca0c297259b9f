/**
 * The bucketing primitive against PostHog's vectors (test/evaluation/vectors, copied from
 * /work/shared/research/vectors): SHA-1 sanity, the harness hash corpus (hash, threshold and
 * variant vectors), and the hand-written SHA-1 against node:crypto on random inputs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import {
  hash01, hashBytes, hashId, hashPrefix, hashPrefixed, ROLLOUT_SALT, sha1, truncateScalars, utf8, utf8Id, VARIANT_SALT,
} from '../../src/evaluation/hash.js';
import { rolloutThreshold, isFullRollout, withinRollout } from '../../src/evaluation/bucketing.js';
import { buildVariantTable, pickVariant } from '../../src/evaluation/variants.js';
import { loadVector } from './support.js';

const corpus = loadVector('harness-hash_sha1_60_v1.json');

test('sha1 sanity vector (posthog-js crypto.spec.ts)', () => {
  for (const v of loadVector('sha1-sanity.json').vectors) {
    assert.equal(Buffer.from(sha1(utf8(v.input))).toString('hex'), v.sha1_hex);
  }
});

for (const v of corpus.vectors) {
  test(`hash vector ${v.id}`, () => {
    assert.equal(v.prefix + v.identifier + v.salt, v.input, 'vector composition');
    assert.equal(Buffer.from(utf8(v.input)).toString('hex'), v.input_utf8_hex, 'UTF-8 bytes');
    assert.equal(Buffer.from(sha1(utf8(v.input))).toString('hex'), v.sha1_hex, 'digest');
    assert.equal(hash01(v.prefix, v.identifier, v.salt), v.hash01, 'hash01 bit for bit');
    if (v.identifier_before_truncation !== undefined) {
      assert.equal(truncateScalars(v.identifier_before_truncation), v.identifier, 'truncated to 200 scalar values');
    }
    for (const c of v.rollout_checks ?? []) {
      const included = isFullRollout(c.rollout_percentage) || withinRollout(v.hash01, rolloutThreshold(c.rollout_percentage));
      assert.equal(included, c.included, `rollout ${c.rollout_percentage}`);
      assert.equal(isFullRollout(c.rollout_percentage), c.short_circuit === true, 'short-circuit only at 100');
    }
    for (const c of v.holdout_checks ?? []) {
      const member = isFullRollout(c.exclusion_percentage) || withinRollout(v.hash01, rolloutThreshold(c.exclusion_percentage));
      assert.equal(member, c.member, `holdout ${c.exclusion_percentage}`);
    }
    if (v.variant_check) {
      const table = buildVariantTable(v.variant_check.variants);
      assert.deepEqual([...table.boundaries], v.variant_check.cumulative_boundaries);
      assert.equal(pickVariant(table, v.hash01), v.variant_check.selected);
    }
  });
}

for (const v of corpus.threshold_vectors) {
  test(`threshold vector ${v.id}`, () => {
    assert.equal(rolloutThreshold(v.rollout_percentage), v.threshold);
    const included = isFullRollout(v.rollout_percentage) || withinRollout(v.hash01, rolloutThreshold(v.rollout_percentage));
    assert.equal(included, v.included);
  });
}

for (const v of corpus.variant_vectors) {
  test(`variant vector ${v.id}`, () => {
    const table = buildVariantTable(v.variants);
    assert.deepEqual([...table.boundaries], v.cumulative_boundaries);
    assert.equal(pickVariant(table, v.hash01), v.selected, 'version 1 selection (null = no variant, value true)');
  });
}

test('seed parity vectors: v1 input bytes and hash01', () => {
  for (const v of corpus.seed_parity) {
    if (v.v1_input === undefined) continue;
    assert.equal(v.v1_input, v.v2.input);
    assert.equal(hash01(v.v2.prefix, v.identifier, v.salt), v.hash01, v.id);
  }
});

test('hand-written SHA-1 equals node:crypto on 20,000 random inputs (ASCII, multibyte, multi-block; byte and compiled prefixes)', () => {
  let seed = 1;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const alphabet = ['a', 'Z', '0', '-', '.', 'é', '日', '😀', ' ', '\u0000'];
  for (let i = 0; i < 20000; i++) {
    const len = Math.floor(rnd() * (i % 10 === 0 ? 300 : 70));
    let s = '';
    for (let j = 0; j < len; j++) s += alphabet[Math.floor(rnd() * alphabet.length)];
    const d = crypto.createHash('sha1').update(s, 'utf8').digest();
    const expected = (d.readUInt32BE(0) * 2 ** 28 + (d.readUInt32BE(4) >>> 4)) / 2 ** 60;
    let cut = Math.floor(rnd() * (s.length + 1));
    if (cut > 0 && cut < s.length && /[\ud800-\udbff]/.test(s[cut - 1]!)) cut++; // never split a surrogate pair
    assert.equal(hashBytes(utf8(s.slice(0, cut)), utf8(''), utf8(s.slice(cut))), expected, JSON.stringify(s));
    // The compiled-prefix form, split in three (prefix of every length mod 4, id, salt).
    let cut2 = cut + Math.floor(rnd() * (s.length - cut + 1));
    if (cut2 > cut && cut2 < s.length && /[\ud800-\udbff]/.test(s[cut2 - 1]!)) cut2++;
    assert.equal(hashPrefixed(hashPrefix(s.slice(0, cut)), utf8(s.slice(cut, cut2)), utf8(s.slice(cut2))), expected, JSON.stringify(s));
    assert.equal(Buffer.from(sha1(utf8(s))).toString('hex'), d.toString('hex'));
  }
});

test('hashId (words of id + salt laid out once per id) equals node:crypto for every prefix alignment, both salts, one id reused', () => {
  const top60 = (s: string): number => {
    const d = crypto.createHash('sha1').update(s, 'utf8').digest();
    return (d.readUInt32BE(0) * 2 ** 28 + (d.readUInt32BE(4) >>> 4)) / 2 ** 60;
  };
  // Ids across the one-block limit (55 message bytes) and into a third block; ASCII and multibyte.
  const ids = ['', 'u', 'user-12345', 'é日😀x', 'a'.repeat(40), 'b'.repeat(44), 'c'.repeat(45), 'd'.repeat(120)];
  // Prefixes of every length mod 4, reused in a different order so a layout built for one is reused by another.
  const prefixes = ['.', 'a.', 'mv-00.', 'rollout-00.', 'flag-key-of-20-bytes', 'x'.repeat(50) + '.', 'rollout-00.'];
  for (const text of ids) {
    const id = utf8Id(text);
    for (const p of [...prefixes, ...prefixes.slice().reverse()]) {
      const compiled = hashPrefix(p);
      assert.equal(hashId(compiled, id, ROLLOUT_SALT), top60(p + text), `${JSON.stringify(p)} + ${JSON.stringify(text)}`);
      assert.equal(hashId(compiled, id, VARIANT_SALT), top60(p + text + 'variant'), `${JSON.stringify(p)} + ${JSON.stringify(text)} + variant`);
    }
  }
});

test('truncateScalars counts code points, not UTF-16 units', () => {
  const cases: Array<[string, string, number, string]> = [
    ['short string unchanged', 'abc', 200, 'abc'],
    ['ASCII cut', 'a'.repeat(205), 200, 'a'.repeat(200)],
    ['astral characters count once', '😀'.repeat(3), 2, '😀😀'],
    ['exactly max multibyte', 'é'.repeat(200), 200, 'é'.repeat(200)],
    ['lone surrogate counts once', '\ud800ab', 2, '\ud800a'],
  ];
  for (const [name, input, max, expected] of cases) assert.equal(truncateScalars(input, max), expected, name);
});
