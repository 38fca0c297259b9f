/** gRPC call metadata shared by every node → control-plane call. */
import * as grpc from '@grpc/grpc-js';

/** Metadata carrying the cluster token (`authorization: Bearer <token>`), checked on every call. */
export function clusterTokenMetadata(token: string): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
}
