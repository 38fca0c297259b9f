/**
 * pg-boss's database access (its `db` option: `executeSql(text, values) → { rows }`) through a
 * postgres.js pool of our own (connect.ts), so the job queue connects exactly as the rest of the
 * control plane does: a multi-host `DATABASE_URL` with `target_session_attrs=read-write` finds
 * the primary again after a failover (pg-boss's own node-postgres pool takes one host only).
 *
 * Values are passed as pg-boss gives them (postgres.js serialises each by the parameter type
 * the server describes, so objects bound to jsonb go as JSON), except undefined, sent as null as
 * node-postgres does. Statements without
 * values run over the simple protocol, so pg-boss's multi-statement migrations work; a text that
 * opens its own transaction (`BEGIN; …; COMMIT;`, pg-boss's locked migrations) runs on a reserved
 * connection, since postgres.js refuses BEGIN on a pool.
 */
import type { Sql } from './connect.js';

/** The `db` option of pg-boss. */
export interface PgBossDb {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** pg-boss's `db` over `sql` (which the caller owns and ends). */
export function pgBossDb(sql: Sql): PgBossDb {
  return {
    async executeSql(text, values = []) {
      const params = values.map((v) => (v === undefined ? null : v));
      if (params.length === 0 && /^\s*BEGIN\b/i.test(text)) {
        const reserved = await sql.reserve();
        try {
          return { rows: [...await reserved.unsafe(text)] };
        } catch (e) {
          await reserved.unsafe('ROLLBACK').catch(() => {});
          throw e;
        } finally {
          reserved.release();
        }
      }
      const rows = await sql.unsafe(text, params as never[]);
      return { rows: [...rows] };
    },
  };
}
