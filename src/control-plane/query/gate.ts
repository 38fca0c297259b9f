/**
 * Where every query of the control plane runs (`POST /query/`, insights' results on dashboards
 * and insights): its own Postgres pool, apart from the management API's, so flag and key
 * management never wait behind queries; at most `perProject` queries of one project at once
 * (429 `throttled` beyond, as PostHog throttles concurrent API queries per team); a total
 * deadline per query; and cancellation when the client leaves. Each query gets a
 * {@link QueryBudget} its transactions run under (./time-limit.ts).
 */
import { errors } from '../../errors.js';
import type { Sql } from '../db/connect.js';
import { type QueryBudget, STOP, stopError, stoppable } from './budget.js';

/** Limits of the queries run through a {@link QueryGate}; units in the names, 0 turns a limit off. */
export interface QueryLimits {
  /** Total time of one query, in ms (SWITCHYARD_QUERY_DEADLINE_MS). */
  deadlineMs: number;
  /** Time of one statement, in ms (SWITCHYARD_QUERY_TIMEOUT_MS). */
  statementTimeoutMs: number;
  /** Queries of one project at once (SWITCHYARD_QUERY_CONCURRENCY_PER_PROJECT). */
  perProject: number;
}

/** `Retry-After` of a query refused for concurrency, in seconds: queries end within their deadline, typically seconds. */
const CONCURRENCY_RETRY_AFTER_S = 1;

/** Runs queries on the query pool within their limits. */
export class QueryGate {
  private readonly running = new Map<number, number>();
  private refusedCount = 0;
  private stoppedCount = { deadline: 0, client_closed: 0 };

  /**
   * @param sql the query pool (its connections are what queries may hold at once).
   * @param canceller a pool outside it, for `pg_cancel_backend` (the management pool).
   */
  constructor(readonly sql: Sql, private readonly canceller: Sql, private readonly limits: QueryLimits) {}

  /**
   * Runs one query of `projectId`: `work` gets the query pool (refusing statements once the
   * query is stopped) and the query's budget, which its transactions must run under. `signal`
   * aborts when the client leaves. The project's slot is held until every transaction of the
   * query has settled. @returns what `work` resolves with.
   * @throws ApiError 429 `throttled` when the project already runs `perProject` queries; 504
   *   past the deadline; 499 when the client left; else whatever `work` throws.
   */
  async run<T>(projectId: number, signal: AbortSignal | undefined, work: (sql: Sql, budget: QueryBudget) => Promise<T>): Promise<T> {
    const n = this.running.get(projectId) ?? 0;
    if (this.limits.perProject > 0 && n >= this.limits.perProject) {
      this.refusedCount++;
      throw errors.throttled(CONCURRENCY_RETRY_AFTER_S);
    }
    this.running.set(projectId, n + 1);
    const stop = new AbortController();
    const { deadlineMs } = this.limits;
    const timer = deadlineMs > 0 ? setTimeout(() => stop.abort(STOP.deadline), deadlineMs) : null;
    const onClientClosed = (): void => stop.abort(STOP.clientClosed);
    signal?.addEventListener('abort', onClientClosed, { once: true });
    if (signal?.aborted) onClientClosed();
    const transactions: Promise<unknown>[] = [];
    const budget: QueryBudget = {
      statementTimeoutMs: this.limits.statementTimeoutMs,
      deadlineAt: deadlineMs > 0 ? Date.now() + deadlineMs : Infinity,
      signal: stop.signal,
      cancelBackend: async (pid) => { await this.canceller`SELECT pg_cancel_backend(${pid}) FROM pg_stat_activity WHERE pid = ${pid} AND state = 'active'`; },
      track: (p) => { transactions.push(p); },
    };
    try {
      return await work(stoppable(this.sql, stop.signal), budget);
    } catch (e) {
      const stopped = stopError(stop.signal);
      if (stopped) {
        if (stop.signal.reason === STOP.deadline) this.stoppedCount.deadline++;
        else this.stoppedCount.client_closed++;
        throw stopped;
      }
      stop.abort(STOP.abandoned); // the other transactions of the query (an analysis runs several) stop too
      throw e;
    } finally {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onClientClosed);
      await Promise.allSettled(transactions);
      const left = (this.running.get(projectId) ?? 1) - 1;
      if (left > 0) this.running.set(projectId, left); else this.running.delete(projectId);
    }
  }

  /** Queries running now, over every project. */
  runningCount(): number {
    let total = 0;
    for (const n of this.running.values()) total += n;
    return total;
  }

  /** Prometheus text of the gate's counters and gauge. */
  metrics(): string {
    return '# HELP switchyard_queries_running Queries (POST /query/, insights) running now.\n'
      + '# TYPE switchyard_queries_running gauge\n'
      + `switchyard_queries_running ${this.runningCount()}\n`
      + '# HELP switchyard_queries_throttled_total Queries refused with 429 because their project ran its most concurrent queries.\n'
      + '# TYPE switchyard_queries_throttled_total counter\n'
      + `switchyard_queries_throttled_total ${this.refusedCount}\n`
      + '# HELP switchyard_queries_stopped_total Queries stopped before they finished, by reason (deadline: answered 504; client_closed: the client left).\n'
      + '# TYPE switchyard_queries_stopped_total counter\n'
      + `switchyard_queries_stopped_total{reason="deadline"} ${this.stoppedCount.deadline}\n`
      + `switchyard_queries_stopped_total{reason="client_closed"} ${this.stoppedCount.client_closed}\n`;
  }
}
