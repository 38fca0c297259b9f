/**
 * A fresh, migrated database per test suite on the run's Postgres (embedded unless
 * DATABASE_URL was set; see test/run.ts). Under test/run.ts it is a copy of the run's migrated
 * template database (test/support/postgres.ts), which costs a fraction of migrating anew.
 */
import crypto from 'node:crypto';
import { connect, type Sql } from '../../src/control-plane/db/connect.js';
import { migrate } from '../../src/control-plane/db/migrate.js';

/** Environment variable naming the test file a batch runs now (set by batch-entry.ts; a lone file is argv[1]). */
export const SUITE_ENV = 'SWITCHYARD_TEST_SUITE';

/** Environment variable naming the run's migrated template database (set by test/run.ts). */
export const TEMPLATE_ENV = 'SWITCHYARD_TEST_TEMPLATE_DB';

export interface TestDatabase {
  /** URL of the new database. */
  url: string;
  /** A pool on it. */
  sql: Sql;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/**
 * The running test file's name as an identifier part (`image_test`), at most 30 characters, so a
 * database (and its backends' process titles, which name it) tells which suite it belongs to.
 */
function suiteLabel(): string {
  const file = process.env[SUITE_ENV] ?? process.argv[1] ?? '';
  return (file.split('/').pop() ?? 'suite').replace(/\.js$/, '').replace(/[^a-z0-9]+/gi, '_').toLowerCase().slice(0, 30) || 'suite';
}

/** The admin URL of the run's Postgres. @throws when the suite is run outside test/run.ts. */
export function adminUrl(): string {
  const url = process.env.SWITCHYARD_TEST_ADMIN_URL;
  if (!url) throw new Error('SWITCHYARD_TEST_ADMIN_URL is not set: run tests through `make test`');
  return url;
}

/**
 * Creates `sy_test_<random>` (a copy of the template named by SWITCHYARD_TEST_TEMPLATE_DB when
 * set), applies any migration it lacks, and returns it.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const admin = connect(adminUrl(), { max: 1 });
  const name = `sy_test_${suiteLabel()}_${crypto.randomBytes(6).toString('hex')}`;
  const template = process.env[TEMPLATE_ENV];
  try {
    await admin.unsafe(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
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
