/** gRPC call metadata shared by every node → control-plane call. */
import * as grpc from '@grpc/grpc-js';
import { PROTOCOL_METADATA_KEY, PROTOCOL_VERSION } from './protocol.js';

/**
 * Metadata carrying the cluster token (`authorization: Bearer <token>`), checked on every call,
 * and the protocol version the node speaks (`switchyard-protocol`, contract/protocol.ts;
 * default this build's).
 */
export function clusterTokenMetadata(token: string, protocolVersion: number = PROTOCOL_VERSION): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  md.set(PROTOCOL_METADATA_KEY, String(protocolVersion));
  return md;
}
