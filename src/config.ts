/**
 * Configuration: environment variables read and validated once, at start-up, into a frozen
 * typed object (DESIGN.md "Processes"; STYLE.md rule 6). Nothing else reads `process.env`.
 *
 * A bad value throws {@link ConfigError} naming the variable, and start-up stops.
 */
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { DEFAULT_EVAL_BUDGET_MS, MAX_OUTBOX_BYTES } from './limits.js';

/** Thrown for an invalid environment variable; the message names it. */
export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

/** The validated configuration of every Switchyard process. Units are in the names. */
export interface Config {
  /** Postgres URL; null → `switchyard start` runs embedded Postgres under `dataDir`. */
  readonly databaseUrl: string | null;
  /** Port of the embedded Postgres on 127.0.0.1 (used only when databaseUrl is null). */
  readonly embeddedPostgresPort: number;
  /** Root of everything a process keeps on disk (embedded Postgres, LMDB). */
  readonly dataDir: string;
  /** Address every listener binds to. */
  readonly host: string;
  /** Management API port (control plane). */
  readonly apiPort: number;
  /** gRPC port (control plane). */
  readonly grpcPort: number;
  /** /flags and capture port (evaluation node). */
  readonly flagsPort: number;
  /**
   * Optional node:http listener for `/_health`, `/_ready` and `/metrics` that also answers
   * HTTP/1.0 and Host-less probes (`SWITCHYARD_PROBE_PORT`; null = off; 0 = any free port).
   */
  readonly probePort: number | null;
  /**
   * gRPC addresses of the control planes an evaluation node connects to
   * (SWITCHYARD_CONTROL_PLANE): one `host:port`, a comma-separated list of them, or a DNS name
   * that resolves to several addresses; see {@link controlPlaneAddresses}.
   */
  readonly controlPlane: string;
  /**
   * How long a stopping process keeps serving while reporting not-ready, in seconds
   * (SWITCHYARD_DRAIN_SECONDS, default 5): the time a load balancer needs to stop sending to it.
   */
  readonly drainSeconds: number;
  /**
   * Longest a stop may take in all (drain, in-flight requests, last shipping), in seconds
   * (SWITCHYARD_SHUTDOWN_TIMEOUT_SECONDS, default 30; set it above the drain period, or the drain
   * is cut short); then the process exits at once (code 1).
   */
  readonly shutdownTimeoutSeconds: number;
  /** Shared secret checked on every gRPC call; null means "generate one" for `switchyard start`. */
  readonly clusterToken: string | null;
  /**
   * Public origin of the management API (`SWITCHYARD_API_URL`, e.g. `https://flags.example.com`),
   * used for absolute links (`next`/`previous`); null = `http://<host>:<apiPort>`. Never the Host header.
   */
  readonly apiUrl: string | null;
  /** Piscina pool size; 0 evaluates on the IO thread. */
  readonly evalThreads: number;
  /**
   * Threads serving the node's HTTP port (SWITCHYARD_IO_THREADS, default: the available cores):
   * 1 serves on the main thread; N > 1 runs N uWebSockets.js apps in worker threads on the same
   * port (http/io-threads.ts) while the main thread syncs, ships capture and reports usage.
   */
  readonly ioThreads: number;
  /**
   * LMDB map size of a node's store, in bytes (SWITCHYARD_LMDB_MAP_SIZE, default 16 GiB): set up
   * front so the environment keeps one memory mapping (grown in steps, lmdb-js keeps every old
   * mapping alive and RSS overstates the node's memory). Address space, not memory: the file grows
   * only as data is written.
   */
  readonly lmdbMapSize: number;
  /**
   * Quiet time, in ms, after bulk writes (a snapshot, a run of changes, capture) before a node
   * hands memory back: a GC in every thread, the LMDB pages mapped meanwhile, the malloc arenas'
   * free pages (SWITCHYARD_MEMORY_RELEASE_QUIET_MS, default 1000; 0 = never; eval-node/memory/
   * release.ts). Keeps RSS at what the node uses rather than what a load touched.
   */
  readonly memoryReleaseQuietMs: number;
  /**
   * Snapshot images (SWITCHYARD_SNAPSHOT_IMAGE, default true): a control plane
   * keeps a complete node store current beside Postgres and serves copies of it
   * (control-plane/snapshot-image); a node that has no store installs a copy and watches from its
   * revision instead of taking a Watch snapshot entity by entity. false: neither.
   */
  readonly snapshotImage: boolean;
  /**
   * Largest young generation of each IO thread's V8 heap, in MiB (SWITCHYARD_IO_THREAD_YOUNG_GEN_MB;
   * 0 = V8's default, which grows to ~48 MiB per thread under a capture load and never shrinks).
   */
  readonly ioThreadYoungGenMb: number;
  /**
   * Largest /flags and /decide body once decoded (gunzip, base64), in bytes (413 above). SDK bodies carry a distinct id and some properties: kilobytes.
   */
  readonly maxFlagsBodyBytes: number;
  /** Largest capture body once decoded (gunzip, base64), in bytes (413 above). */
  readonly maxCaptureBodyBytes: number;
  /**
   * Per-project requests per minute on a node's server-side feeds (`/flags/definitions` and
   * remote_config; PostHog's 600/min/team; `SWITCHYARD_DEFINITIONS_RATE_PER_MINUTE`, 0 = off).
   */
  readonly definitionsRatePerMinute: number;
  /**
   * Management API requests per personal API key per minute (PostHog's burst limit, 480;
   * `SWITCHYARD_API_BURST_RATE_PER_MINUTE`, 0 = off).
   */
  readonly apiBurstRatePerMinute: number;
  /**
   * Management API requests per personal API key per hour (PostHog's sustained limit, 4,800;
   * `SWITCHYARD_API_SUSTAINED_RATE_PER_HOUR`, 0 = off).
   */
  readonly apiSustainedRatePerHour: number;
  /**
   * Whether this control plane works experiment timeseries jobs (`SWITCHYARD_TIMESERIES_WORKER`,
   * default true); with false it only enqueues them for another control plane to run.
   */
  readonly timeseriesWorker: boolean;
  /**
   * Longest a pool task (one batch of /flags jobs) may run, in milliseconds; then its worker is
   * replaced and its requests answer 503 `evaluation_timeout`.
   */
  readonly evalTaskTimeoutMs: number;
  /**
   * Evaluation time one /flags request may spend across all its flags, in milliseconds
   * (`SWITCHYARD_EVAL_BUDGET_MS`, default {@link DEFAULT_EVAL_BUDGET_MS}): past it the flags not
   * yet answered are failed entries and `errorsWhileComputingFlags` is true (src/evaluation/budget.ts).
   */
  readonly evalBudgetMs: number;
  /**
   * Share of an IO thread's evaluation time, in percent, one project may use while the thread is
   * busy and other projects wait (`SWITCHYARD_PROJECT_EVAL_SHARE_PERCENT`, 1–100, default 50; 100
   * turns it off): past it the project's `/flags` and OFREP requests answer 429 for the rest of a
   * 250 ms window (src/eval-node/http/eval-share.ts).
   */
  readonly projectEvalSharePercent: number;
  /**
   * Worker threads of the control plane's scan pool (SWITCHYARD_SCAN_THREADS, default: half the
   * cores, 1 to 4), which matches filters against many persons (user_blast_radius, cohort
   * calculation, evaluation_reasons, my_flags, static cohort for a flag) off the event loop.
   */
  readonly scanThreads: number;
  /**
   * Scans one project may run at once (SWITCHYARD_SCAN_PROJECT_CONCURRENCY, default 2): a request
   * past it answers 429 throttled; a cohort calculation past it waits for a slot.
   */
  readonly scanProjectConcurrency: number;
  /**
   * Longest a scan answering a request may run, in milliseconds (SWITCHYARD_SCAN_TIMEOUT_MS,
   * default 30 000), waiting for a worker included; past it the request answers 504.
   */
  readonly scanTimeoutMs: number;
  /**
   * Longest one cohort calculation (or static-cohort fill) may run, in milliseconds
   * (SWITCHYARD_COHORT_CALCULATION_TIMEOUT_MS, default 300 000); past it the calculation stops
   * and counts in the cohort's `errors_calculating`, its count unchanged.
   */
  readonly cohortCalculationTimeoutMs: number;
  /** Path of a GeoLite2-City .mmdb file. */
  readonly geoipDbPath: string;
  /** Value of the bootstrap personal API key (`phx_…`), or null to generate one. */
  readonly bootstrapPersonalApiKey: string | null;
  /** Value of the bootstrap project API key (`phc_…`), or null to generate one. */
  readonly bootstrapProjectApiKey: string | null;
  /** Largest accepted request body on the management API, in bytes. */
  readonly maxApiBodyBytes: number;
  /** Largest accepted request body on /flags and capture, in bytes. */
  readonly maxPublicBodyBytes: number;
  /** Largest size of the capture outbox on a node before capture answers 503, in bytes. */
  readonly maxOutboxBytes: number;
  /**
   * Copies of a node's store or capture outbox moved aside after damage that are kept, newest
   * first (SWITCHYARD_KEEP_MOVED_ASIDE, default 3; 0 keeps none); older ones are deleted, an
   * outbox copy only once its events were recovered (store/aside.ts).
   */
  readonly keepMovedAside: number;
  /**
   * Days of events kept (SWITCHYARD_EVENTS_RETENTION_DAYS; null = keep every event). Whole
   * months are dropped once entirely older, never events a live experiment reads
   * (ingestion/event-partitions.ts).
   */
  readonly eventsRetentionDays: number | null;
  /**
   * Longest one statement of a query (`POST /query/`: experiment analyses, trends) may run, in ms
   * (SWITCHYARD_QUERY_TIMEOUT_MS, default 120,000; 0 = no limit). Past it the query answers 504, as PostHog's query endpoint
   * does when its datastore's time limit is hit, and Postgres stops the work (it would otherwise
   * go on after the client gave up).
   */
  readonly queryTimeoutMs: number;
  /**
   * How long a project API key replaced by `PATCH /api/projects/<id>/reset_token/` keeps working,
   * in seconds (SWITCHYARD_PROJECT_TOKEN_OVERLAP_SECONDS, default 300; 0 = refused at once, as
   * PostHog does). During the overlap the control plane and every node accept both keys (capture
   * with either lands in the project); nodes stop accepting the old one by their own clock.
   */
  readonly projectTokenOverlapSeconds: number;
  /**
   * Longest one query may run in total, in ms: every statement of it together, waiting for a
   * connection included (SWITCHYARD_QUERY_DEADLINE_MS, default 120,000; 0 = no limit). Past it the
   * running statements are cancelled and the query answers 504 (DatastoreQueryTimeOut).
   */
  readonly queryDeadlineMs: number;
  /**
   * Queries one project may run at once (`POST /query/`, insights' results; SWITCHYARD_QUERY_CONCURRENCY_PER_PROJECT,
   * default 3, as PostHog limits concurrent API queries per team; 0 = no cap). One more answers 429 `throttled`.
   */
  readonly queryConcurrencyPerProject: number;
  /**
   * Connections of the pool queries run on, kept apart from the management API's pool so flag
   * and key management never wait behind queries (SWITCHYARD_QUERY_POOL_SIZE, default 6). Queries
   * beyond it wait for a connection within their deadline.
   */
  readonly queryPoolSize: number;
  /**
   * Failed authentications (unknown personal API keys) one client address may make per minute on
   * the management API before every request from it that presents a key answers 429 until the
   * minute is over (SWITCHYARD_AUTH_FAILURES_PER_MINUTE, default 60; 0 = no limit).
   */
  readonly authFailuresPerMinute: number;
  /**
   * Longest a client may take to send a request's headers on the management API, in ms
   * (SWITCHYARD_API_HEADERS_TIMEOUT_MS, default 10,000); then the connection is closed (408).
   */
  readonly apiHeadersTimeoutMs: number;
  /**
   * Longest a client may take to send a whole request (headers and body) on the management API,
   * in ms (SWITCHYARD_API_REQUEST_TIMEOUT_MS, default 30,000; at least the headers timeout).
   */
  readonly apiRequestTimeoutMs: number;
  /**
   * How long an idle keep-alive connection to the management API stays open, in ms
   * (SWITCHYARD_API_KEEP_ALIVE_TIMEOUT_MS, default 65,000: above the 60 s idle timeout of common
   * load balancers, so they never reuse a connection the server is closing).
   */
  readonly apiKeepAliveTimeoutMs: number;
  /**
   * Most connections the management API holds open at once (SWITCHYARD_API_MAX_CONNECTIONS,
   * default 1,024; 0 = no cap); a connection beyond it is closed as soon as it is accepted.
   */
  readonly apiMaxConnections: number;
  /** pino level. */
  readonly logLevel: string;
}

