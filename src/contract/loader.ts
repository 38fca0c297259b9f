/**
 * The one gRPC contract loader shared by the control plane and the evaluation nodes
 * (STYLE.md rule 10): proto/switchyard.proto through @grpc/proto-loader with a fixed option
 * set, so both ends decode messages identically (int64 → decimal string, enums → names,
 * defaults filled in, the `event` oneof named by its `event` field).
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PROTO_FILE } from '../paths.js';

/** proto-loader options used everywhere; do not vary them per caller. */
export const PROTO_LOADER_OPTIONS: protoLoader.Options = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});

/** Fully-qualified service name, as it appears in gRPC paths. */
export const SERVICE_NAME = 'switchyard.v1.Switchyard';

let cached: grpc.ServiceClientConstructor | null = null;

/**
 * Loads (once per process) and returns the `switchyard.v1.Switchyard` client constructor;
 * its `.service` is the definition to pass to `server.addService`.
 * @throws when proto/switchyard.proto is missing or invalid.
 */
export function switchyardService(): grpc.ServiceClientConstructor {
  if (cached) return cached;
  const def = protoLoader.loadSync(PROTO_FILE, PROTO_LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(def) as unknown as { switchyard: { v1: { Switchyard: grpc.ServiceClientConstructor } } };
  cached = pkg.switchyard.v1.Switchyard;
  return cached;
}
