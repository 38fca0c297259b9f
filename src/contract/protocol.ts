/**
 * The protocol version both tiers speak over gRPC (DESIGN.md "Scale and the cluster": a control
 * plane and its nodes are upgraded one process at a time, so for a while they run different
 * builds). Every call a node makes carries `switchyard-protocol: <version>` in its metadata
 * ({@link PROTOCOL_METADATA_KEY}); the control plane answers with its own in the response headers,
 * and refuses a call it cannot serve with FAILED_PRECONDITION, its version in the trailers.
 *
 * Rule: two versions interoperate when they are at most {@link PROTOCOL_WINDOW} apart (a build
 * keeps reading and writing what the previous one did, and tolerates what the next one adds).
 * A peer that sends no version predates the header and speaks {@link BASE_PROTOCOL_VERSION}.
 * Bump {@link PROTOCOL_VERSION} when a message changes meaning (not for additive proto fields,
 * which protobuf already tolerates).
 */
import * as grpc from '@grpc/grpc-js';

/** The version this build speaks. */
export const PROTOCOL_VERSION = 1;
/** What a peer that sends no version speaks (builds before the header existed). */
export const BASE_PROTOCOL_VERSION = 1;
/** Largest distance between two versions that still interoperate. */
export const PROTOCOL_WINDOW = 1;
/** gRPC metadata key carrying the version (request metadata, response headers, error trailers). */
export const PROTOCOL_METADATA_KEY = 'switchyard-protocol';

/**
 * The version in `md` (a peer's request metadata, response headers or trailers):
 * {@link BASE_PROTOCOL_VERSION} when absent, NaN when present but not a non-negative integer.
 */
export function protocolOf(md: grpc.Metadata | undefined): number {
  const values = md?.get(PROTOCOL_METADATA_KEY) ?? [];
  if (values.length === 0) return BASE_PROTOCOL_VERSION;
  const v = values[0];
  return typeof v === 'string' && /^\d{1,9}$/.test(v) ? Number(v) : Number.NaN;
}

/** True when a peer speaking `theirs` interoperates with `ours` (see the module doc). */
export function protocolCompatible(ours: number, theirs: number): boolean {
  return Number.isInteger(theirs) && Math.abs(ours - theirs) <= PROTOCOL_WINDOW;
}

/** Metadata holding only `switchyard-protocol: <version>`. */
export function protocolMetadata(version: number = PROTOCOL_VERSION): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set(PROTOCOL_METADATA_KEY, String(version));
  return md;
}

/** The human-readable range a side at `ours` accepts, e.g. `0..2`. */
export function acceptedProtocols(ours: number): string {
  return `${Math.max(0, ours - PROTOCOL_WINDOW)}..${ours + PROTOCOL_WINDOW}`;
}
