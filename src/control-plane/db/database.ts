/**
 * Where the control plane's database is: DATABASE_URL when set, else the embedded cluster under
 * `<dataDir>/postgres` on `embeddedPostgresPort` (started here if it is not already running,
 * for example by `switchyard start` in another terminal).
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Config } from '../../config.js';
import { startEmbeddedPostgres } from './embedded.js';
import { connect } from './connect.js';

/** A database to use, and how to let go of it. */
export interface DatabaseHandle {
  url: string;
  /** True when this process started the embedded cluster (and stops it on release). */
  startedEmbedded: boolean;
  release(): Promise<void>;
}

const DB_NAME = 'switchyard';

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.end(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

/**
 * Resolves the database. With the embedded cluster, creates the `switchyard` database on first
 * use. @throws Error when the embedded cluster cannot start.
 */
export async function openDatabase(config: Config, onLog?: (line: string) => void): Promise<DatabaseHandle> {
  if (config.databaseUrl) return { url: config.databaseUrl, startedEmbedded: false, release: async () => {} };
  const dataDir = path.join(config.dataDir, 'postgres');
  const port = config.embeddedPostgresPort;
  const running = fs.existsSync(path.join(dataDir, 'postmaster.pid')) && await portOpen(port);
  const cluster = running ? null : await startEmbeddedPostgres({ dataDir, port, persistent: true, onLog });
  const adminUrl = `postgres://postgres:switchyard@127.0.0.1:${port}/postgres`;
  const admin = connect(adminUrl, { max: 1 });
  try {
    const [exists] = await admin`SELECT 1 FROM pg_database WHERE datname = ${DB_NAME}`;
    if (!exists) await admin.unsafe(`CREATE DATABASE ${DB_NAME}`).catch((e: { code?: string }) => { if (e.code !== '42P04') throw e; });
  } finally {
    await admin.end();
  }
  return {
    url: `postgres://postgres:switchyard@127.0.0.1:${port}/${DB_NAME}`,
    startedEmbedded: cluster !== null,
    release: async () => { if (cluster) await cluster.stop(); },
  };
}
