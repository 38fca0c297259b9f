/**
 * One transaction of a query under its {@link QueryBudget}: Postgres' `statement_timeout` (the
 * per-statement limit, SWITCHYARD_QUERY_TIMEOUT_MS, shortened to what is left of the deadline),
 * and, once the budget's signal is aborted (deadline, client gone), the running statement
 * cancelled with `pg_cancel_backend` from a connection outside the query pool and no further
 * statement sent. A cancelled or timed-out statement answers as PostHog's query endpoint answers
 * its datastore's time limit (DatastoreQueryTimeOut: 504).
 */
import type { Sql, Tx } from '../db/connect.js';
import { errors } from '../../errors.js';
import { type QueryBudget, QueryStopped, statementLimit, statementTimeoutNow, stopError, stoppable } from './budget.js';

/** Postgres' SQLSTATE for a statement cancelled by statement_timeout (or a cancel request). */
const QUERY_CANCELED = '57014';
/**
 * Interval between cancel requests while a stopped transaction has not settled, in ms. Postgres
 * drops a cancel that arrives between two statements (the backend is reading the next one), so
 * one request can miss the statement sent just after it; the next catches it.
 */
const CANCEL_RETRY_MS = 100;

/**
 * Runs `work` in a transaction of its own bounded by `limit`: a budget, or a per-statement limit
 * in ms (0: none). Resolves with what `work` resolves with; the transaction is rolled back on
 * any error.
 * @throws ApiError 504 (`errors.queryTimeout`) when a statement ran past its limit or the
 *   deadline passed; 499 when the client left (budget.ts `stopError`); any other error as it came.
 */
export function limitedTransaction<T>(sql: Sql, limit: number | QueryBudget, work: (tx: Tx) => Promise<T>): Promise<T> {
  const budget = typeof limit === 'number' ? statementLimit(limit) : limit;
  if (budget.signal.aborted) return Promise.reject(stopError(budget.signal) ?? new QueryStopped(String(budget.signal.reason)));
  let settled = false;
  let markSettled!: () => void;
  const whenSettled = new Promise<void>((r) => { markSettled = r; });
  const settle = (): void => { settled = true; markSettled(); };
  let cancelling: Promise<void> | null = null;
  let pid = 0;
  const cancel = (): void => {
    cancelling ??= (async () => {
      while (!settled) {
        await budget.cancelBackend(pid).catch(() => {});
        await new Promise<void>((r) => {
          const retry = setTimeout(r, CANCEL_RETRY_MS);
          void whenSettled.then(() => { clearTimeout(retry); r(); });
        });
      }
    })();
  };
  const run = sql.begin(async (tx) => {
    const ms = statementTimeoutNow(budget);
    const [row] = await tx<{ pid: number }[]>`SELECT pg_backend_pid() AS pid, set_config('statement_timeout', ${String(ms)}, true)`;
    pid = row!.pid;
    budget.signal.addEventListener('abort', cancel, { once: true });
    try {
      if (budget.signal.aborted) cancel();
      return await work(stoppable(tx, budget.signal));
    } finally {
      settle();
      budget.signal.removeEventListener('abort', cancel);
    }
  }) as Promise<T>;
  const answered = run.catch((err: unknown) => {
    settle();
    const stopped = stopError(budget.signal);
    if (stopped) throw stopped;
    throw (err as { code?: unknown } | null)?.code === QUERY_CANCELED ? errors.queryTimeout() : err;
  });
  budget.track(answered.then(() => cancelling, () => cancelling));
  return answered;
}