const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** Default GeoLite2-City database: the one shipped by the `geoip-database` package. */
export function defaultGeoipDbPath(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve('geoip-database/package.json')), 'GeoLite2-City.mmdb');
}

function str(env: NodeJS.ProcessEnv, name: string): string | null {
  const v = env[name];
  return v === undefined || v.trim() === '' ? null : v.trim();
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === null) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `expected an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `expected ${min}..${max}, got ${n}`);
  return n;
}

function prefixed(env: NodeJS.ProcessEnv, name: string, prefix: string): string | null {
  const v = str(env, name);
  if (v !== null && (!v.startsWith(prefix) || v.length < prefix.length + 16 || !/^[A-Za-z0-9_]+$/.test(v))) {
    throw new ConfigError(name, `must start with "${prefix}" followed by at least 16 letters, digits or underscores`);
  }
  return v;
}

/** An http(s) origin (path-less URL); trailing slashes dropped. */
function publicUrl(env: NodeJS.ProcessEnv, name: string): string | null {
  const v = str(env, name);
  if (v === null) return null;
  let u: URL;
  try { u = new URL(v); } catch { throw new ConfigError(name, `expected a URL such as https://flags.example.com, got "${v}"`); }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.search || u.hash || (u.pathname !== '/' && u.pathname !== '')) {
    throw new ConfigError(name, `expected an http(s) origin without path or query, got "${v}"`);
  }
  return u.origin;
}

