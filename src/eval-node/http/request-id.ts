/**
 * Request ids for /flags answers (`requestId`, research/posthog-flag-evaluation.md §5.2): a UUID v4
 * shaped string, unique per request. PostHog's SDKs only echo it in `$feature_flag_called` events.
 *
 * Why not `crypto.randomUUID()` per request: it was ~1 % of a request's CPU on the node
 * (cpu-prof of bench/flags.ts: randomUUID, its buffered random refill and the hex
 * serialization). Here the first 80 bits after the version and variant bits are random per
 * process (drawn again every 2^48 ids) and the last 48 bits (the 12-hex-digit node field) count
 * up, so ids never repeat within a process and collide across processes only if two processes
 * draw the same 74 random bits. Version nibble `4` and variant `8`–`b` are kept, so the string
 * is a well-formed UUID v4 (its node field is sequential rather than random).
 */
import crypto from 'node:crypto';

/** Ids per random prefix: the 12-hex-digit node field. */
const PER_PREFIX = 2 ** 48;
/** The counter is written as a 12-digit hex string: two 24-bit halves (6 digits each) keep it in small integers. */
const HALF = 2 ** 24;

let prefix = '';
let counter = PER_PREFIX;

function newPrefix(): void {
  // `xxxxxxxx-xxxx-4xxx-[89ab]xxx-` from a fresh random UUID (its own node field is dropped).
  prefix = crypto.randomUUID().slice(0, 24);
  counter = 0;
}

function hex6(n: number): string {
  const s = n.toString(16);
  return s.length === 6 ? s : '000000'.slice(s.length) + s;
}

/** The id numbered `n` (0 ≤ n < 2^48) under `idPrefix` (24 characters, ending in `-`). */
export function requestIdAt(idPrefix: string, n: number): string {
  return idPrefix + hex6(Math.floor(n / HALF)) + hex6(n % HALF);
}

/** A fresh UUID v4 shaped request id, unique within this process. */
export function nextRequestId(): string {
  if (counter >= PER_PREFIX) newPrefix();
  return requestIdAt(prefix, counter++);
}
