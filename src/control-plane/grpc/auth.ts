/**
 * Cluster-token check for every gRPC call (DESIGN.md "Control plane"): metadata
 * `authorization: Bearer <SWITCHYARD_CLUSTER_TOKEN>`. Compared in constant time on sha256
 * digests so neither the content nor the length of the token leaks through timing.
 */
import crypto from 'node:crypto';
import * as grpc from '@grpc/grpc-js';

function digest(s: string): Buffer {
  return crypto.createHash('sha256').update(s, 'utf8').digest();
}

/** True when `metadata` carries `authorization: Bearer <token>` for exactly `token`. */
export function hasClusterToken(metadata: grpc.Metadata, token: string): boolean {
  const values = metadata.get('authorization');
  if (values.length !== 1 || typeof values[0] !== 'string') return false;
  const m = /^Bearer\s+(.+)$/i.exec(values[0]);
  if (!m) return false;
  return crypto.timingSafeEqual(digest(m[1]!.trim()), digest(token));
}

/** The status sent for a missing or wrong cluster token. */
export function unauthenticated(): Partial<grpc.StatusObject> {
  return { code: grpc.status.UNAUTHENTICATED, details: 'missing or invalid cluster token' };
}

/** Metadata a node sends on every call (defined with the other shared gRPC helpers). */
export { clusterTokenMetadata } from '../../contract/metadata.js';
