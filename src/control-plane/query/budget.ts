/**
 * What bounds one query (a `POST /query/`, one insight's results, one experiment analysis): a
 * per-statement time limit, a total deadline, and a signal that stops it when the deadline passes
 * or the client leaves. The statements of a stopped query are cancelled in Postgres
 * (./time-limit.ts), so no work outlives the request that asked for it.
 */
import { ApiError, errors } from '../../errors.js';
import type { Handle } from '../db/connect.js';

/** Why a query was stopped (the reason of its budget's aborted signal). */
export const STOP = Object.freeze({
  /** Its total deadline passed (answers 504). */
  deadline: 'deadline',
  /** The client closed the connection before the answer (nobody reads the answer). */
  clientClosed: 'client_closed',
  /** Another part of the same query failed; the rest is cancelled and that failure answers. */
  abandoned: 'abandoned',
});

/** The bounds of one query. */
export interface QueryBudget {
  /** Longest one statement may run, in ms (Postgres `statement_timeout`); 0: no limit. */
  readonly statementTimeoutMs: number;
  /** Instant (epoch ms) past which the query stops; Infinity: no deadline. */
  readonly deadlineAt: number;
  /** Aborted, with a {@link STOP} reason, when the query must stop. */
  readonly signal: AbortSignal;
  /** Cancels the statement backend `pid` is running, from a connection outside the query pool. */
  cancelBackend(pid: number): Promise<void>;
  /** Hands over a transaction of the query, so the query counts as running until it settles. */
  track(work: Promise<unknown>): void;
}

const NEVER = new AbortController().signal;

/** A budget of only a per-statement limit of `ms` (0: none): no deadline, never stopped. */
export function statementLimit(ms: number): QueryBudget {
  return { statementTimeoutMs: ms, deadlineAt: Infinity, signal: NEVER, cancelBackend: async () => {}, track: () => {} };
}

/**
 * The `statement_timeout` a transaction starting now gets: the per-statement limit, shortened to
 * what is left of the deadline (at least 1 ms), so Postgres stops the work even if the process
 * cannot. 0: no limit.
 */
export function statementTimeoutNow(budget: QueryBudget, now: number = Date.now()): number {
  const left = budget.deadlineAt === Infinity ? Infinity : Math.max(1, Math.ceil(budget.deadlineAt - now));
  const limit = Math.min(budget.statementTimeoutMs > 0 ? budget.statementTimeoutMs : Infinity, left);
  return limit === Infinity ? 0 : limit;
}

/** Thrown by a stopped query's handle instead of sending another statement. */
export class QueryStopped extends Error {
  constructor(readonly reason: string) {
    super(`query stopped: ${reason}`);
    this.name = 'QueryStopped';
  }
}

/**
 * `handle` refusing to build or send any statement once `signal` is aborted (a statement already
 * sent is cancelled by ./time-limit.ts). Fragments and identifiers go through the same call, so a
 * query building its next statement stops there. @throws QueryStopped.
 */
export function stoppable<H extends Handle>(handle: H, signal: AbortSignal): H {
  if (signal === NEVER) return handle;
  return new Proxy(handle, {
    apply(target, self, args) {
      if (signal.aborted) throw new QueryStopped(String(signal.reason));
      return Reflect.apply(target as unknown as (...a: unknown[]) => unknown, self, args);
    },
  });
}

/**
 * The answer of a query stopped by `signal`: 504 DatastoreQueryTimeOut past the deadline; 499 when
 * the client left (never sent: the connection is gone; nginx's "client closed request", so the
 * log shows it at info); null when it was not stopped, or for a part abandoned because another
 * failed (that failure answers).
 */
export function stopError(signal: AbortSignal): ApiError | null {
  if (!signal.aborted) return null;
  if (signal.reason === STOP.deadline) return errors.queryTimeout();
  if (signal.reason === STOP.clientClosed) {
    return new ApiError(499, 'invalid_request', 'client_closed_request', 'The client closed the connection before the query finished.');
  }
  return null;
}
