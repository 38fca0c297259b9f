/**
 * The query endpoint's time limit (config `queryTimeoutMs`, SWITCHYARD_QUERY_TIMEOUT_MS): Postgres'
 * `statement_timeout` set for one transaction, and its cancellation answered as PostHog's query
 * endpoint answers its datastore's time limit (DatastoreQueryTimeOut: 504).
 */
import type { Sql, Tx } from '../db/connect.js';
import { errors } from '../../errors.js';

/** Postgres' SQLSTATE for a statement cancelled by statement_timeout (or a cancel request). */
const QUERY_CANCELED = '57014';

/**
 * Runs `work` in a transaction of its own in which every statement may run at most `ms`
 * milliseconds (0: no limit). Resolves with what `work` resolves with.
 * @throws ApiError 504 (`errors.queryTimeout`) when a statement ran past the limit; any other
 * error as it came (the transaction is rolled back either way).
 */
export function limitedTransaction<T>(sql: Sql, ms: number, work: (tx: Tx) => Promise<T>): Promise<T> {
  const run = sql.begin(async (tx) => {
    if (ms > 0) await tx`SELECT set_config('statement_timeout', ${String(ms)}, true)`;
    return work(tx);
  }) as Promise<T>;
  return run.catch((err: unknown) => {
    throw (err as { code?: unknown } | null)?.code === QUERY_CANCELED ? errors.queryTimeout() : err;
  });
}
