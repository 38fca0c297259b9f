/**
 * A fresh, migrated database per test suite on the run's Postgres (embedded unless
 * DATABASE_URL was set; see test/run.ts).
 */
import crypto from 'node:crypto';
import { connect, type Sql } from '../../src/control-plane/db/connect.js';
import { migrate } from '../../src/control-plane/db/migrate.js';

export interface TestDatabase {
  /** URL of the new database. */
  url: string;
  /** A pool on it. */
  sql: Sql;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/** The admin URL of the run's Postgres. @throws when the suite is run outside test/run.ts. */
export function adminUrl(): string {
  const url = process.env.SWITCHYARD_TEST_ADMIN_URL;
  if (!url) throw new Error('SWITCHYARD_TEST_ADMIN_URL is not set: run tests through `make test`');
  return url;
}

/** Creates `sy_test_<random>`, applies all migrations, and returns it. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const admin = connect(adminUrl(), { max: 1 });
  const name = `sy_test_${crypto.randomBytes(6).toString('hex')}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  const sql = connect(url.toString(), { max: 10 });
  await migrate(sql);
  return {
    url: url.toString(),
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      const a = connect(adminUrl(), { max: 1 });
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await a.end();
    },
  };
}
