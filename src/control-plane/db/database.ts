/**
 * Where the control plane's database is: DATABASE_URL when set, else the embedded cluster under
 * `<dataDir>/postgres` on `embeddedPostgresPort` (started here if it is not already running,
 * for example by `switchyard start` in another terminal).
 *
 * Ownership: the process that starts the cluster records its pid in
 * `<dataDir>/postgres.owner` and stops the cluster on release. A running cluster whose owner is
 * gone (its `switchyard start` was SIGKILLed) is adopted: this process becomes the owner and
 * stops it on release (fast shutdown, SIGINT to the postmaster), so Ctrl-C works again. A
 * cluster whose owner is alive is shared and left running.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Config } from '../../config.js';
import { embeddedPassword, embeddedUrl, startEmbeddedPostgres } from './embedded.js';
import { connect } from './connect.js';

/** A database to use, and how to let go of it. */
export interface DatabaseHandle {
  url: string;
  /** True when this process started the embedded cluster (and stops it on release). */
  startedEmbedded: boolean;
  /** True when the embedded cluster was left running by a process that is gone and is now this one's to stop. */
  adopted: boolean;
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
  if (config.databaseUrl) return { url: config.databaseUrl, startedEmbedded: false, adopted: false, release: async () => {} };
  const dataDir = path.join(config.dataDir, 'postgres');
  const port = config.embeddedPostgresPort;
  const ownerFile = path.join(config.dataDir, 'postgres.owner');
  const running = fs.existsSync(path.join(dataDir, 'postmaster.pid')) && await portOpen(port);
  const owner = running ? readPid(ownerFile) : null;
  const adopt = running && (owner === null || !alive(owner));
  const cluster = running ? null : await startEmbeddedPostgres({ dataDir, port, persistent: true, onLog });
  if (cluster || adopt) fs.writeFileSync(ownerFile, `${process.pid}\n`);
  if (adopt) onLog?.(`adopted the embedded Postgres left running by process ${owner ?? 'unknown'}; it stops with this one`);
  const password = embeddedPassword(dataDir);
  const admin = connect(embeddedUrl(port, password, 'postgres'), { max: 1 });
  try {
    const [exists] = await admin`SELECT 1 FROM pg_database WHERE datname = ${DB_NAME}`;
    if (!exists) await admin.unsafe(`CREATE DATABASE ${DB_NAME}`).catch((e: { code?: string }) => { if (e.code !== '42P04') throw e; });
  } finally {
    await admin.end();
  }
  return {
    url: embeddedUrl(port, password, DB_NAME),
    startedEmbedded: cluster !== null || adopt,
    adopted: adopt,
    release: async () => {
      if (cluster) await cluster.stop();
      else if (adopt) await stopPostmaster(dataDir);
      if (cluster || adopt) fs.rmSync(ownerFile, { force: true });
    },
  };
}

function readPid(file: string): number | null {
  try {
    const pid = Number(fs.readFileSync(file, 'utf8').split('\n')[0]);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch { return null; }
}

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM'; }
}

/** Fast shutdown of the cluster at `dataDir` by its postmaster pid; waits up to 30 s for it to exit. */
async function stopPostmaster(dataDir: string): Promise<void> {
  const pid = readPid(path.join(dataDir, 'postmaster.pid'));
  if (pid === null || !alive(pid)) return;
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 30_000;
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
}
