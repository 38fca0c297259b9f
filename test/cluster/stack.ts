/**
 * The whole topology on namespace hosts: `db1` (Postgres 15 primary, synchronous replication),
 * `db2` (its `pg_basebackup -R` standby), control planes `cp1` `cp2` on a multi-host
 * DATABASE_URL, nodes `n1`–`n3` watching both control planes, `lb` (HAProxy: the nodes' public
 * port checked on their probe port's `/_ready`, the management API and gRPC over the control
 * planes, a stats page) and `client` (posthog-node load, client.ts). Every process is the real
 * binary; each logs to `<dir>/logs/<name>.log`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { loadConfig } from '../../src/config.js';
import { Network } from './net.js';
import { HostProcess, sleep, until } from './procs.js';

const distDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = path.join(distDir, 'src', 'cli.js');
const CLIENT = path.join(distDir, 'test', 'cluster', 'client.js');
const PG_BIN = '/usr/lib/postgresql/15/bin';
const AS_POSTGRES = ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups'];

export const PG_PASSWORD = 'cluster-test-password';
export const CLUSTER_TOKEN = 'cluster-test-token-0123456789abcdef';
export const PERSONAL_KEY = 'phx_clustertest0123456789abcdef0123456789abcd';
export const PROJECT_KEY = 'phc_clustertest0123456789abcdef0123456789abcd';
/** Drain after SIGTERM, seconds (short so the test stays fast). */
export const DRAIN_SECONDS = 2;
/**
 * Whole stop after SIGTERM, drain included, seconds: room for a control plane's stop after its
 * drain (HTTP connections, gRPC calls' 2 s grace, jobs, pools) on two shared cores.
 */
export const SHUTDOWN_TIMEOUT_SECONDS = 10;

const ADDRESSES: Record<string, number> = { db1: 11, db2: 12, cp1: 21, cp2: 22, n1: 31, n2: 32, n3: 33, lb: 40, client: 50 };
export const NODES = ['n1', 'n2', 'n3'] as const;
export const CPS = ['cp1', 'cp2'] as const;

/**
 * Whether this build's config takes a comma-separated SWITCHYARD_CONTROL_PLANE (CLUSTER_CP_LIST=1
 * or 0 forces the answer). Without it, nodes watch cp1 alone and the control-plane failover fails.
 */
export function controlPlaneListSupported(): boolean {
  if (process.env.CLUSTER_CP_LIST) return process.env.CLUSTER_CP_LIST === '1';
  try {
    loadConfig({ SWITCHYARD_CONTROL_PLANE: '10.0.0.1:50051,10.0.0.2:50051' });
    return true;
  } catch (e) { return !String((e as Error).message).includes('SWITCHYARD_CONTROL_PLANE'); }
}

/** One failed client request. */
export interface Failure { t: number; path: string; what: string }

/** The client host's posthog-node load, as reported on its stdout. */
export class Load {
  proc: HostProcess | null = null;
  /** Acknowledged event uuid → time of the acknowledgement. */
  readonly acked = new Map<string, number>();
  readonly failures: Failure[] = [];
  last: Record<string, number> = {};
  /** Highest in-flight request count reported per line, with the line's time. */
  readonly inflight: { t: number; max: number }[] = [];
  done = false;

  onLine(line: string): void {
    let m: any;
    try { m = JSON.parse(line); } catch { return; }
    if (m.done) { this.done = true; return; }
    for (const u of m.acked as string[]) this.acked.set(u, m.t);
    this.failures.push(...(m.failures as Failure[]));
    this.inflight.push({ t: m.t, max: m.maxInflight });
    this.last = m;
  }

  failuresBetween(from: number, to = Date.now()): Failure[] { return this.failures.filter((f) => f.t >= from && f.t <= to); }
  ackedBetween(from: number, to = Date.now()): string[] { return [...this.acked].filter(([, t]) => t >= from && t <= to).map(([u]) => u); }
  maxInflightBetween(from: number, to = Date.now()): number {
    return Math.max(0, ...this.inflight.filter((x) => x.t >= from - 250 && x.t <= to + 250).map((x) => x.max));
  }
}

