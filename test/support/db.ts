/**
 * A fresh, migrated database per test suite on the run's Postgres (embedded unless
 * DATABASE_URL was set; see test/run.ts). Under test/run.ts it is a copy of the run's migrated
 * template database (test/support/postgres.ts), which costs a fraction of migrating anew.
 */
import crypto from 'node:crypto';
import { connect, type Sql } from '../../src/control-plane/db/connect.js';
import { migrate } from '../../src/control-plane/db/migrate.js';

/** Environment variable naming the test file a worker runs now (set by batch-entry.ts; a lone file is argv[1]). */
export const SUITE_ENV = 'SWITCHYARD_TEST_SUITE';

/** Environment variable naming the run's migrated template database (set by test/run.ts). */
export const TEMPLATE_ENV = 'SWITCHYARD_TEST_TEMPLATE_DB';

/**
 * Environment variable set (to `1`) by test/run.ts when the run's Postgres is its own throw-away
 * cluster: a suite's database is then left in place at its end instead of dropped, as the whole
 * cluster is removed when the run ends. DROP DATABASE forces a checkpoint and waits for it
 * (writing every suite's dirty buffers; seconds of wall under a full run), which a database about
 * to be deleted with its cluster does not need. Never set for a DATABASE_URL server.
 */
export const THROWAWAY_CLUSTER_ENV = 'SWITCHYARD_TEST_THROWAWAY_CLUSTER';

export interface TestDatabase {
  /** URL of the new database. */
  url: string;
  /** A pool on it. */
  sql: Sql;
  /** Closes the pool and drops the database (only closes it in a throw-away cluster: {@link THROWAWAY_CLUSTER_ENV}). */
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
    // The run's own cluster copies the template's files (FILE_COPY, Postgres 15+) instead of
    // writing all of them through the WAL (the default, WAL_LOG): about a third less CPU per
    // suite. A DATABASE_URL server keeps its default (older servers lack the option).
    const strategy = template && process.env[THROWAWAY_CLUSTER_ENV] === '1' ? ' STRATEGY FILE_COPY' : '';
    await admin.unsafe(template ? `CREATE DATABASE ${name} TEMPLATE ${template}${strategy}` : `CREATE DATABASE ${name}`);
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
      if (process.env[THROWAWAY_CLUSTER_ENV] === '1') return;
      const a = connect(adminUrl(), { max: 1 });
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await a.end();
    },
  };
}
