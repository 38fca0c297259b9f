/**
 * The evaluation node's public entry: what code outside `src/eval-node/` may use of the node.
 * The control plane's snapshot image runs a real node store and Watch client on a thread of its
 * own (`startEvalNode`) and talks to it over {@link ThreadRpc}; the `eval-node` and `start`
 * commands run a whole node service (`startNodeService`). Everything else under `src/eval-node/`
 * is internal to the node (docs/architecture.md).
 */
export { startEvalNode, nodeStorePath, type EvalNode, type EvalNodeOptions } from './node.js';
export { startNodeService, type NodeService } from './service.js';
export { ThreadRpc, type WireError } from './http/thread-rpc.js';