export class Stack {
  readonly net: Network;
  readonly logs: string;
  readonly pg = new Map<string, HostProcess>();
  readonly cps = new Map<string, HostProcess>();
  readonly nodes = new Map<string, HostProcess>();
  lb: HostProcess | null = null;
  readonly load = new Load();
  /** The host now running the writable Postgres. */
  primary = 'db1';
  readonly cpList: boolean;
  projectId = 0;
  private sqlConn: postgres.Sql | null = null;
  private sqlHost = '';

  constructor(readonly id: string, readonly dir: string) {
    this.net = new Network(id, (Number(id) % 200) + 20);
    this.logs = path.join(dir, 'logs');
    this.cpList = controlPlaneListSupported();
  }

  ip(host: string): string { return this.net.host(host).ip; }
  log(name: string): string { return path.join(this.logs, `${name}.log`); }
  get apiUrl(): string { return `http://${this.ip('lb')}:8000`; }
  get publicUrl(): string { return `http://${this.ip('lb')}:8010`; }
  nodeUrl(n: string): string { return `http://${this.ip(n)}:8010`; }
  get databaseUrl(): string {
    return `postgres://postgres:${PG_PASSWORD}@${this.ip('db1')}:5432,${this.ip('db2')}:5432/switchyard?target_session_attrs=read-write`;
  }

  /** Builds the network and starts every host's processes; then waits until the LB serves flags. */
  async up(): Promise<void> {
    fs.mkdirSync(this.logs, { recursive: true });
    fs.chmodSync(this.dir, 0o755);
    this.net.up();
    for (const [name, last] of Object.entries(ADDRESSES)) this.net.addHost(name, last);
    await this.startPostgres();
    await this.startControlPlane('cp1');
    await this.startControlPlane('cp2');
    const projects = await this.api('GET', '/api/projects/', undefined, `http://${this.ip('cp1')}:8000`);
    if (projects.status !== 200) throw new Error(`GET /api/projects/: ${projects.status} ${projects.text}`);
    this.projectId = projects.body.results[0].id;
    for (const n of NODES) this.startNode(n);
    await Promise.all(NODES.map((n) => this.waitNodeReady(n)));
    this.startLb();
    await until('the LB to serve /flags', async () => (await this.flagsVia(this.publicUrl, 'probe')).status === 200, 20_000);
  }

  private async startPostgres(): Promise<void> {
    const pwfile = path.join(this.dir, 'pgpass');
    fs.writeFileSync(pwfile, `${PG_PASSWORD}\n`, { mode: 0o644 });
    for (const db of ['db1', 'db2']) {
      const sock = path.join(this.dir, `sock-${db}`);
      fs.mkdirSync(sock);
      execFileSync('chown', ['postgres:postgres', sock]);
    }
    const d1 = path.join(this.dir, 'db1');
    fs.mkdirSync(d1, { mode: 0o700 });
    execFileSync('chown', ['postgres:postgres', d1]);
    execFileSync(AS_POSTGRES[0], [...AS_POSTGRES.slice(1), `${PG_BIN}/initdb`, '-D', d1, '-U', 'postgres', `--pwfile=${pwfile}`,
      '--auth-local=trust', '--auth-host=scram-sha-256', '--no-sync', '-E', 'UTF8', '--locale=C'], { stdio: 'ignore' });
    fs.appendFileSync(path.join(d1, 'pg_hba.conf'),
      `host all all ${this.net.subnet}.0/24 scram-sha-256\nhost replication all ${this.net.subnet}.0/24 scram-sha-256\n`);
    this.startPg('db1', ['-c', "synchronous_standby_names=*"]);
    await until('db1 to accept connections', () => this.pgUp('db1'), 20_000, 200);
    const d2 = path.join(this.dir, 'db2');
    fs.mkdirSync(d2, { mode: 0o700 });
    execFileSync('chown', ['postgres:postgres', d2]);
    const bb = new HostProcess('basebackup', this.net.host('db2'), [...AS_POSTGRES, '/usr/bin/pg_basebackup', '-h', this.ip('db1'), '-U', 'postgres',
      '-D', d2, '-R', '-X', 'stream', '-c', 'fast', '--no-sync'], this.log('db2'), { PGPASSWORD: PG_PASSWORD });
    if (await bb.exited !== 0) throw new Error(`pg_basebackup failed:\n${bb.tail()}`);
    this.startPg('db2', []);
    await until('db2 to stream from db1', async () => {
      const sql = postgres({ host: this.ip('db1'), port: 5432, user: 'postgres', password: PG_PASSWORD, database: 'postgres', max: 1, onnotice: () => {} });
      try { return (await sql`SELECT count(*)::int AS n FROM pg_stat_replication WHERE state = 'streaming'`)[0].n === 1; } finally { await sql.end(); }
    }, 20_000, 200);
    const sql = postgres({ host: this.ip('db1'), port: 5432, user: 'postgres', password: PG_PASSWORD, database: 'postgres', max: 1, onnotice: () => {} });
    try { await sql.unsafe('CREATE DATABASE switchyard'); } finally { await sql.end(); }
  }

