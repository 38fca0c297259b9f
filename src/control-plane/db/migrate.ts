/**
 * Numbered SQL migrations (`NNNN_name.sql` in src/control-plane/db/migrations), applied in
 * order at start-up under a session advisory lock so that control-plane replicas never race
 * (DESIGN.md "Control plane"). Each file runs in its own transaction with its row in
 * `schema_migrations`; an applied file is never run again.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Sql } from './connect.js';
import { MIGRATIONS_DIR } from '../../paths.js';

/** Arbitrary constant key of the advisory lock that serialises migrations. */
const MIGRATION_LOCK_KEY = 7_302_114_001;

/** A migration file. */
export interface Migration { version: number; name: string; sql: string }

/** Lists the migrations found in `dir`, ordered by version. @throws Error on a duplicate version. */
export function listMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const out: Migration[] = [];
  for (const file of fs.readdirSync(dir).sort()) {
    const m = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
    if (!m) continue;
    out.push({ version: Number(m[1]), name: m[2]!, sql: fs.readFileSync(path.join(dir, file), 'utf8') });
  }
  for (let i = 1; i < out.length; i++) {
    if (out[i]!.version === out[i - 1]!.version) throw new Error(`duplicate migration version ${out[i]!.version}`);
  }
  return out;
}

/** Applies every pending migration; returns the versions applied now. */
export async function migrate(sql: Sql, dir: string = MIGRATIONS_DIR): Promise<number[]> {
  const applied: number[] = [];
  await sql.reserve().then(async (conn) => {
    try {
      await conn`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
      await conn`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
      const done = new Set((await conn<{ version: number }[]>`SELECT version FROM schema_migrations`).map((r) => r.version));
      for (const m of listMigrations(dir)) {
        if (done.has(m.version)) continue;
        await conn.unsafe('BEGIN');
        try {
          await conn.unsafe(m.sql);
          await conn`INSERT INTO schema_migrations (version, name) VALUES (${m.version}, ${m.name})`;
          await conn.unsafe('COMMIT');
        } catch (e) {
          await conn.unsafe('ROLLBACK');
          throw new Error(`migration ${m.version}_${m.name} failed: ${(e as Error).message}`);
        }
        applied.push(m.version);
      }
    } finally {
      await conn`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.catch(() => {});
      conn.release();
    }
  });
  return applied;
}
