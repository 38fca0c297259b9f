/**
 * Protocol-version gate in front of every gRPC handler (contract/protocol.ts): a call from a node
 * whose `switchyard-protocol` is more than one version away from this control plane's is refused
 * with FAILED_PRECONDITION (details name both versions; the trailers carry this side's version so
 * the node can say why), and logged once per node and version; any other call gets this side's
 * version in its response headers before the handler runs.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log.js';
import {
  acceptedProtocols, protocolCompatible, protocolMetadata, protocolOf,
} from '../../contract/protocol.js';

/** Most (node, version) pairs remembered so a refusal is logged once (beyond that, logged again). */
const MAX_LOGGED_REFUSALS = 1_000;

/** The status refusing a node at `theirs` (this side at `ours`). */
export function protocolRefusal(ours: number, theirs: number): grpc.StatusObject {
  return {
    code: grpc.status.FAILED_PRECONDITION,
    details: `protocol version ${Number.isNaN(theirs) ? 'unreadable' : theirs} not supported: this control plane speaks ${ours} and accepts ${acceptedProtocols(ours)}`,
    metadata: protocolMetadata(ours),
  };
}

type AnyCall = grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerReadableStream<unknown, unknown>
  | grpc.ServerWritableStream<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>;

/**
 * Wraps each handler of `handlers` (unary: `(call, callback)`, streams: `(call)`) with the gate.
 * @param version this control plane's protocol version.
 */
export function withProtocolGate(handlers: grpc.UntypedServiceImplementation, version: number, log: Logger): grpc.UntypedServiceImplementation {
  const logged = new Set<string>();
  const refuse = (call: AnyCall, theirs: number): grpc.StatusObject => {
    const status = protocolRefusal(version, theirs);
    const node = String(((call as { request?: { node_id?: unknown } }).request)?.node_id ?? call.getPeer());
    const key = `${node}\0${theirs}`;
    if (!logged.has(key)) {
      if (logged.size >= MAX_LOGGED_REFUSALS) logged.clear();
      logged.add(key);
      log.error({ node, peer: call.getPeer(), node_protocol: theirs, protocol: version }, 'refused a node speaking an incompatible protocol version');
    }
    return status;
  };
  const out: grpc.UntypedServiceImplementation = {};
  for (const [name, handler] of Object.entries(handlers)) {
    out[name] = ((call: AnyCall, callback?: grpc.sendUnaryData<unknown>) => {
      const theirs = protocolOf(call.metadata);
      if (!protocolCompatible(version, theirs)) {
        const status = refuse(call, theirs);
        if (callback) callback(status as grpc.ServiceError, null);
        else call.emit('error', status);
        return;
      }
      call.sendMetadata(protocolMetadata(version));
      (handler as (c: AnyCall, cb?: grpc.sendUnaryData<unknown>) => void)(call, callback);
    }) as grpc.UntypedHandleCall;
  }
  return out;
}