  startPg(db: string, extra: string[]): HostProcess {
    const p = new HostProcess(db, this.net.host(db), [...AS_POSTGRES, `${PG_BIN}/postgres`, '-D', path.join(this.dir, db),
      '-c', `listen_addresses=${this.ip(db)}`, '-c', 'port=5432', '-c', `unix_socket_directories=${path.join(this.dir, `sock-${db}`)}`,
      '-c', 'fsync=off', '-c', 'max_connections=200', '-c', 'shared_buffers=32MB',
      // Dynamic shared memory as files in the data directory (removed with it), not /dev/shm
      // segments that a killed server leaves behind.
      '-c', 'dynamic_shared_memory_type=mmap', ...extra], this.log(db));
    this.pg.set(db, p);
    return p;
  }

  private async pgUp(db: string): Promise<boolean> {
    const sql = postgres({ host: this.ip(db), port: 5432, user: 'postgres', password: PG_PASSWORD, database: 'postgres', max: 1, onnotice: () => {}, connect_timeout: 2 });
    try { await sql`SELECT 1`; return true; } catch { return false; } finally { await sql.end({ timeout: 1 }); }
  }

  /** Promotes the standby on `db` (pg_ctl promote, waiting for it). */
  promote(db: string): void {
    execFileSync(AS_POSTGRES[0], [...AS_POSTGRES.slice(1), `${PG_BIN}/pg_ctl`, 'promote', '-w', '-D', path.join(this.dir, db)], { stdio: 'ignore' });
    this.primary = db;
  }

  /** A connection to the writable database. */
  async sql(): Promise<postgres.Sql> {
    if (this.sqlConn && this.sqlHost === this.primary) return this.sqlConn;
    await this.sqlConn?.end({ timeout: 1 }).catch(() => {});
    this.sqlHost = this.primary;
    this.sqlConn = postgres({ host: this.ip(this.primary), port: 5432, user: 'postgres', password: PG_PASSWORD, database: 'switchyard', max: 2, onnotice: () => {} });
    return this.sqlConn;
  }

  /** How many rows the events table holds per uuid among `uuids`. */
  async eventCounts(uuids: string[]): Promise<Map<string, number>> {
    const sql = await this.sql();
    const out = new Map<string, number>();
    for (let i = 0; i < uuids.length; i += 5000) {
      const rows = await sql<{ uuid: string; n: number }[]>`SELECT uuid::text AS uuid, count(*)::int AS n FROM events WHERE uuid::text = ANY(${uuids.slice(i, i + 5000)}) GROUP BY uuid`;
      for (const r of rows) out.set(r.uuid, r.n);
    }
    return out;
  }

  startControlPlane(cp: string): Promise<void> {
    const dataDir = path.join(this.dir, cp);
    fs.mkdirSync(dataDir, { recursive: true });
    this.cps.set(cp, new HostProcess(cp, this.net.host(cp), [process.execPath, CLI, 'control-plane'], this.log(cp), {
      DATABASE_URL: this.databaseUrl,
      SWITCHYARD_DATA_DIR: dataDir,
      SWITCHYARD_HOST: this.ip(cp),
      SWITCHYARD_API_PORT: '8000',
      SWITCHYARD_GRPC_PORT: '50051',
      SWITCHYARD_CLUSTER_TOKEN: CLUSTER_TOKEN,
      SWITCHYARD_BOOTSTRAP_PERSONAL_API_KEY: PERSONAL_KEY,
      SWITCHYARD_BOOTSTRAP_PROJECT_API_KEY: PROJECT_KEY,
      SWITCHYARD_API_BURST_RATE_PER_MINUTE: '0',
      SWITCHYARD_API_SUSTAINED_RATE_PER_HOUR: '0',
      SWITCHYARD_DRAIN_SECONDS: String(DRAIN_SECONDS),
      SWITCHYARD_SHUTDOWN_TIMEOUT_SECONDS: String(SHUTDOWN_TIMEOUT_SECONDS),
      SWITCHYARD_LOG_LEVEL: 'info',
    }));
    return until(`${cp} ready`, async () => {
      const p = this.cps.get(cp)!;
      if (!p.running) throw new Error(`${cp} exited:\n${p.tail()}`);
      return (await this.get(`http://${this.ip(cp)}:8000/_ready`)).status === 200;
    }, 60_000, 200).then(() => {});
  }

