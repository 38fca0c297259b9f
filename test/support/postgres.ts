/**
 * The run's Postgres for test/run.ts: a throw-away embedded cluster (unless DATABASE_URL is
 * set), tuned for tests, and one migrated template database that every suite's database is
 * copied from (test/support/db.ts), instead of each suite applying every migration again.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { connect } from '../../src/control-plane/db/connect.js';
import { migrate } from '../../src/control-plane/db/migrate.js';
import { startEmbeddedPostgres, type EmbeddedCluster } from '../../src/control-plane/db/embedded.js';
import { stablePort } from './ports.js';

export { TEMPLATE_ENV } from './db.js';

/** Attempts at starting the cluster: Postgres binds its port itself, another process may take it first. */
const START_ATTEMPTS = 4;

/**
 * Starts an embedded cluster in `<dir>/pg` on a {@link stablePort}, trying another when Postgres
 * could not start (the port was taken between the pick and Postgres' bind). Commits do not wait
 * for the WAL flush (`synchronous_commit = off`) and nothing is flushed to disk (`fsync = off`,
 * `full_page_writes = off`): a test cluster is never recovered after a crash, and the waits
 * dominated short transactions and each suite's CREATE DATABASE. shared_buffers stays at Postgres' 128 MiB.
 * @throws the last start error after {@link START_ATTEMPTS} attempts.
 */
export async function startTestPostgres(dir: string): Promise<EmbeddedCluster> {
  let last: unknown;
  for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
    let cluster: EmbeddedCluster;
    try {
      cluster = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await stablePort(), persistent: false, sharedBuffersMb: 128 });
    } catch (e) {
      last = e;
      continue;
    }
    const admin = connect(cluster.adminUrl, { max: 1 });
    try {
      await admin.unsafe('ALTER SYSTEM SET synchronous_commit = off');
      await admin.unsafe('ALTER SYSTEM SET fsync = off');
      await admin.unsafe('ALTER SYSTEM SET full_page_writes = off');
      await admin.unsafe('SELECT pg_reload_conf()');
    } finally {
      await admin.end({ timeout: 5 });
    }
    return cluster;
  }
  throw new Error(`the test Postgres did not start after ${START_ATTEMPTS} attempts: ${String((last as Error | undefined)?.message ?? last)}`);
}

/**
 * Creates `sy_template_<random>` on the server at `adminUrl`, applies every migration to it and
 * closes it to connections (CREATE DATABASE … TEMPLATE needs it idle).
 * @returns its name and a function that drops it.
 */
export async function createTemplateDatabase(adminUrl: string): Promise<{ name: string; drop(): Promise<void> }> {
  const name = `sy_template_${crypto.randomBytes(6).toString('hex')}`;
  const admin = connect(adminUrl, { max: 1 });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const sql = connect(url.toString(), { max: 1 });
    try { await migrate(sql); } finally { await sql.end({ timeout: 5 }); }
    await admin.unsafe(`ALTER DATABASE ${name} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  return {
    name,
    async drop() {
      const a = connect(adminUrl, { max: 1 });
      try {
        await a.unsafe(`ALTER DATABASE ${name} WITH IS_TEMPLATE false`);
        await a.unsafe(`DROP DATABASE IF EXISTS ${name}`);
      } finally {
        await a.end({ timeout: 5 });
      }
    },
  };
}
