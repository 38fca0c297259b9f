/**
 * The control plane: migrations (under an advisory lock), first-start bootstrap, the job queue
 * (pg-boss, started when used: experiment timeseries and scheduled changes), the
 * management API over HTTP (its queries on a pool of their own, query/gate.ts), the gRPC service the evaluation nodes watch and report to, a
 * periodic quota refresh (a new month lifts limits) and, with SWITCHYARD_EVENTS_RETENTION_DAYS,
 * the hourly drop of expired event partitions. Person scans (blast radius, cohort calculation, …)
 * run in the scan pool's worker threads (scan-pool/).
 *
 * Several control planes may run on one database: they meet only in Postgres (the change log
 * with LISTEN/NOTIFY, pg-boss's job tables). `DATABASE_URL` may name several hosts with
 * `target_session_attrs=read-write` (db/connect.ts) so a promoted replica is found again.
 * Stopping: drain() turns `/_ready` to 503 `draining` while everything keeps serving; close()
 * then lets HTTP requests in flight finish, ends the Watch streams (nodes move to another control
 * plane at once), stops the job queue and the pools.
 */
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { APPLICATION_NAME, connect, type Sql } from './db/connect.js';
import { QueryGate } from './query/gate.js';
import { personalApiKeyLookupMetrics } from './keys/store.js';
import { migrate } from './db/migrate.js';
import { bootstrap, type BootstrapResult } from './bootstrap.js';
import { startHttpServer, type RunningHttp } from './http/server.js';
import { allRoutes } from './http/app.js';
import { startGrpcServer, type GrpcServer } from './grpc/server.js';
import { refreshAllQuotas } from './quota/service.js';
import { JobQueue } from './jobs/queue.js';
import { timeseriesWorker } from './experiments/timeseries/queue.js';
import { scheduledChangesWorker } from './scheduled-changes/queue.js';
import { dropExpiredEventPartitions } from './ingestion/event-partitions.js';
import { ScanPool, registerScanPool } from './scan-pool/index.js';

/** How often limits are re-evaluated against the current month, in milliseconds. */
export const QUOTA_REFRESH_INTERVAL_MS = 60_000;
/** How often expired event partitions are dropped (SWITCHYARD_EVENTS_RETENTION_DAYS set), in milliseconds. */
export const EVENTS_RETENTION_INTERVAL_MS = 60 * 60 * 1000;

/** `application_name` of the query pool's connections (pg_stat_activity tells them from management's). */
export const QUERY_APPLICATION_NAME = `${APPLICATION_NAME}-query`;

/** A running control plane. */
export interface ControlPlane {
  sql: Sql;
  /** Where queries run: the query pool (application_name `switchyard-query`), the per-project cap, deadlines. */
  queries: QueryGate;
  http: RunningHttp;
  /** null when no cluster token is configured (management API only). */
  grpc: GrpcServer | null;
  bootstrap: BootstrapResult;
  /** Starts draining: `/_ready` answers 503 `draining`; everything else keeps serving until close(). */
  drain(): void;
  close(): Promise<void>;
}

/**
 * Starts the control plane on `databaseUrl`. Ports 0 pick free ones (tests). gRPC starts only
 * with a cluster token: a control plane never accepts anonymous nodes.
 */
export async function startControlPlane(config: Config, log: Logger, databaseUrl: string): Promise<ControlPlane> {
  const sql = connect(databaseUrl);
  // Queries (POST /query/, insights' results) run on a pool of their own: however many run, the
  // management API's pool stays free for flags and keys.
  const querySql = connect(databaseUrl, { max: config.queryPoolSize, applicationName: QUERY_APPLICATION_NAME });
  const queries = new QueryGate(querySql, sql, {
    deadlineMs: config.queryDeadlineMs, statementTimeoutMs: config.queryTimeoutMs, perProject: config.queryConcurrencyPerProject,
  });
  const started: { close(): Promise<void> }[] = [];
  try {
    const applied = await migrate(sql);
    if (applied.length > 0) log.info({ migrations: applied }, 'applied migrations');
    const boot = await bootstrap(sql, config);
    const jobs = new JobQueue(databaseUrl, sql, log.child({ component: 'jobs' }), [timeseriesWorker(sql, config.timeseriesWorker), scheduledChangesWorker(sql)]);
    started.push(jobs);
    await jobs.resume();
    const scans = new ScanPool({
      threads: config.scanThreads, projectConcurrency: config.scanProjectConcurrency,
      requestTimeoutMs: config.scanTimeoutMs, backgroundTimeoutMs: config.cohortCalculationTimeoutMs,
    });
    started.push(scans);
    registerScanPool(sql, scans);
    const deps = { sql, config, log: log.child({ component: 'control-plane' }), jobs };
    const grpc = config.clusterToken === null ? null : await startGrpcServer({ sql, config, log, databaseUrl });
    if (grpc) started.push(grpc);
    else log.warn('SWITCHYARD_CLUSTER_TOKEN is not set: gRPC is off and no evaluation node can connect');
    let draining = false;
    const http = await startHttpServer(deps, allRoutes(deps, queries), {
      ready: async () => { await sql`SELECT 1`; return true; },
      draining: () => draining,
      metrics: async () => {
        const [row] = await sql<{ r: number | null }[]>`SELECT max(revision) AS r FROM change_log`;
        const [dead] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM dead_letter_events`;
        return '# HELP switchyard_change_log_revision Highest committed change-log revision.\n'
          + '# TYPE switchyard_change_log_revision gauge\n'
          + `switchyard_change_log_revision ${row?.r ?? 0}\n`
          + '# HELP switchyard_ingest_dead_letter_events Captured events set aside in dead_letter_events because they can never be ingested.\n'
          + '# TYPE switchyard_ingest_dead_letter_events gauge\n'
          + `switchyard_ingest_dead_letter_events ${dead?.n ?? 0}\n`
          + queries.metrics() + personalApiKeyLookupMetrics();
      },
    }, config.apiPort);
    const quotaTimer = setInterval(() => {
      refreshAllQuotas(sql).catch((e) => log.error({ err: e }, 'quota refresh failed'));
    }, QUOTA_REFRESH_INTERVAL_MS);
    quotaTimer.unref();
    const dropExpired = (): void => {
      dropExpiredEventPartitions(sql, config.eventsRetentionDays).then(
        (dropped) => { if (dropped.length > 0) log.info({ partitions: dropped }, 'dropped expired event partitions'); },
        (e: unknown) => log.error({ err: e }, 'events retention failed'),
      );
    };
    const retentionTimer = config.eventsRetentionDays === null ? null : setInterval(dropExpired, EVENTS_RETENTION_INTERVAL_MS);
    retentionTimer?.unref();
    if (retentionTimer) dropExpired();
    let closing: Promise<void> | null = null;
    return {
      sql, queries, http, grpc, bootstrap: boot,
      drain() { draining = true; },
      close() {
        closing ??= (async () => {
          clearInterval(quotaTimer);
          if (retentionTimer) clearInterval(retentionTimer);
          await http.close();
          await grpc?.close();
          await jobs.close();
          await querySql.end({ timeout: 5 });
          await scans.close();
          await sql.end({ timeout: 5 });
        })();
        return closing;
      },
    };
  } catch (e) {
    for (const s of started) await s.close().catch(() => {});
    await querySql.end({ timeout: 1 }).catch(() => {});
    await sql.end({ timeout: 1 }).catch(() => {});
    throw e;
  }
}
