/**
 * `make bench-scale` (`node dist/bench/scale.js`): how a node copes with many
 * persons. Loads BENCH_PERSONS persons (default 1,000,000; `N=` in make) as `$identify` events
 * through a node's `/batch/` (500 events a request, 4 senders), then prints:
 *
 * - the accept rate (events/s answered 200), the ingestion rate (every person in Postgres) and the
 *   end-to-end rate (persons on the node, from the first request to the node's revision reaching
 *   the change log's head after ingestion), beside the floor below (ratio);
 * - last, as many plain events (a `$pageview` of each person, no person change): their accept rate,
 *   their end-to-end rate (every one in Postgres) and CPU per event, beside their own floor (the
 *   COPY floor's events and event-times rows alone, no LMDB put: nodes get nothing);
 * - the node's RSS, anonymous and file-backed resident memory after the load and after a restart
 *   of the same node (within 1.3×), its LMDB file and map size;
 * - how long a fresh node takes to become ready from a (paged) snapshot, with the CPU of the node
 *   and of the control plane meanwhile;
 * - the CPU per person of each part over the load (this process: senders and control plane;
 *   Postgres; the node), and the floor of a person change on this machine (bench/person-floor.ts:
 *   a rolled-back COPY of its rows plus bare LMDB puts) with the persons/s that floor allows;
 * - LMDB and Postgres bytes per person;
 * - `/flags?v=2` req/s and p99 for stored random persons (no properties in the request: the node
 *   reads them from LMDB) with 50 and then 1,000 flags over their properties (autocannon,
 *   BENCH_CONNECTIONS / BENCH_DURATION_S of bench/load.ts).
 *
 * BENCH_MEMORY_METRICS=1 also prints the node's memory metrics at the after-the-load point.
 *
 * Setup: a throw-away embedded Postgres (or DATABASE_URL), the control plane in this process, the
 * node as its own process (`switchyard eval-node`, so its memory is its own). Loopback only,
 * bounded: every wait gives up after BENCH_TIMEOUT_S (600).
 *
 * Current figures beside their same-run floors: docs/benchmarks.md (history in git).
 * Knobs (env): BENCH_PERSONS, BENCH_LOAD_ONLY=1 (the two loads and the floors only: no memory,
 * restart, fresh node or /flags figures), BENCH_NODE_ARGS (extra flags of the loaded node, e.g.
 * `--cpu-prof`), BENCH_SNAPSHOT_IMAGE=0 (no image: the fresh node takes the Watch
 * snapshot), BENCH_MEMORY_METRICS=1, BENCH_HEAP_SNAPSHOT=1, BENCH_NODE_LOG_LEVEL (nodes' logs to
 * stderr), BENCH_FRESH_NODE_ARGS, BENCH_TIMEOUT_S, and bench/load.ts's.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { testConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { startControlPlane } from '../src/control-plane/index.js';
import { newPersonalApiKey } from '../src/control-plane/keys/tokens.js';
import { stablePort } from '../test/support/ports.js';
import { startBenchDatabase } from './database.js';
import { processCpuUs, processTreeCpuUs } from './proc.js';
import { benchPersonProperties, lmdbPutFloor, postgresWriteFloor } from './person-floor.js';
import { uuidv7 } from '../src/eval-node/capture/events.js';
import { seedFlag } from '../test/support/seed.js';
import { CONNECTIONS, DURATION_S, load } from './load.js';
import { prng } from './flags-workload.js';
import { SETTLE_AFTER_MS, SETTLE_PASSES } from '../src/eval-node/memory/release.js';

const PERSONS = Number(process.env.BENCH_PERSONS ?? 1_000_000);
/** BENCH_LOAD_ONLY=1: the load phases (persons, plain events) and their floors only. */
const LOAD_ONLY = process.env.BENCH_LOAD_ONLY === '1';
const PER_REQUEST = 500;
const SENDERS = 4;
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_S ?? 600) * 1000;
const TOKEN = 'phc_benchScaleToken0000000000000001';
const CLI = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'cli.js');

