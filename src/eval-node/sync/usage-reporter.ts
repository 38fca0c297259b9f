/**
 * Ships the node's /flags request counts to the control plane (gRPC `ReportUsage`) so the
 * organization quota (spec/API.md §7–8) is enforced cluster-wide: every
 * {@link USAGE_REPORT_INTERVAL_MS} the counts gathered by the HTTP layer (`take()`, e.g.
 * `FlagUsage.takeUsage`) are added to what is still unsent and reported for the current UTC
 * month. A failed report keeps its counts for the next tick, so an outage delays counts but
 * does not drop them (at most {@link MAX_PENDING_ORGANIZATIONS} organizations are held);
 * `close()` makes one last attempt within {@link FINAL_REPORT_DEADLINE_MS}. Reports go to the
 * current control plane (control-planes.ts); one that is unreachable or does not answer in time
 * is reported failed, so the next report goes to the next one.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log.js';
import { clusterTokenMetadata } from '../../contract/metadata.js';
import { ClientsByAddress, ControlPlanes } from './control-planes.js';

/** Period between reports, in milliseconds. */
export const USAGE_REPORT_INTERVAL_MS = 10_000;
/** Deadline of each report call, in milliseconds. */
export const USAGE_REPORT_DEADLINE_MS = 5_000;
/** Deadline of the report sent on close, in milliseconds. */
export const FINAL_REPORT_DEADLINE_MS = 2_000;
/** Organizations kept while reports fail (beyond that, the smallest counts are dropped). */
export const MAX_PENDING_ORGANIZATIONS = 100_000;

/** Options of {@link startUsageReporter}. */
export interface UsageReporterOptions {
  /** A SWITCHYARD_CONTROL_PLANE value, or the node's shared {@link ControlPlanes}. */
  controlPlane: string | ControlPlanes;
  clusterToken: string;
  nodeId: string;
  /** Counts since the previous call: organization id → /flags requests. */
  take(): Map<number, number>;
  /** Report period override, in ms (tests). */
  intervalMs?: number;
}

/** A running reporter. */
export interface UsageReporter {
  /** Reports now (also what each tick does); resolves true when the control plane acknowledged. */
  flush(deadlineMs?: number): Promise<boolean>;
  /** Counts not yet acknowledged (organization id → requests). */
  pending(): ReadonlyMap<number, number>;
  /** Stops the timer, makes a last report, closes the channel. */
  close(): Promise<void>;
}

/** Current accounting period: the UTC calendar month, `YYYY-MM`. */
export function usagePeriodOf(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/** Starts reporting in the background. */
export function startUsageReporter(opts: UsageReporterOptions, parentLog: Logger): UsageReporter {
  const log = parentLog.child({ component: 'usage-reporter' });
  const clients = new ClientsByAddress(typeof opts.controlPlane === 'string' ? new ControlPlanes(opts.controlPlane) : opts.controlPlane);
  type ReportUsage = (req: unknown, md: grpc.Metadata, o: grpc.CallOptions, cb: (err: grpc.ServiceError | null) => void) => void;
  const md = clusterTokenMetadata(opts.clusterToken);
  let pending = new Map<number, number>();
  let inFlight: Promise<boolean> | null = null;
  let failures = 0;

  const gather = (): void => {
    for (const [org, n] of opts.take()) pending.set(org, (pending.get(org) ?? 0) + n);
    if (pending.size > MAX_PENDING_ORGANIZATIONS) {
      const kept = [...pending].sort((a, b) => b[1] - a[1]).slice(0, MAX_PENDING_ORGANIZATIONS);
      log.warn({ dropped: pending.size - kept.length }, 'usage backlog too large; dropping the smallest counts');
      pending = new Map(kept);
    }
  };

  const flush = (deadlineMs = USAGE_REPORT_DEADLINE_MS): Promise<boolean> => {
    if (inFlight) return inFlight;
    gather();
    if (pending.size === 0) return Promise.resolve(true);
    const sending = pending;
    pending = new Map();
    const counts: Record<string, string> = {};
    for (const [org, n] of sending) counts[String(org)] = String(n);
    inFlight = new Promise<boolean>((resolve) => {
      const { address, client } = clients.get();
      (client.ReportUsage as unknown as ReportUsage).call(client, { node_id: opts.nodeId, counts, period: usagePeriodOf(new Date()) }, md,
        { deadline: Date.now() + deadlineMs }, (err) => {
          if (err) {
            // Keep the counts for the next attempt (merged with whatever arrived meanwhile).
            for (const [org, n] of sending) pending.set(org, (pending.get(org) ?? 0) + n);
            if (err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.DEADLINE_EXCEEDED) clients.failed(address);
            failures++;
            if (failures === 1 || failures % 30 === 0) log.warn({ code: grpc.status[err.code], details: err.details, failures }, 'usage report failed; will retry');
            resolve(false);
            return;
          }
          failures = 0;
          resolve(true);
        });
    }).finally(() => { inFlight = null; });
    return inFlight;
  };

  const timer = setInterval(() => { void flush(); }, opts.intervalMs ?? USAGE_REPORT_INTERVAL_MS);
  timer.unref();
  let closing: Promise<void> | null = null;
  return {
    flush,
    pending: () => { gather(); return pending; },
    close() {
      closing ??= (async () => {
        clearInterval(timer);
        await inFlight;
        if (!(await flush(FINAL_REPORT_DEADLINE_MS)) && pending.size > 0) {
          log.warn({ organizations: pending.size }, 'unsent usage counts dropped at shutdown');
        }
        clients.close();
      })();
      return closing;
    },
  };
}
