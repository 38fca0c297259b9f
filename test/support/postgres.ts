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
 * Server settings of the test cluster, which is never recovered after a crash: commits do not
 * wait for the WAL flush (`synchronous_commit`), nothing is flushed to disk (`fsync`,
 * `full_page_writes`), and checkpoints come only every 30 minutes or 4 GiB of WAL (each suite's
 * CREATE DATABASE writes its ~10 MB template copy to the WAL; the default 1 GiB forced a
 * checkpoint of every suite's dirty buffers a few times a run). Passed on Postgres' command line,
 * as the embedded cluster's own `fsync=on` is (an ALTER SYSTEM file would not override it).
 */
export const TEST_POSTGRES_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_wal_size: '4GB', checkpoint_timeout: '30min',
});

/**
 * Starts an embedded cluster in `<dir>/pg` on a {@link stablePort} with
 * {@link TEST_POSTGRES_SETTINGS}, trying another port when Postgres could not start (the port was
 * taken between the pick and Postgres' bind). shared_buffers stays at Postgres' 128 MiB.
 * @throws the last start error after {@link START_ATTEMPTS} attempts.
 */
export async function startTestPostgres(dir: string): Promise<EmbeddedCluster> {
  let last: unknown;
  for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
    try {
      return await startEmbeddedPostgres({
        dataDir: path.join(dir, 'pg'), port: await stablePort(), persistent: false, sharedBuffersMb: 128, settings: TEST_POSTGRES_SETTINGS,
      });
    } catch (e) {
      last = e;
    }
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