function seconds(fromMs: number): number { return (performance.now() - fromMs) / 1000; }

/** Poll interval of the waits that count rows (each count costs Postgres a scan). */
const COUNT_POLL_MS = 250;

async function until(what: string, check: () => Promise<boolean>, pollMs = 100): Promise<void> {
  const end = Date.now() + TIMEOUT_MS;
  while (!(await check().catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** Resident memory of `pid` in MB: total, anonymous, file-backed (/proc/<pid>/status). */
function memory(pid: number): { rss: number; anon: number; file: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0) / 1024;
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
}

interface Node { child: ChildProcess; url: string; stop(): Promise<void> }

async function startNode(dataDir: string, controlPlane: string, clusterToken: string, nodeArgs: string[] = []): Promise<Node> {
  const port = await stablePort();
  const child = spawn(process.execPath, [...nodeArgs, CLI, 'eval-node'], {
    env: { ...process.env, SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_FLAGS_PORT: String(port), SWITCHYARD_CONTROL_PLANE: controlPlane, SWITCHYARD_CLUSTER_TOKEN: clusterToken, SWITCHYARD_LOG_LEVEL: process.env.BENCH_NODE_LOG_LEVEL ?? 'warn' },
    // BENCH_NODE_LOG_LEVEL (e.g. info): the nodes' logs (their stdout) go to this bench's stderr.
    stdio: ['ignore', process.env.BENCH_NODE_LOG_LEVEL ? 2 : 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    child, url,
    stop: () => new Promise((resolve) => { child.once('exit', () => resolve()); child.kill('SIGTERM'); }),
  };
}

async function revisionOf(url: string): Promise<number> {
  const r = await fetch(`${url}/_ready`);
  return r.ok ? Number(((await r.json()) as { revision: number }).revision) : -1;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-scale-'));
  fs.chmodSync(dir, 0o777);
  const db = await startBenchDatabase(dir, 'switchyard_bench_scale_');
  const grpcPort = await stablePort();
  // The control plane keeps its snapshot image unless BENCH_SNAPSHOT_IMAGE=0 (then a fresh node
  // takes the Watch snapshot, as it did before images).
  const snapshotImage = process.env.BENCH_SNAPSHOT_IMAGE !== '0';
  const config = testConfig({ dataDir: path.join(dir, 'cp'), grpcPort, bootstrapPersonalApiKey: newPersonalApiKey(), bootstrapProjectApiKey: TOKEN, snapshotImage });
  const cp = await startControlPlane(config, createLogger('warn'), db.url);
  const controlPlane = `127.0.0.1:${grpcPort}`;
  const nodes: Node[] = [];
  try {
    const nodeDir = path.join(dir, 'node-a');
    // BENCH_HEAP_SNAPSHOT=1: the loaded node writes a V8 heap snapshot of its main thread into the
    // working directory once the memory is measured (what the load left behind on the heap).
    const heapSnapshot = Boolean(process.env.BENCH_HEAP_SNAPSHOT);
    let node = await startNode(nodeDir, controlPlane, config.clusterToken!, [...(heapSnapshot ? ['--heapsnapshot-signal=SIGUSR2'] : []), ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)]);
    nodes.push(node);
    await until('the node is ready', async () => (await revisionOf(node.url)) >= 0);

    process.stderr.write(`loading ${PERSONS.toLocaleString()} persons through /batch/…\n`);
    // CPU of each part over the load: this process (the senders and the control plane, its
    // snapshot image included), the node, and the embedded Postgres server (null on DATABASE_URL).
    const postmaster = db.postmasterPid();
    const postgresCpuUs = () => (postmaster === null ? Number.NaN : processTreeCpuUs(postmaster));
    const cpu0 = { own: process.cpuUsage(), node: processCpuUs(node.child.pid!), postgres: postgresCpuUs() };
    let refused = 0;
    /** Sends PERSONS events made by `make` through /batch/ (PER_REQUEST a request, SENDERS senders). */
    const send = async (make: (i: number) => object): Promise<void> => {
      let next = 0;
      const sender = async () => {
        for (;;) {
          const from = next;
          if (from >= PERSONS) return;
          next += PER_REQUEST;
          const batch = Array.from({ length: Math.min(PER_REQUEST, PERSONS - from) }, (_, i) => make(from + i));
          for (;;) {
            const r = await fetch(`${node.url}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: TOKEN, batch }) });
            await r.arrayBuffer();
            if (r.ok) break;
            refused++;
            await new Promise((res) => setTimeout(res, Number(r.headers.get('retry-after') ?? 1) * 1000));
          }
        }
      };
      await Promise.all(Array.from({ length: SENDERS }, sender));
    };
    const t0 = performance.now();
    // Time-ordered ids, as posthog-js and posthog-node send them.
    await send((i) => ({ uuid: uuidv7(), event: '$identify', distinct_id: `person-${i}`, properties: { $set: benchPersonProperties(`person-${i}`, i) } }));
    const acceptS = seconds(t0);
    await until('every person in Postgres', async () => {
      const [r] = await cp.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM persons`;
      return r!.n >= PERSONS;
    }, COUNT_POLL_MS);
    const ingestedS = seconds(t0);
    const [head] = await cp.sql<{ r: number }[]>`SELECT max(revision)::bigint AS r FROM change_log`;
    await until('the node at the head revision', async () => (await revisionOf(node.url)) >= Number(head!.r));
    const endToEndS = seconds(t0);
    const ownCpu = process.cpuUsage(cpu0.own);
    const loadCpu = { own: (ownCpu.user + ownCpu.system) / PERSONS, node: (processCpuUs(node.child.pid!) - cpu0.node) / PERSONS, postgres: (postgresCpuUs() - cpu0.postgres) / PERSONS };
    const projectId = cp.bootstrap.projectId;
    const extra: string[] = [];
    if (!LOAD_ONLY) {
      // Steady state after the load: the node hands back the memory the load left ~1 s after its
      // writes go quiet (memory/release.ts), then runs its settling GCs SETTLE_AFTER_MS apart. The
      // node is left alone meanwhile (V8 shrinks a young generation only once the thread's
      // allocation rate over ~5 s is low, and every /metrics reads /proc/self/smaps), then checked
      // to have released since the load ended.
      const releases = async () => Number(/^switchyard_node_memory_releases_total (\d+)/m.exec(await (await fetch(`${node.url}/metrics`)).text())?.[1] ?? 0);
      const releasedBefore = await releases();
      await new Promise((r) => setTimeout(r, 3000 + SETTLE_AFTER_MS * SETTLE_PASSES + 2000));
      if (await releases() === releasedBefore) process.stderr.write('note: the node did not release memory after the load\n');
      const loaded = memory(node.child.pid!);
      if (process.env.BENCH_MEMORY_METRICS) {
        // The node's own account of that memory (V8 heaps of every thread, external, LMDB resident).
        const names = /^switchyard_node_(nodejs_heap_size|nodejs_heap_space_size_total_bytes|io_thread_heap|nodejs_external|memory_releases|lmdb_resident)/;
        process.stderr.write(`${(await (await fetch(`${node.url}/metrics`)).text()).split('\n').filter((l) => names.test(l)).join('\n')}\n`);
        // And the kernel's: the largest anonymous mappings by resident size (V8 pages, malloc arenas, [heap]).
        const maps = fs.readFileSync(`/proc/${node.child.pid}/smaps`, 'utf8').split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/);
        const anon = maps.map((m) => ({ head: m.slice(0, m.indexOf('\n')), anon: Number(/^Anonymous:\s+(\d+)/m.exec(m)?.[1] ?? 0) }))
          .filter((m) => m.anon > 0).sort((a, b) => b.anon - a.anon);
        const total = anon.reduce((t, m) => t + m.anon, 0);
        process.stderr.write(`anonymous ${Math.round(total / 1024)} MB in ${anon.length} mappings; largest:\n${anon.slice(0, 12).map((m) => `  ${Math.round(m.anon / 1024)} MB  ${m.head}`).join('\n')}\n`);
      }
      if (heapSnapshot) {
        const before = new Set(fs.readdirSync('.'));
        process.kill(node.child.pid!, 'SIGUSR2');
        await until('the heap snapshot', async () => fs.readdirSync('.').some((f) => !before.has(f) && f.endsWith('.heapsnapshot')));
        await new Promise((r) => setTimeout(r, 5000));
      }
      const lmdbBytes = fs.statSync(path.join(nodeDir, 'lmdb', 'data.mdb')).size;
      const metrics = await (await fetch(`${node.url}/metrics`)).text();
      const mapBytes = Number(/^switchyard_node_lmdb_map_bytes\{env="store"\} (\d+)/m.exec(metrics)?.[1] ?? 0);

      await node.stop();
      nodes.length = 0;
      node = await startNode(nodeDir, controlPlane, config.clusterToken!);
      nodes.push(node);
      await until('the restarted node is ready', async () => (await revisionOf(node.url)) >= Number(head!.r));
      await new Promise((r) => setTimeout(r, 2000));
      const restarted = memory(node.child.pid!);

      const t1 = performance.now();
      const cpBefore = process.cpuUsage();
      // BENCH_FRESH_NODE_ARGS: extra node flags for the bootstrapping node (e.g. --cpu-prof).
      const fresh = await startNode(path.join(dir, 'node-b'), controlPlane, config.clusterToken!, (process.env.BENCH_FRESH_NODE_ARGS ?? '').split(' ').filter(Boolean));
      nodes.push(fresh);
      let nodeCpuS = 0;
      await until('a fresh node ready', async () => {
        nodeCpuS = processCpuUs(fresh.child.pid!) / 1e6;
        return (await revisionOf(fresh.url)) >= Number(head!.r);
      });
      const bootstrapS = seconds(t1);
      const freshSnapshots = Number(/^switchyard_node_sync_snapshots_applied_total (\d+)/m.exec(await (await fetch(`${fresh.url}/metrics`)).text())?.[1] ?? -1);
      const bootstrapPath = freshSnapshots === 0 ? 'from the control plane\'s snapshot image' : 'through a Watch snapshot';
      const cpCpu = process.cpuUsage(cpBefore);
      const cpCpuS = (cpCpu.user + cpCpu.system) / 1e6;

      const [pg] = await cp.sql<{ b: number }[]>`SELECT (pg_total_relation_size('persons') + pg_total_relation_size('person_distinct_ids')
        + pg_total_relation_size('change_log') + (SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0)
          FROM pg_inherits i WHERE i.inhparent = 'events'::regclass))::float8 AS b`;

      // /flags for stored persons (no person properties in the request: the node reads them from
      // LMDB), with 50 and then 1,000 flags over those properties.
      let created = 0;
      const createFlags = async (upTo: number): Promise<void> => {
        for (; created < upTo; created++) {
          const i = created;
          const property = [
            [],
            [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro', 'enterprise'] }],
            [{ key: 'email', type: 'person', operator: 'icontains', value: `-${i % 10}@` }],
            [{ key: 'age', type: 'person', operator: 'gt', value: String(i % 90) }],
          ][i % 4];
          // Written as the API writes them (row + change-log entry), without the API's rate limit.
          await seedFlag(cp.sql, projectId, `scale-${i}`, { groups: [{ properties: property, rollout_percentage: 50 + (i % 50) }] });
        }
        const [h] = await cp.sql<{ r: number }[]>`SELECT max(revision)::bigint AS r FROM change_log`;
        await until('the node has the flags', async () => (await revisionOf(node.url)) >= Number(h!.r));
      };
      const rnd = prng(11);
      const bodies = Array.from({ length: 2_000 }, () => JSON.stringify({ api_key: TOKEN, distinct_id: `person-${Math.floor(rnd() * PERSONS)}` }));
      const flagsRuns: { flags: number; rps: number; p99: number; non2xx: number; bytes: number }[] = [];
      for (const n of [50, 1_000]) {
        await createFlags(n);
        const sample = await fetch(`${node.url}/flags?v=2`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bodies[0] });
        const sampleBody = await sample.text();
        const evaluated = Object.keys((JSON.parse(sampleBody) as { flags: Record<string, unknown> }).flags).length;
        if (evaluated !== n) throw new Error(`expected ${n} flags in the answer, got ${evaluated}`);
        const r = await load(`${node.url}/flags?v=2`, DURATION_S, undefined, bodies);
        flagsRuns.push({ flags: n, rps: r.rps, p99: r.p99, non2xx: r.non2xx + r.errors, bytes: sampleBody.length });
      }
      extra.push(
        `| fresh node ready (${bootstrapPath}) | ${bootstrapS.toFixed(1)} s = ${Math.round(PERSONS / bootstrapS).toLocaleString()} persons/s; CPU meanwhile: node ${nodeCpuS.toFixed(1)} s, control plane ${cpCpuS.toFixed(1)} s |`,
        `| node RSS after the load: total / anon / file | ${loaded.rss.toFixed(0)} / ${loaded.anon.toFixed(0)} / ${loaded.file.toFixed(0)} MB |`,
        `| same node restarted | ${restarted.rss.toFixed(0)} / ${restarted.anon.toFixed(0)} / ${restarted.file.toFixed(0)} MB (after/restarted ${(loaded.rss / restarted.rss).toFixed(2)}×; target ≤ 1.3×) |`,
        `| LMDB file / map | ${(lmdbBytes / 2 ** 20).toFixed(0)} MB / ${(mapBytes / 2 ** 30).toFixed(0)} GiB; ${(lmdbBytes / PERSONS).toFixed(0)} B per person |`,
        `| Postgres (persons, distinct ids, change log, events) | ${(pg!.b / PERSONS).toFixed(0)} B per person |`,
        ...flagsRuns.map((f) => `| /flags?v=2, ${f.flags.toLocaleString()} flags, stored random persons (${CONNECTIONS} connections, ${DURATION_S} s) | ${Math.round(f.rps).toLocaleString()} req/s, p99 ${f.p99} ms, ${(f.bytes / 1024).toFixed(0)} KB answers${f.non2xx > 0 ? `, ${f.non2xx} failed` : ''} |`),
      );
    }
    // Plain events (no person change): a `$pageview` of every loaded person, until all are in
    // Postgres (nothing reaches the nodes), after the figures above so that they measure the
    // persons' load alone. Their floor: the COPY floor's events and event-times rows.
    process.stderr.write(`sending ${PERSONS.toLocaleString()} plain events…\n`);
    // uuidv7 orders by millisecond only: every plain event's uuid is drawn a millisecond or more
    // after this one, so it sorts after it.
    const firstPlain = uuidv7();
    await new Promise((r) => setTimeout(r, 5));
    const plainCpu0 = { own: process.cpuUsage(), node: processCpuUs(node.child.pid!), postgres: postgresCpuUs() };
    const t2 = performance.now();
    await send((i) => ({ uuid: uuidv7(), event: '$pageview', distinct_id: `person-${i}`, properties: { $current_url: `https://example.com/p/${i % 100}` } }));
    const plainAcceptS = seconds(t2);
    await until('every plain event in Postgres', async () => {
      // The events after the first plain one (uuidv7: time-ordered), through the events key.
      const [r] = await cp.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE project_id = ${cp.bootstrap.projectId} AND uuid >= ${firstPlain}::uuid`;
      return r!.n >= PERSONS;
    }, COUNT_POLL_MS);
    const plainS = seconds(t2);
    const plainOwn = process.cpuUsage(plainCpu0.own);
    const plainCpu = { own: (plainOwn.user + plainOwn.system) / PERSONS, node: (processCpuUs(node.child.pid!) - plainCpu0.node) / PERSONS, postgres: (postgresCpuUs() - plainCpu0.postgres) / PERSONS };
    // The floor (bench/person-floor.ts): the least CPU a person change can cost here.
    const floorN = Math.min(PERSONS, 100_000);
    const pgFloor = postmaster === null ? null : await postgresWriteFloor(cp.sql, projectId, floorN, postgresCpuUs);
    const putFloor = await lmdbPutFloor(dir, floorN);
    const cores = os.availableParallelism();
    const puts = snapshotImage ? 2 : 1; // the node's, and the control plane's image's
    const loadTotal = loadCpu.own + loadCpu.node + loadCpu.postgres;
    const floorTotal = (pgFloor?.total ?? Number.NaN) + puts * putFloor;
    const floorRate = (cores * 1e6) / floorTotal;
    // Plain events' floor: the events and event-times rows of the same COPY floor, no LMDB put.
    const plainFloor = (pgFloor?.tables ?? []).filter((t) => t.table === 'events' || t.table === 'person_event_times').reduce((x, t) => x + t.us, 0) || Number.NaN;
    const plainFloorRate = (cores * 1e6) / plainFloor;
    const out = [
      `${PERSONS.toLocaleString()} persons as $identify events through /batch/ (${PER_REQUEST} a request, ${SENDERS} senders); Node ${process.version}, ${os.availableParallelism()} vCPU`,
      '',
      '| figure | value |',
      '|---|---:|',
      `| accepted (200) | ${Math.round(PERSONS / acceptS).toLocaleString()} events/s (${acceptS.toFixed(1)} s; ${refused} refusals retried) |`,
      `| ingested: persons in Postgres | ${Math.round(PERSONS / ingestedS).toLocaleString()} persons/s (${ingestedS.toFixed(1)} s) |`,
      `| end to end: persons on the node | ${Math.round(PERSONS / endToEndS).toLocaleString()} persons/s (${endToEndS.toFixed(1)} s) |`,
      `| CPU per person over the load | senders and control plane ${loadCpu.own.toFixed(0)} µs, node ${loadCpu.node.toFixed(0)} µs, Postgres ${postmaster === null ? 'n/a (DATABASE_URL)' : `${loadCpu.postgres.toFixed(0)} µs = ${loadTotal.toFixed(0)} µs; ${cores} cores ${((100 * loadTotal * PERSONS) / (endToEndS * 1e6 * cores)).toFixed(0)} % busy`} |`,
      `| floor: Postgres COPY of a person's rows (${floorN.toLocaleString()}, rolled back) | ${pgFloor ? `${pgFloor.total.toFixed(1)} µs (${pgFloor.tables.map((t) => `${t.table} ${t.us.toFixed(1)}`).join(', ')})` : 'n/a (DATABASE_URL)'} |`,
      `| floor: bare LMDB put of a person | ${putFloor.toFixed(1)} µs, ×${puts} (the node${snapshotImage ? ' and the snapshot image' : ''}) |`,
      `| floor total → most persons/s these ${cores} cores allow | ${floorTotal.toFixed(0)} µs → ${Number.isFinite(floorRate) ? Math.round(floorRate).toLocaleString() : 'n/a'} persons/s before capture, gRPC, decoding and person decisions (target 30,000; end to end here ${Math.round(PERSONS / endToEndS).toLocaleString()} = ${(PERSONS / endToEndS / floorRate).toFixed(2)}×) |`,
      `| plain events (no person change) accepted (200) | ${Math.round(PERSONS / plainAcceptS).toLocaleString()} events/s (${plainAcceptS.toFixed(1)} s) |`,
      `| plain events end to end: in Postgres | ${Math.round(PERSONS / plainS).toLocaleString()} events/s (${plainS.toFixed(1)} s); floor ${Number.isFinite(plainFloorRate) ? Math.round(plainFloorRate).toLocaleString() : 'n/a'} events/s (COPY of the events and event-times rows ${plainFloor.toFixed(1)} µs) = ${(PERSONS / plainS / plainFloorRate).toFixed(2)}× |`,
      `| CPU per plain event | senders and control plane ${plainCpu.own.toFixed(0)} µs, node ${plainCpu.node.toFixed(0)} µs, Postgres ${plainCpu.postgres.toFixed(0)} µs |`,
      ...extra,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    for (const n of nodes) await n.stop().catch(() => {});
    await cp.close();
    await db.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (e) => { process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`); process.exit(1); });
