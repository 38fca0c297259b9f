/**
 * Postgres connections through the `postgres` package. One pool per process (`Sql`); `sql.begin`
 * gives a transaction handle (`Tx`), which TypeScript does not accept where an `Sql` is asked for:
 * a function that runs statements inside or outside a transaction takes a {@link Handle}.
 *
 * Failover (docs/operations.md "Stopping and upgrading"): the URL may name several hosts,
 * `postgres://u:p@db1:5432,db2:5432/switchyard?target_session_attrs=read-write`; postgres.js
 * then tries them in turn and keeps only a connection to a server that accepts writes, so when
 * the primary dies and a replica is promoted every pool (management, queries, LISTEN, pg-boss:
 * all made here) reconnects to it by itself. Statements sent while no server accepts writes fail
 * and are the caller's to retry. Reconnecting is bounded by {@link RECONNECT_BACKOFF_CAP_S} and
 * {@link CONNECT_TIMEOUT_S} so a pool finds the promoted server within seconds of its promotion.
 */
import postgres from 'postgres';

/** A connection pool or transaction handle. */
export type Sql = postgres.Sql<Record<string, never>>;
/** A transaction handle (inside `sql.begin`). */
export type Tx = postgres.TransactionSql<Record<string, never>>;
/** Either: what a function takes that runs statements inside or outside a transaction. */
export type Handle = Sql | Tx;

/**
 * Longest wait between two attempts of a connection that keeps failing, in seconds (postgres.js's
 * default grows to 20 s, which would hide a promoted replica for that long).
 */
export const RECONNECT_BACKOFF_CAP_S = 1;
/** First wait after a failed connection, in seconds; doubled per failure up to the cap. */
export const RECONNECT_BACKOFF_BASE_S = 0.05;
/** Longest a connection attempt (TCP and start-up) may take before the next host is tried, in seconds. */
export const CONNECT_TIMEOUT_S = 5;

/** Wait before reconnect attempt `retries` (1-based), in seconds: min(cap, base × 2^(retries−1)), halved at random (jitter). */
export function reconnectBackoffS(retries: number): number {
  return Math.min(RECONNECT_BACKOFF_CAP_S, RECONNECT_BACKOFF_BASE_S * 2 ** Math.max(0, Math.min(retries - 1, 20))) * (0.5 + Math.random() / 2);
}

/** `application_name` of the control plane's connections (pg_stat_activity shows it). */
export const APPLICATION_NAME = 'switchyard';

/**
 * Opens a pool to `url` of at most `max` connections (default 20), named `applicationName` in
 * pg_stat_activity (default {@link APPLICATION_NAME}). bigint columns are returned as JS numbers
 * when safe (ids, revisions stay below 2^53 in practice) and timestamps as Date objects.
 * `url` may be multi-host (see the module doc). `onnotify` and `onclose` are postgres.js's
 * (grpc/listen.ts uses them for a LISTEN connection of its own).
 */
export function connect(url: string, opts: {
  max?: number; applicationName?: string;
  /** postgres.js's `onnotify`: a notification on a LISTENing connection of this pool. */
  onnotify?: (channel: string, payload: string) => void;
  /** postgres.js's `onclose`: a connection of this pool closed. */
  onclose?: () => void;
} = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 20,
    ...(opts.onnotify ? { onnotify: opts.onnotify } : {}),
    ...(opts.onclose ? { onclose: opts.onclose } : {}),
    backoff: reconnectBackoffS,
    connect_timeout: CONNECT_TIMEOUT_S,
    onnotice: () => {},
    types: {
      bigint: { to: 20, from: [20], serialize: (x: unknown) => String(x), parse: (x: string) => Number(x) },
    },
    connection: { application_name: opts.applicationName ?? APPLICATION_NAME },
  }) as unknown as Sql;
}