  startNode(n: string): HostProcess {
    const dataDir = path.join(this.dir, n);
    fs.mkdirSync(dataDir, { recursive: true });
    const cps = this.cpList ? CPS.map((c) => `${this.ip(c)}:50051`).join(',') : `${this.ip('cp1')}:50051`;
    const p = new HostProcess(n, this.net.host(n), [process.execPath, CLI, 'eval-node'], this.log(n), {
      SWITCHYARD_DATA_DIR: dataDir,
      SWITCHYARD_HOST: this.ip(n),
      SWITCHYARD_FLAGS_PORT: '8010',
      SWITCHYARD_PROBE_PORT: '8011',
      SWITCHYARD_CONTROL_PLANE: cps,
      SWITCHYARD_CLUSTER_TOKEN: CLUSTER_TOKEN,
      SWITCHYARD_IO_THREADS: '1',
      SWITCHYARD_LMDB_MAP_SIZE: String(256 * 1024 * 1024),
      SWITCHYARD_MEMORY_RELEASE_QUIET_MS: '0',
      SWITCHYARD_DRAIN_SECONDS: String(DRAIN_SECONDS),
      SWITCHYARD_SHUTDOWN_TIMEOUT_SECONDS: String(SHUTDOWN_TIMEOUT_SECONDS),
      SWITCHYARD_LOG_LEVEL: 'info',
    });
    this.nodes.set(n, p);
    return p;
  }

  async waitNodeReady(n: string, timeoutMs = 30_000): Promise<number> {
    return until(`${n} ready`, async () => {
      const p = this.nodes.get(n)!;
      if (!p.running) throw new Error(`${n} exited:\n${p.tail()}`);
      return (await this.get(`http://${this.ip(n)}:8011/_ready`)).status === 200;
    }, timeoutMs, 100);
  }

  private startLb(): void {
    const ip = (h: string) => this.ip(h);
    const cfg = `global
  maxconn 4000
defaults
  mode http
  timeout connect 1s
  timeout client 30s
  timeout server 15s
  timeout http-request 10s
  retries 3
  option redispatch 1
  retry-on conn-failure empty-response
  default-server inter 250ms fastinter 250ms downinter 500ms fall 2 rise 2
frontend public
  bind ${ip('lb')}:8010
  default_backend nodes
backend nodes
  balance roundrobin
  option httpchk GET /_ready
  http-check expect status 200
${NODES.map((n) => `  server ${n} ${ip(n)}:8010 check port 8011`).join('\n')}
frontend api
  bind ${ip('lb')}:8000
  default_backend cps
backend cps
  option httpchk GET /_ready
  http-check expect status 200
${CPS.map((c) => `  server ${c} ${ip(c)}:8000 check`).join('\n')}
frontend grpc
  mode tcp
  bind ${ip('lb')}:50051
  default_backend cps_grpc
backend cps_grpc
  mode tcp
${CPS.map((c) => `  server ${c} ${ip(c)}:50051 check`).join('\n')}
frontend stats
  bind ${ip('lb')}:8404
  stats enable
  stats uri /stats
`;
    const file = path.join(this.dir, 'haproxy.cfg');
    fs.writeFileSync(file, cfg);
    this.lb = new HostProcess('lb', this.net.host('lb'), ['/usr/sbin/haproxy', '-db', '-f', file], this.log('lb'));
  }

  /** HAProxy's view of `backend`: server name → status (UP, DOWN, …). */
  async lbStatus(backend: string): Promise<Map<string, string>> {
    const r = await this.get(`http://${this.ip('lb')}:8404/stats;csv`);
    const out = new Map<string, string>();
    for (const line of r.text.split('\n')) {
      const f = line.split(',');
      if (f[0] === backend && f[1] !== 'BACKEND' && f[1] !== 'FRONTEND') out.set(f[1], f[17]);
    }
    return out;
  }

