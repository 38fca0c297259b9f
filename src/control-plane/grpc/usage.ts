/**
 * gRPC `ReportUsage` (proto/switchyard.proto): a node's /flags request counts per organization
 * for one accounting period, added to `flag_request_usage` by the quota service, which flips
 * `quota_limited` (and publishes it through the change log) when a limit is reached.
 *
 * Delivery is at least once: a report whose acknowledgement is lost is sent again and counted
 * twice. The error is bounded by one report interval of one node and errs towards limiting.
 *
 * Statuses: UNAUTHENTICATED (token), INVALID_ARGUMENT (period not `YYYY-MM`, or a count or
 * organization id that is not a non-negative integer), UNAVAILABLE (database error; retry).
 */
import * as grpc from '@grpc/grpc-js';
import type { Sql } from '../db/connect.js';
import type { Logger } from '../../log.js';
import { recordFlagRequestUsage } from '../quota/service.js';
import { hasClusterToken, unauthenticated } from './auth.js';
import { parseInt64MapKey } from '../../contract/messages.js';

/** `UsageReport` as decoded (values are decimal strings; keys see {@link parseInt64MapKey}). */
export interface UsageReportMessage { node_id: string; counts: Record<string, string>; period: string }

const PERIOD = /^\d{4}-(0[1-9]|1[0-2])$/;
const UINT = /^\d{1,15}$/;

/** Builds the unary `ReportUsage` handler. */
export function createReportUsageHandler(deps: { sql: Sql; log: Logger; clusterToken: string }):
  grpc.handleUnaryCall<UsageReportMessage, Record<string, never>> {
  const log = deps.log.child({ rpc: 'ReportUsage' });
  return (call, callback) => {
    if (!hasClusterToken(call.metadata, deps.clusterToken)) {
      callback(unauthenticated() as grpc.ServiceError, null);
      return;
    }
    const { period, counts } = call.request;
    if (!PERIOD.test(period)) {
      callback({ code: grpc.status.INVALID_ARGUMENT, details: `period must be YYYY-MM, got "${period}"` } as grpc.ServiceError, null);
      return;
    }
    const parsed = new Map<number, number>();
    for (const [key, n] of Object.entries(counts ?? {})) {
      let org: number;
      try {
        org = parseInt64MapKey(key);
      } catch {
        org = -1;
      }
      if (org < 0 || !UINT.test(String(n))) {
        callback({ code: grpc.status.INVALID_ARGUMENT, details: `bad count for organization ${org < 0 ? JSON.stringify(key) : org}: ${String(n)}` } as grpc.ServiceError, null);
        return;
      }
      parsed.set(org, (parsed.get(org) ?? 0) + Number(n));
    }
    recordFlagRequestUsage(deps.sql, parsed, period).then(
      () => callback(null, {}),
      (err: unknown) => {
        log.error({ err, node_id: call.request.node_id }, 'recording usage failed');
        callback({ code: grpc.status.UNAVAILABLE, details: 'usage not recorded; retry' } as grpc.ServiceError, null);
      },
    );
  };
}
