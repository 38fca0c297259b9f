/**
 * `make test`: runs every `*.test.js` under dist/test with node:test.
 *
 * Unless DATABASE_URL is set, one throw-away embedded Postgres cluster is started for the whole
 * run on a free port; each suite then creates its own database on it (test/support/db.ts).
 * Arguments are substrings that select test files (`make test TEST_ARGS=evaluation`).
 * test/cluster/ is left to `make test-cluster` (it needs root and network namespaces).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startEmbeddedPostgres, type EmbeddedCluster } from '../src/control-plane/db/embedded.js';
import { freePort } from './support/ports.js';

const here = path.dirname(fileURLToPath(import.meta.url));

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) { if (p !== path.join(here, 'cluster')) out.push(...findTests(p)); }
    else if (entry.name.endsWith('.test.js')) out.push(p);
  }
  return out.sort();
}

/** Longest one test may run, in milliseconds (the slowest, system tests, take well under a minute). */
const TEST_TIMEOUT_MS = 300_000;

async function main(): Promise<number> {
  const filters = process.argv.slice(2);
  const files = findTests(here).filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)));
  if (files.length === 0) {
    console.error('no test files matched');
    return 1;
  }
  let cluster: EmbeddedCluster | null = null;
  let tmp: string | null = null;
  const env = { ...process.env };
  if (!env.DATABASE_URL) {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-test-pg-'));
    fs.chmodSync(tmp, 0o777);
    cluster = await startEmbeddedPostgres({ dataDir: path.join(tmp, 'pg'), port: await freePort(), persistent: false });
    env.SWITCHYARD_TEST_ADMIN_URL = cluster.adminUrl;
  } else {
    env.SWITCHYARD_TEST_ADMIN_URL = env.DATABASE_URL;
  }
  const concurrency = Math.max(2, Math.min(4, os.availableParallelism() * 2));
  // A test that never settles fails after TEST_TIMEOUT_MS instead of holding CI until its limit.
  // (Not --test-force-exit: on Node 20 it drops some test reports of files that finish together.)
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ['--test', `--test-concurrency=${concurrency}`, `--test-timeout=${TEST_TIMEOUT_MS}`, ...files], { env, stdio: 'inherit' });
    child.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0)));
  });
  if (cluster) await cluster.stop().catch(() => {});
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  return code;
}

main().then((c) => process.exit(c), (e) => { console.error(e); process.exit(1); });