  startLoad(flagsPerSecond = 20, eventsPerSecond = 40): void {
    this.load.proc = new HostProcess('client', this.net.host('client'),
      [process.execPath, CLIENT, this.publicUrl, PROJECT_KEY, String(flagsPerSecond), String(eventsPerSecond)],
      this.log('client'), {}, (l) => this.load.onLine(l));
  }

  /** Stops the load; waits for its last report (the SDK flushed what it queued). */
  async stopLoad(): Promise<void> {
    await this.load.proc?.stop('SIGTERM', 15_000);
  }

  async get(url: string): Promise<{ status: number; text: string }> {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(3_000) });
      return { status: r.status, text: await r.text() };
    } catch (e) { return { status: 0, text: String(e) }; }
  }

  /** A management request through the LB (or `base`). */
  async api(method: string, p: string, body?: unknown, base = this.apiUrl): Promise<{ status: number; body: any; text: string }> {
    try {
      const r = await fetch(`${base}${p}`, {
        method, signal: AbortSignal.timeout(5_000),
        headers: { authorization: `Bearer ${PERSONAL_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await r.text();
      let parsed: unknown;
      try { parsed = JSON.parse(text); } catch { parsed = undefined; }
      return { status: r.status, body: parsed, text };
    } catch (e) { return { status: 0, body: undefined, text: String(e) }; }
  }

  async createFlag(key: string, rollout: number): Promise<number> {
    const r = await this.api('POST', `/api/projects/${this.projectId}/feature_flags/`, { key, filters: { groups: [{ properties: [], rollout_percentage: rollout }] } });
    if (r.status !== 201) throw new Error(`create flag: ${r.status} ${r.text}`);
    return r.body.id;
  }

  patchFlag(id: number, rollout: number): Promise<{ status: number; text: string }> {
    return this.api('PATCH', `/api/projects/${this.projectId}/feature_flags/${id}/`, { filters: { groups: [{ properties: [], rollout_percentage: rollout }] } });
  }

  async flagsVia(base: string, distinctId: string): Promise<{ status: number; body: any }> {
    try {
      const r = await fetch(`${base}/flags?v=2`, {
        method: 'POST', signal: AbortSignal.timeout(3_000), headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ api_key: PROJECT_KEY, distinct_id: distinctId }),
      });
      return { status: r.status, body: await r.json().catch(() => undefined) };
    } catch { return { status: 0, body: undefined }; }
  }

  /** Whether node `n` answers flag `key` enabled (`true`), disabled (`false`), or not at all (`null`). */
  async nodeServes(n: string, key: string): Promise<boolean | null> {
    const r = await this.flagsVia(this.nodeUrl(n), 'someone');
    const f = r.body?.flags?.[key];
    return r.status === 200 && f ? Boolean(f.enabled) : null;
  }

  /** Numeric samples of `/metrics` on node `n` (probe port), keyed by metric name with labels. */
  async nodeMetrics(n: string): Promise<Map<string, number>> {
    const r = await this.get(`http://${this.ip(n)}:8011/metrics`);
    const out = new Map<string, number>();
    for (const line of r.text.split('\n')) {
      if (!line || line.startsWith('#')) continue;
      const i = line.lastIndexOf(' ');
      out.set(line.slice(0, i), Number(line.slice(i + 1)));
    }
    return out;
  }

  /** Stops every process (SIGKILL: nothing here needs a clean exit) and the SQL connection. */
  async down(): Promise<void> {
    await this.sqlConn?.end({ timeout: 1 }).catch(() => {});
    const all = [this.load.proc, this.lb, ...this.nodes.values(), ...this.cps.values(), ...this.pg.values()];
    for (const p of all) p?.signalGroup('SIGKILL');
    await Promise.race([Promise.all(all.map((p) => p?.exited)), sleep(5_000)]);
  }

  /** The tails of the named hosts' logs, for a failure report. */
  tails(names: string[], lines = 30): string {
    return names.map((n) => {
      let text = '(no log)';
      try { text = fs.readFileSync(this.log(n), 'utf8').split('\n').slice(-lines).map((l) => l.slice(0, 300)).join('\n'); } catch { /* none */ }
      return `==== ${n} (${this.log(n)}) ====\n${text}`;
    }).join('\n');
  }
}
