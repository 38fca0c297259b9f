/**
 * `switchyard start` never leaves its embedded Postgres running when the services die: the real
 * `node dist/src/cli.js start` with its own data dir, API, gRPC and flags ports 0 (the node's
 * URL is read from what start prints; Postgres needs a fixed port, picked free); once it
 * answers /_ready, the services child (control plane and node) is killed with SIGKILL, as a
 * segfault or the OOM killer would. The postmaster must be gone within seconds, and start must
 * have exited non-zero, saying why.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { stablePort } from '../support/ports.js';
import { exitWithOutput } from '../support/run-command.js';
import { waitFor } from '../support/wait.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM'; }
}

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

test('start stops Postgres and exits non-zero when its services process is SIGKILLed', { timeout: 300_000, skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-orphan-'));
  fs.chmodSync(tmp, 0o755); // the postgres OS user (as root) must enter it
  const dataDir = path.join(tmp, 'data');
  let out = '';
  const start = spawn(process.execPath, [CLI, 'start'], {
    env: {
      ...process.env,
      DATABASE_URL: '',
      SWITCHYARD_DATA_DIR: dataDir,
      SWITCHYARD_LOG_LEVEL: 'warn',
      SWITCHYARD_EMBEDDED_PG_PORT: String(await stablePort()),
      SWITCHYARD_API_PORT: '0',
      SWITCHYARD_GRPC_PORT: '0',
      SWITCHYARD_FLAGS_PORT: '0',
      SWITCHYARD_IO_THREADS: '1',
      // The control plane's copy of the node store (snapshot images) is no part of what start
      // does when its services die; without it the services start on less CPU.
      SWITCHYARD_SNAPSHOT_IMAGE: 'false',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  start.stdout!.on('data', (d) => { out += String(d); });
  start.stderr!.on('data', (d) => { out += String(d); });
  const exited = exitWithOutput(start);
  let postmaster = 0;
  try {
    const nodeUrl = await waitFor('start prints the node URL', () => {
      if (start.exitCode !== null) throw new Error(`start exited ${start.exitCode}: ${out}`);
      return /Flags & capture +(http:\/\/\S+)/.exec(out)?.[1];
    }, { timeoutMs: 180_000, intervalMs: 100 });
    await waitFor('the node is ready', async () => (await fetch(`${nodeUrl}/_ready`).catch(() => null))?.status === 200, { timeoutMs: 60_000 });
    postmaster = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    assert.ok(alive(postmaster), 'Postgres runs');
    const services = childrenOf(start.pid!, 'start --services');
    assert.equal(services.length, 1, `one services child of start (${services.join(', ')})`);
    assert.notEqual(services[0], postmaster);

    process.kill(services[0]!, 'SIGKILL');
    // Unref'd: the bound must not keep the test process alive after start exited.
    const end = await Promise.race([exited, new Promise<null>((r) => setTimeout(() => r(null), 30_000).unref())]);
    assert.ok(end, `start exits after its services died: ${out}`);
    assert.equal(end.signal, null);
    assert.equal(end.code, 1, out);
    assert.match(out, /the services process \(control plane and node\) died; stopping Postgres/);
    assert.match(out, /"signal":"SIGKILL"/);
    await waitFor('the postmaster is gone', () => !alive(postmaster), { timeoutMs: 10_000, intervalMs: 50 });
    assert.equal(fs.existsSync(path.join(dataDir, 'postgres.owner')), false, 'ownership released');
  } finally {
    if (start.exitCode === null && start.signalCode === null) start.kill('SIGKILL');
    for (const pid of childrenOf(start.pid!, 'start --services')) process.kill(pid, 'SIGKILL');
    if (postmaster && alive(postmaster)) {
      process.kill(postmaster, 'SIGINT');
      await waitFor('cleanup', () => !alive(postmaster), { timeoutMs: 30_000 }).catch(() => {});
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
