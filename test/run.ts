/**
 * `make test`: runs every `*.test.js` under dist/test on a few worker processes, each running
 * files one after another as it takes them from one queue, longest first (test/support/schedule.ts,
 * order.ts), and ends with a summary listing the slowest files (test/support/summary.ts). Exits 1
 * when any file fails.
 *
 * Unless DATABASE_URL is set, one throw-away embedded Postgres cluster is started for the whole
 * run (test/support/postgres.ts). Either way one migrated template database is built first;
 * each suite's database is a copy of it (test/support/db.ts).
 *
 * Arguments are substrings that select test files (`make test TEST_ARGS=evaluation`).
 * Environment: TEST_CONCURRENCY (workers, so files at once; default below), TEST_FILE_TIMEOUT_MS (a file's
 * time limit, default 180000), TEST_QUIET=1 (print only failing files' output).
 * test/cluster/ is left to `make test-cluster` (it needs root and network namespaces).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EmbeddedCluster } from '../src/control-plane/db/embedded.js';
import { TEMPLATE_ENV, THROWAWAY_CLUSTER_ENV } from './support/db.js';
import { createTemplateDatabase, startTestPostgres } from './support/postgres.js';
import { orderFiles, readDurations, writeDurations, type Durations } from './support/order.js';
import { killRunning, runFiles } from './support/schedule.js';
import { fileFigures, fileOk, formatSummary, unitName } from './support/summary.js';
import { postgresCpuMs } from './support/postgres-cpu.js';
import { scratchRoot } from './support/scratch.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** Where each run leaves its per-file wall times for the next run's order. */
const durationsFile = path.join(here, 'durations.json');
/**
 * Committed wall times of a full run (test/durations.json): the order of a fresh clone's first
 * run, and of any file this checkout has not timed yet. Only the order depends on them.
 */
const seedDurationsFile = path.join(here, '..', '..', 'test', 'durations.json');
/** Where each run leaves every file's wall and CPU (the summary lists only the top ones). */
const figuresFile = path.join(here, 'last-run.json');

/**
 * Longest one file may run, in milliseconds, teardown included: then its process group is killed
 * and it fails naming the test that was running. Far above any file's time on an idle 2-core
 * machine (about a minute at most); a machine shared with other work can take several times
 * longer. Tests' own `timeout` options still apply within it.
 */
const FILE_TIMEOUT_MS = Number(process.env.TEST_FILE_TIMEOUT_MS) || 180_000;
/** How long the run waits for its Postgres to stop, in milliseconds. */
const STOP_TIMEOUT_MS = 30_000;

/**
 * Files run at once: 2 per core, at least 4, at most 8. The run is CPU-bound (each file's
 * process loads the product's modules, Postgres and the nodes compute): 4 files keep 2 cores
 * busy through the waits on sockets and child processes; more only stretches each file.
 */
function concurrency(): number {
  const given = Number(process.env.TEST_CONCURRENCY);
  if (Number.isInteger(given) && given > 0) return given;
  return Math.max(4, Math.min(8, os.availableParallelism() * 2));
}

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) { if (p !== path.join(here, 'cluster')) out.push(...findTests(p)); }
    else if (entry.name.endsWith('.test.js')) out.push(p);
  }
  return out.sort();
}

const rel = (file: string): string => path.relative(here, file);

async function main(): Promise<number> {
  const started = Date.now();
  const filters = process.argv.slice(2);
  // Filters match the path from the repository (`test/…`), so a checkout's own path matches nothing.
  const files = findTests(here).filter((f) => filters.length === 0 || filters.some((s) => `test/${rel(f)}`.includes(s)));
  if (files.length === 0) {
    console.error('no test files matched');
    return 1;
  }
  let cluster: EmbeddedCluster | null = null;
  const tmp = fs.mkdtempSync(path.join(scratchRoot(), 'switchyard-test-'));
  fs.chmodSync(tmp, 0o777);
  // Files' own temporary directories go inside the run's, and go with it.
  const filesTmp = fs.mkdtempSync(path.join(tmp, 'files-'));
  fs.chmodSync(filesTmp, 0o777);
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: filesTmp };
  let dropTemplate: (() => Promise<void>) | null = null;
  const cleanUp = async (): Promise<void> => {
    killRunning();
    await dropTemplate?.().catch(() => {});
    // Bounded: a Postgres that does not stop must not hold the run (its files go with tmp).
    if (cluster) await Promise.race([cluster.stop().catch(() => {}), new Promise((r) => setTimeout(r, STOP_TIMEOUT_MS).unref())]);
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => { void cleanUp().finally(() => process.exit(130)); });
  }
  try {
    if (!env.DATABASE_URL) {
      cluster = await startTestPostgres(tmp);
      env.SWITCHYARD_TEST_ADMIN_URL = cluster.adminUrl;
      env[THROWAWAY_CLUSTER_ENV] = '1';
    } else {
      delete env[THROWAWAY_CLUSTER_ENV];
      env.SWITCHYARD_TEST_ADMIN_URL = env.DATABASE_URL;
    }
    const template = await createTemplateDatabase(env.SWITCHYARD_TEST_ADMIN_URL);
    dropTemplate = template.drop;
    env[TEMPLATE_ENV] = template.name;
    console.log(`ℹ Postgres and the template database ready in ${((Date.now() - started) / 1000).toFixed(1)} s; ${files.length} files, ${concurrency()} at a time`);
    const scratchDir = fs.mkdtempSync(path.join(tmp, 'counts-'));
    const quiet = process.env.TEST_QUIET === '1';
    const ordered = orderFiles(files, { ...readDurations(seedDurationsFile), ...readDurations(durationsFile) }, rel);
    const runs = await runFiles(ordered, {
      concurrency: concurrency(), env, scratchDir, fileTimeoutMs: FILE_TIMEOUT_MS,
      onFile(name, output, ok) {
        if (!(quiet && ok)) process.stdout.write(`\n── ${name}\n${output}`);
      },
      onDone(run) {
        if (quiet && fileOk(run)) return;
        process.stdout.write(`\n── ${unitName(run, rel)}: the process ended after ${(run.durationMs / 1000).toFixed(1)} s${run.exitCode === 0 ? '' : ` (exit ${run.exitCode ?? 'on a signal'})`}\n${run.output}`);
      },
    });
    const measured: Durations = {};
    for (const r of runs) {
      if (r.timedOut) continue;
      if (r.files.length === 1) measured[rel(r.file)] = r.durationMs;
      else for (const t of r.timings) measured[t.file] = t.wallMs;
    }
    try { writeDurations(durationsFile, measured); } catch { /* only the next run's order suffers */ }
    try { fs.writeFileSync(figuresFile, `${JSON.stringify(fileFigures(runs, rel), null, 1)}\n`); } catch { /* the summary still prints */ }
    console.log(formatSummary(runs, Date.now() - started, rel, cluster ? postgresCpuMs(path.join(tmp, 'pg')) : null));
    return runs.every(fileOk) ? 0 : 1;
  } finally {
    await cleanUp();
  }
}

main().then((c) => process.exit(c), (e) => { console.error(e); process.exit(1); });
