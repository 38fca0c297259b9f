/**
 * Key material: personal API keys (`phx_`) and project API keys (`phc_`) as PostHog makes
 * them — a prefix plus base-62 of random bytes — and the stored form of a personal key,
 * `sha256$<hex>` of the full value (research/posthog-management-api.md §5.1).
 */
import crypto from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Base-62 text of `bytes` random bytes. */
export function randomBase62(bytes: number): string {
  let n = BigInt('0x' + crypto.randomBytes(bytes).toString('hex'));
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(Math.ceil((bytes * 8) / Math.log2(62)), '0');
}

/** A new personal API key value, `phx_` + base-62 of 35 random bytes. */
export function newPersonalApiKey(): string {
  return `phx_${randomBase62(35)}`;
}

/** A new project API key value, `phc_` + base-62 of 32 random bytes. */
export function newProjectApiKey(): string {
  return `phc_${randomBase62(32)}`;
}

/** Stored form of a personal API key: `sha256$<hex digest of the full value>`. */
export function hashPersonalApiKey(value: string): string {
  return `sha256$${crypto.createHash('sha256').update(value, 'utf8').digest('hex')}`;
}

/** Masked display form: first 4 + `...` + last 4 characters. */
export function maskKey(value: string): string {
  return `${value.slice(0, 4)}...${value.slice(-4)}`;
}

/**
 * Constant-time comparison of two stored hashes (equal length strings; different lengths are
 * unequal without a timing signal about content).
 */
export function hashesEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  return ba.length === bb.length && crypto.timingSafeEqual(ba, bb);
}