/**
 * One control-plane address: `host:port`, `[ipv6]:port`, optionally behind grpc-js's `dns:`
 * scheme (`dns:host:port`, `dns:///host:port`, `dns://resolver/host:port`).
 */
const CONTROL_PLANE_ADDRESS = /^(?:dns:(?:\/\/[^/\s,]*\/)?)?(?:\[[0-9A-Fa-f:.]+\]|[^\s:,[\]/]+):\d{1,5}$/;

/**
 * The addresses in a SWITCHYARD_CONTROL_PLANE value, in the order given (comma-separated,
 * blanks dropped). Each is a gRPC target: a name resolving to several addresses is left to
 * grpc-js's DNS resolver (pick_first over them).
 */
export function controlPlaneAddresses(value: string): string[] {
  return value.split(',').map((a) => a.trim()).filter((a) => a !== '');
}

/**
 * Reads and validates the configuration from `env` (default `process.env`).
 * @throws ConfigError naming the first invalid variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const logLevel = (str(env, 'SWITCHYARD_LOG_LEVEL') ?? 'info').toLowerCase();
  if (!LOG_LEVELS.has(logLevel)) throw new ConfigError('SWITCHYARD_LOG_LEVEL', `expected one of ${[...LOG_LEVELS].join(', ')}`);
  const databaseUrl = str(env, 'DATABASE_URL');
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'expected a postgres:// or postgresql:// URL');
  }
  const controlPlane = str(env, 'SWITCHYARD_CONTROL_PLANE') ?? '127.0.0.1:50051';
  for (const a of controlPlaneAddresses(controlPlane)) {
    if (!CONTROL_PLANE_ADDRESS.test(a)) throw new ConfigError('SWITCHYARD_CONTROL_PLANE', `expected host:port[,host:port…], got "${a}"`);
  }
  if (controlPlaneAddresses(controlPlane).length === 0) throw new ConfigError('SWITCHYARD_CONTROL_PLANE', 'expected host:port[,host:port…]');
  const cfg: Config = {
    databaseUrl,
    embeddedPostgresPort: int(env, 'SWITCHYARD_EMBEDDED_PG_PORT', 54329, 1, 65535),
    dataDir: path.resolve(str(env, 'SWITCHYARD_DATA_DIR') ?? './.switchyard'),
    host: str(env, 'SWITCHYARD_HOST') ?? '127.0.0.1',
    apiPort: int(env, 'SWITCHYARD_API_PORT', 8000, 0, 65535),
    grpcPort: int(env, 'SWITCHYARD_GRPC_PORT', 50051, 0, 65535),
    flagsPort: int(env, 'SWITCHYARD_FLAGS_PORT', 8010, 0, 65535),
    probePort: str(env, 'SWITCHYARD_PROBE_PORT') === null ? null : int(env, 'SWITCHYARD_PROBE_PORT', 0, 0, 65535),
    controlPlane,
    drainSeconds: int(env, 'SWITCHYARD_DRAIN_SECONDS', 5, 0, 3_600),
    shutdownTimeoutSeconds: int(env, 'SWITCHYARD_SHUTDOWN_TIMEOUT_SECONDS', 30, 1, 86_400),
    clusterToken: str(env, 'SWITCHYARD_CLUSTER_TOKEN'),
    apiUrl: publicUrl(env, 'SWITCHYARD_API_URL'),
    evalThreads: int(env, 'SWITCHYARD_EVAL_THREADS', 0, 0, 256),
    ioThreads: int(env, 'SWITCHYARD_IO_THREADS', os.availableParallelism(), 1, 256),
    lmdbMapSize: int(env, 'SWITCHYARD_LMDB_MAP_SIZE', 16 * 1024 ** 3, 64 * 1024 ** 2, 2 ** 50),
    memoryReleaseQuietMs: int(env, 'SWITCHYARD_MEMORY_RELEASE_QUIET_MS', 1_000, 0, 3_600_000),
    snapshotImage: (env.SWITCHYARD_SNAPSHOT_IMAGE ?? 'true').toLowerCase() !== 'false',
    ioThreadYoungGenMb: int(env, 'SWITCHYARD_IO_THREAD_YOUNG_GEN_MB', 0, 0, 1024),
    evalTaskTimeoutMs: int(env, 'SWITCHYARD_EVAL_TASK_TIMEOUT_MS', 2_000, 1, 600_000),
    evalBudgetMs: int(env, 'SWITCHYARD_EVAL_BUDGET_MS', DEFAULT_EVAL_BUDGET_MS, 1, 600_000),
    projectEvalSharePercent: int(env, 'SWITCHYARD_PROJECT_EVAL_SHARE_PERCENT', 50, 1, 100),
    scanThreads: int(env, 'SWITCHYARD_SCAN_THREADS', Math.min(4, Math.max(1, Math.floor(os.availableParallelism() / 2))), 1, 256),
    scanProjectConcurrency: int(env, 'SWITCHYARD_SCAN_PROJECT_CONCURRENCY', 2, 1, 1024),
    scanTimeoutMs: int(env, 'SWITCHYARD_SCAN_TIMEOUT_MS', 30_000, 1, 3_600_000),
    cohortCalculationTimeoutMs: int(env, 'SWITCHYARD_COHORT_CALCULATION_TIMEOUT_MS', 300_000, 1, 86_400_000),
    maxFlagsBodyBytes: int(env, 'SWITCHYARD_MAX_FLAGS_BODY_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxCaptureBodyBytes: int(env, 'SWITCHYARD_MAX_CAPTURE_BODY_BYTES', 20 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    definitionsRatePerMinute: int(env, 'SWITCHYARD_DEFINITIONS_RATE_PER_MINUTE', 600, 0, 1_000_000_000),
    apiBurstRatePerMinute: int(env, 'SWITCHYARD_API_BURST_RATE_PER_MINUTE', 480, 0, 1_000_000_000),
    apiSustainedRatePerHour: int(env, 'SWITCHYARD_API_SUSTAINED_RATE_PER_HOUR', 4_800, 0, 1_000_000_000),
    timeseriesWorker: (env.SWITCHYARD_TIMESERIES_WORKER ?? 'true').toLowerCase() !== 'false',
    geoipDbPath: str(env, 'SWITCHYARD_GEOIP_DB') ?? defaultGeoipDbPath(),
    bootstrapPersonalApiKey: prefixed(env, 'SWITCHYARD_BOOTSTRAP_PERSONAL_API_KEY', 'phx_'),
    bootstrapProjectApiKey: prefixed(env, 'SWITCHYARD_BOOTSTRAP_PROJECT_API_KEY', 'phc_'),
    maxApiBodyBytes: int(env, 'SWITCHYARD_MAX_API_BODY_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxPublicBodyBytes: int(env, 'SWITCHYARD_MAX_PUBLIC_BODY_BYTES', 20 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxOutboxBytes: int(env, 'SWITCHYARD_MAX_OUTBOX_BYTES', 1024 * 1024 * 1024, 1024 * 1024, MAX_OUTBOX_BYTES),
    keepMovedAside: int(env, 'SWITCHYARD_KEEP_MOVED_ASIDE', 3, 0, 1_000),
    eventsRetentionDays: str(env, 'SWITCHYARD_EVENTS_RETENTION_DAYS') === null ? null : int(env, 'SWITCHYARD_EVENTS_RETENTION_DAYS', 0, 1, 36_500),
    queryTimeoutMs: int(env, 'SWITCHYARD_QUERY_TIMEOUT_MS', 120_000, 0, 86_400_000),
    projectTokenOverlapSeconds: int(env, 'SWITCHYARD_PROJECT_TOKEN_OVERLAP_SECONDS', 300, 0, 30 * 86_400),
    queryDeadlineMs: int(env, 'SWITCHYARD_QUERY_DEADLINE_MS', 120_000, 0, 86_400_000),
    queryConcurrencyPerProject: int(env, 'SWITCHYARD_QUERY_CONCURRENCY_PER_PROJECT', 3, 0, 10_000),
    queryPoolSize: int(env, 'SWITCHYARD_QUERY_POOL_SIZE', 6, 1, 1_000),
    authFailuresPerMinute: int(env, 'SWITCHYARD_AUTH_FAILURES_PER_MINUTE', 60, 0, 1_000_000_000),
    apiHeadersTimeoutMs: int(env, 'SWITCHYARD_API_HEADERS_TIMEOUT_MS', 10_000, 1, 3_600_000),
    apiRequestTimeoutMs: int(env, 'SWITCHYARD_API_REQUEST_TIMEOUT_MS', 30_000, 1, 3_600_000),
    apiKeepAliveTimeoutMs: int(env, 'SWITCHYARD_API_KEEP_ALIVE_TIMEOUT_MS', 65_000, 1, 3_600_000),
    apiMaxConnections: int(env, 'SWITCHYARD_API_MAX_CONNECTIONS', 1_024, 0, 1_000_000),
    logLevel,
  };
  // Node refuses a headers timeout above the request timeout (the headers are part of the request).
  if (cfg.apiHeadersTimeoutMs > cfg.apiRequestTimeoutMs) {
    throw new ConfigError('SWITCHYARD_API_HEADERS_TIMEOUT_MS', `must not exceed SWITCHYARD_API_REQUEST_TIMEOUT_MS (${cfg.apiRequestTimeoutMs})`);
  }
  return Object.freeze(cfg);
}

/**
 * A configuration for tests: ports 0 (the OS picks free ones), a given data dir, quiet logs, no
 * snapshot images (tests of the image turn them on). `overrides` replace individual fields.
 */
export function testConfig(overrides: Partial<Config> = {}): Config {
  const base = loadConfig({ SWITCHYARD_LOG_LEVEL: 'silent' });
  return Object.freeze({ ...base, apiPort: 0, grpcPort: 0, flagsPort: 0, ioThreads: 1, clusterToken: 'test-cluster-token', snapshotImage: false, ...overrides });
}
