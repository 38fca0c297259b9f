/**
 * Everything the node's route handlers share, built once by server.ts.
 */
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { NodeStore } from '../store/lmdb.js';
import type { Evaluator } from '../pool/index.js';
import type { Metrics, OutboxFigures } from './metrics.js';
import type { FlagUsage } from './usage.js';
import type { RateLimiter } from './rate-limit.js';
import type { EvaluationShare } from './eval-share.js';
import type { DefinitionsFeedCache } from '../../feed/definitions-feed.js';
import type { ContinuityRecorder } from './continuity.js';

/** A probe's answer, independent of the HTTP server that sends it (uWS, or node:http in probe-server.ts). */
export interface ProbeAnswer {
  status: number;
  body: string;
  contentType: string;
}

/** Sync state as the node's sync client reports it (all fields optional). */
export interface SyncState {
  /** Revisions between the control plane's head and the node's store, when known. */
  lagRevisions?: number | null;
  connected?: boolean;
  /** Snapshots swapped in since start (0 for a node that started from a snapshot image and only tailed). */
  snapshotsApplied?: number;
  /** Seconds since the last Watch event (heartbeats included), when one has arrived. */
  lastEventAgeSeconds?: number | null;
  [extra: string]: unknown;
}

/** Shared state of the node's HTTP handlers. */
export interface NodeHttpContext {
  config: Config;
  log: Logger;
  store: NodeStore;
  metrics: Metrics;
  usage: FlagUsage;
  evaluator: Evaluator;
  feed: DefinitionsFeedCache;
  /** Per-project rate limit of the server-side feeds (rate-limit.ts; config.definitionsRatePerMinute). */
  feedLimiter: RateLimiter;
  /** This thread's per-project share of evaluation time under contention (eval-share.ts). */
  evalShare: EvaluationShare;
  /** False when no GeoIP database could be opened: every job gets `ip: null`. */
  geoipEnabled: boolean;
  /** Whether a project's flags read `$geoip_*` properties at all (FlagsEngine.needsGeoip of the IO thread's engine). */
  needsGeoip(projectId: number): boolean;
  syncState?: () => SyncState | undefined;
  /** Experience-continuity override records of /flags (continuity.ts); absent without a capture service. */
  continuity?: ContinuityRecorder;
  /** The capture outbox's sizes (/metrics), when this node captures. */
  outboxStorage?: () => OutboxFigures;
  /** On an IO thread: `/metrics` as the main thread renders it for every thread (http/io-threads.ts). */
  renderMetrics?: () => Promise<ProbeAnswer>;
}
