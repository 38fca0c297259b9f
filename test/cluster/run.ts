/**
 * `make test-cluster`: runs topology.test.js under node:test, bounded in time, then removes
 * everything the run created (namespaces and their processes, veths, bridge, temp dir) whatever
 * happened: failure, timeout, Ctrl-C, or the test process killed. Leftovers of earlier runs whose
 * runner was killed outright are removed first. Needs root (network namespaces).
 *
 *   CLUSTER_TIMEOUT_S   longest run, seconds (default 300)
 *   CLUSTER_KEEP=1      keep the temp dir (logs, data dirs) for a look afterwards
 *   CLUSTER_CP_LIST=1|0 give the nodes both control planes (default: when the config takes a list)
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { removeRun, removeStale, tempPrefix } from './net.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const id = String(process.pid);
const timeoutS = Number(process.env.CLUSTER_TIMEOUT_S ?? 300);

if (process.getuid?.() !== 0) {
  console.error('make test-cluster needs root (it creates network namespaces)');
  process.exit(1);
}
removeStale();
const dir = fs.mkdtempSync(tempPrefix(id));
let cleaned = false;
function cleanup(): void {
  if (cleaned) return;
  cleaned = true;
  removeRun(id);
  if (process.env.CLUSTER_KEEP === '1') console.error(`[cluster] kept ${dir}`);
  else fs.rmSync(dir, { recursive: true, force: true });
}
process.on('exit', cleanup);

const child = spawn(process.execPath, ['--test', '--test-reporter=spec', '--test-concurrency=1', `--test-timeout=${timeoutS * 1000}`, path.join(here, 'topology.test.js')], {
  env: { ...process.env, CLUSTER_ID: id, CLUSTER_DIR: dir }, stdio: 'inherit', detached: true,
});
/** Signals the test's whole process group (node --test and the test file's process). */
const signalTest = (sig: NodeJS.Signals): void => { try { process.kill(-child.pid!, sig); } catch { /* gone */ } };
const stopChild = (why: string): void => {
  console.error(`[cluster] ${why}: stopping the test`);
  signalTest('SIGTERM');
  setTimeout(() => signalTest('SIGKILL'), 10_000).unref();
};
const timer = setTimeout(() => stopChild(`over ${timeoutS} s`), timeoutS * 1000);
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => stopChild(sig));
child.on('exit', (code, sig) => {
  clearTimeout(timer);
  signalTest('SIGKILL');
  cleanup();
  process.exit(code ?? (sig ? 1 : 0));
});
