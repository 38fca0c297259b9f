/**
 * A fresh database for a benchmark: on a throw-away embedded Postgres under `dir`, or on
 * DATABASE_URL's server. `drop()` removes the database (and stops the embedded server).
 */
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { startEmbeddedPostgres, type EmbeddedCluster } from '../src/control-plane/db/embedded.js';
import { connect } from '../src/control-plane/db/connect.js';
import { stablePort } from '../test/support/ports.js';

/** A benchmark database. */
export interface BenchDatabase {
  /** URL of the fresh database. */
  url: string;
  /** PID of the embedded server's postmaster (its backends are its children); null on DATABASE_URL's server. */
  postmasterPid(): number | null;
  drop(): Promise<void>;
}

/** Creates a database named `<prefix><random>`. */
export async function startBenchDatabase(dir: string, prefix: string): Promise<BenchDatabase> {
  let cluster: EmbeddedCluster | null = null;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    // Postgres runs as its own OS user when we are root: it must be able to enter the directory.
    fs.chmodSync(dir, 0o777);
    cluster = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await stablePort(), persistent: false });
    adminUrl = cluster.adminUrl;
  }
  const dbName = `${prefix}${crypto.randomBytes(4).toString('hex')}`;
  const admin = connect(adminUrl, { max: 1 });
  await admin.unsafe(`CREATE DATABASE ${dbName}`);
  await admin.end();
  const dbUrl = new URL(adminUrl);
  dbUrl.pathname = `/${dbName}`;
  return {
    url: dbUrl.toString(),
    postmasterPid() {
      if (!cluster) return null;
      const pid = Number(fs.readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
      return Number.isInteger(pid) && pid > 0 ? pid : null;
    },
    async drop() {
      const a = connect(adminUrl!, { max: 1 });
      await a.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
      await a.end();
      await cluster?.stop().catch(() => {});
    },
  };
}
