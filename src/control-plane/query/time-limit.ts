/**
 * The query endpoint's time limit (config `queryTimeoutMs`, SWITCHYARD_QUERY_TIMEOUT_MS): Postgres'
 * `statement_timeout` set for one transaction, and its cancellation answered as PostHog's query
 * endpoint answers its datastore's time limit (DatastoreQueryTimeOut: 504).
 */
import type { Tx } from '../db/connect.js';
import { errors } from '../../errors.js';

/** Postgres' SQLSTATE for a statement cancelled by statement_timeout (or a cancel request). */
const QUERY_CANCELED = '57014';

/** Bounds every later statement of `tx` to `ms` milliseconds (0: no limit). */
export async function limitStatements(tx: Tx, ms: number): Promise<void> {
  if (ms > 0) await tx`SELECT set_config('statement_timeout', ${String(ms)}, true)`;
}

/** `err` as the client sees it: a cancelled statement becomes ApiError 504; anything else is unchanged. */
export function asQueryTimeout(err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code === QUERY_CANCELED ? errors.queryTimeout() : err;
}
