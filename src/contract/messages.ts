/**
 * TypeScript shapes of the proto/switchyard.proto messages as @grpc/proto-loader decodes them
 * with the options of loader.ts (int64 → decimal string, enums → names, oneof → `event`
 * discriminator), plus the revision conversion done at this edge (STYLE.md rule 10).
 *
 * Revisions become JS numbers, not bigint: the Postgres driver already returns them as numbers
 * (db/connect.ts) and a change log would need 2^53 rows to overflow; {@link parseRevision}
 * rejects anything that is not a safe non-negative integer.
 */
/** int64 on the wire (decimal string when decoded; string or number accepted when encoding). */
export type Int64 = string;

/** Watch request. */
export interface WatchRequest { from_revision: Int64; node_id: string; resume?: SnapshotResumeMessage | null }
/** Where a node's partly received snapshot stopped (proto SnapshotResume). */
export interface SnapshotResumeMessage { revision: Int64; cursor: Buffer }
/** A page of snapshot entities (proto SnapshotChunk; see control-plane/grpc/snapshot.ts for `entities`). */
export interface SnapshotChunkMessage { entities: Buffer; cursor: Buffer }

/** Change operation names. */
export type ChangeOp = 'UPSERT' | 'DELETE';

/** One entity change; payload is msgpack of the entity (empty for DELETE); project_id '0' = none. */
export interface ChangeMessage {
  revision: Int64;
  kind: string;
  entity_id: string;
  project_id: Int64;
  op: ChangeOp | 'OP_UNSPECIFIED';
  payload: Buffer;
}

/** A Watch stream event as received (exactly one member set, named by `event`). */
export type WatchEvent =
  | { event: 'snapshot_begin'; snapshot_begin: { revision: Int64; resumed: boolean } }
  | { event: 'snapshot_chunk'; snapshot_chunk: SnapshotChunkMessage }
  | { event: 'change'; change: ChangeMessage }
  | { event: 'snapshot_end'; snapshot_end: { revision: Int64 } }
  | { event: 'heartbeat'; heartbeat: { revision: Int64 } }
  | { event: 'changes'; changes: { changes: ChangeMessage[] } };

/** A Watch event as written by the server (the encoder infers the oneof from the set member). */
export type WatchEventOut =
  | { snapshot_begin: { revision: string; resumed?: boolean } }
  | { snapshot_chunk: SnapshotChunkMessage }
  | { change: ChangeMessage }
  | { snapshot_end: { revision: string } }
  | { heartbeat: { revision: string } }
  | { changes: { changes: ChangeMessage[] } };

/** Thrown by {@link parseRevision} for a value that is not a revision. */
export class RevisionError extends Error {
  constructor(value: unknown) {
    super(`not a revision: ${JSON.stringify(value)}`);
    this.name = 'RevisionError';
  }
}

/**
 * Wire int64 (decimal string, or number) → revision number.
 * @throws RevisionError for negatives, non-integers and values above Number.MAX_SAFE_INTEGER.
 */
export function parseRevision(value: string | number | undefined | null): number {
  const n = typeof value === 'number' ? value : value === undefined || value === null || value === '' ? 0 : /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 0) throw new RevisionError(value);
  return n;
}

/** Revision number → wire int64 string. */
export function formatRevision(revision: number): string {
  return String(revision);
}

/**
 * An int64 map key as protobufjs decodes it → number. protobufjs does not stringify 64-bit map
 * keys like other int64 fields: it hands them over as an 8-character "long hash" (the 8 bytes,
 * little-endian, one per char). Decimal strings (as encoded by callers) are accepted too.
 * @throws RevisionError for negative keys, keys above Number.MAX_SAFE_INTEGER and anything else.
 */
export function parseInt64MapKey(key: string): number {
  if (/^\d+$/.test(key)) return parseRevision(key);
  if (key.length !== 8) throw new RevisionError(key);
  let lo = 0;
  let hi = 0;
  for (let i = 0; i < 4; i++) lo += key.charCodeAt(i) * 2 ** (8 * i);
  for (let i = 0; i < 4; i++) hi += key.charCodeAt(4 + i) * 2 ** (8 * i);
  if (hi >= 2 ** 31) throw new RevisionError(key); // negative
  return parseRevision(hi * 2 ** 32 + lo);
}
