/**
 * `make bench-propagation` (`node dist/bench/propagation.js`): how fast definition changes reach
 * an evaluation node over the real path — Postgres commit → NOTIFY → control-plane change feed →
 * gRPC Watch → node LMDB transaction.
 *
 * Questions answered, each against a same-run baseline:
 * 1. latency: a flag-change transaction → node has applied it (p50/p99/max, ms), versus a bare
 *    NOTIFY transaction → notification on a LISTENing connection, and versus the flag-change
 *    transaction alone (its commit is the floor; the difference is what sync adds);
 * 2. burst: BENCH_BURST changes committed by 8 concurrent writers while the node watches — how
 *    long after the last commit is it caught up (the writers, not the node, set the rate);
 *    then catch-up: the node restarts BENCH_BURST changes behind — how many changes per second
 *    does it apply from the tail;
 * 3. snapshot: a new node (empty data dir) — time to a complete snapshot of BENCH_SNAPSHOT_FLAGS
 *    flags, in entities per second;
 * 4. nodes (the issue's figure, bench/propagation-nodes.ts): BENCH_NODES node services (3) behind a
 *    control plane; from each management-API PATCH's 200 until every node serves the new version
 *    on POST /flags, over BENCH_NODE_CHANGES changes (200); target p99 < 20 ms.
 *
 * Setup: DATABASE_URL, or a throw-away embedded Postgres on a free port; server and node in this
 * process on loopback. Knobs (env): BENCH_LATENCY_N (300), BENCH_BURST (20000),
 * BENCH_SNAPSHOT_FLAGS (10000). Every wait is bounded (BENCH_TIMEOUT_S, 120).
 *
 * Latest run (defaults; Node 20.20, 2 vCPU AMD EPYC, embedded Postgres with fsync, same box):
 * 1. flag change → node applied p50 4.3 ms / p99 17 ms; the transaction alone p50 2.2 ms, so
 *    sync adds ~2 ms after commit (NOTIFY transaction → listener p50 0.5 ms);
 * 2. 20,000 changes from 8 writers: node caught up 7 ms after the last commit; a node restarted
 *    20,000 behind replays the tail at ~34,000 changes/s;
 * 3. snapshot of 10,002 entities into an empty node: 0.69 s (~14,600 entities/s).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { testConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { connect, type Sql } from '../src/control-plane/db/connect.js';
import { migrate } from '../src/control-plane/db/migrate.js';
import { startEmbeddedPostgres, type EmbeddedCluster } from '../src/control-plane/db/embedded.js';
import { appendChanges, currentRevision } from '../src/control-plane/change-log/store.js';
import { featureFlagEntity, projectEntity, type FeatureFlagRow } from '../src/contract/entities.js';
import { startGrpcServer } from '../src/control-plane/grpc/server.js';
import { startEvalNode, type EvalNode } from '../src/eval-node/node.js';
import { stablePort } from '../test/support/ports.js';
import { measureNodesPropagation } from './propagation-nodes.js';

const LATENCY_N = Number(process.env.BENCH_LATENCY_N ?? 300);
const BURST = Number(process.env.BENCH_BURST ?? 20_000);
const SNAPSHOT_FLAGS = Number(process.env.BENCH_SNAPSHOT_FLAGS ?? 10_000);
const NODES = Number(process.env.BENCH_NODES ?? 3);
const NODE_CHANGES = Number(process.env.BENCH_NODE_CHANGES ?? 200);
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_S ?? 120) * 1000;
const WRITERS = 8;
const CHANGES_PER_TX = 10;

const now = (): number => performance.now();
const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
const fmt = (ms: number): string => `${ms.toFixed(2)} ms`;

async function until(what: string, cond: () => boolean): Promise<void> {
  const deadline = now() + TIMEOUT_MS;
  while (!cond()) {
    if (now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

/** Waits for the node to apply `revision` (onApplied, not polling LMDB). */
function applied(node: EvalNode, revision: number): Promise<number> {
  return new Promise((resolve, reject) => {
    if (node.store.revision() >= revision) { resolve(now()); return; }
    const timer = setTimeout(() => { off(); reject(new Error(`revision ${revision} not applied`)); }, TIMEOUT_MS);
    const off = node.store.onApplied((rev) => { if (rev >= revision) { clearTimeout(timer); off(); resolve(now()); } });
  });
}

async function updateFlag(sql: Sql, id: number, n: number): Promise<number> {
  return sql.begin(async (tx) => {
    const [row] = await tx<FeatureFlagRow[]>`UPDATE feature_flags SET version = version + 1, name = ${`n${n}`} WHERE id = ${id} RETURNING *`;
    const [rev] = await appendChanges(tx, [{ projectId: row!.project_id, kind: 'feature_flag', entityId: String(id), op: 'upsert', payload: featureFlagEntity(row!) }]);
    return rev!;
  }) as Promise<number>;
}

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-prop-'));
  let cluster: EmbeddedCluster | null = null;
  let url = process.env.DATABASE_URL ?? null;
  if (!url) {
    fs.chmodSync(tmp, 0o777);
    cluster = await startEmbeddedPostgres({ dataDir: path.join(tmp, 'pg'), port: await stablePort(), persistent: false });
    const admin = connect(cluster.adminUrl, { max: 1 });
    await admin.unsafe('CREATE DATABASE bench_propagation');
    await admin.end();
    url = cluster.urlFor('bench_propagation');
  }
  const sql = connect(url, { max: 20 });
  const log = createLogger('silent');
  const grpcPort = await stablePort();
  const config = testConfig({ dataDir: path.join(tmp, 'node'), grpcPort, controlPlane: `127.0.0.1:${grpcPort}` });
  console.log(`node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu?'} ×${os.availableParallelism()}, ${cluster ? 'embedded' : 'external'} Postgres`);
  try {
    await migrate(sql);
    const [org] = await sql<{ id: number }[]>`INSERT INTO organizations (name) VALUES ('bench') RETURNING id`;
    const project = await sql.begin(async (tx) => {
      const [p] = await tx<{ id: number; organization_id: number; name: string; api_token: string; timezone: string }[]>`
        INSERT INTO projects (organization_id, name, api_token) VALUES (${org!.id}, 'bench', ${`phc_${crypto.randomBytes(12).toString('hex')}`}) RETURNING *`;
      await appendChanges(tx, [{ projectId: p!.id, kind: 'project', entityId: String(p!.id), op: 'upsert', payload: projectEntity(p!) }]);
      return p!;
    });
    const flagIds = await sql.begin(async (tx) => {
      const rows = await tx<FeatureFlagRow[]>`
        INSERT INTO feature_flags (project_id, key, filters)
        SELECT ${project.id}, 'flag-' || g, '{"groups":[{"properties":[],"rollout_percentage":50}]}'::jsonb FROM generate_series(1, ${SNAPSHOT_FLAGS}) g
        RETURNING *`;
      for (let i = 0; i < rows.length; i += 1000) {
        await appendChanges(tx, rows.slice(i, i + 1000).map((r) => ({ projectId: r.project_id, kind: 'feature_flag' as const, entityId: String(r.id), op: 'upsert' as const, payload: featureFlagEntity(r) })));
      }
      return rows.map((r) => r.id);
    });

    const server = await startGrpcServer({ sql, config, log, watch: { maxTailChanges: BURST * 2 } });
    // 3. snapshot of SNAPSHOT_FLAGS flags into an empty node.
    let t0 = now();
    const node = await startEvalNode(config, log, { nodeId: 'bench' });
    await until('complete snapshot', () => node.store.hasCompleteSnapshot());
    const snapshotMs = now() - t0;

    // 1. baseline: a transaction that only NOTIFYs, from its start to the notification arriving
    //    on a listening connection; then a flag change from the start of its transaction to the
    //    node having applied it. Both clocks start before the transaction, so both include it.
    const baseline: number[] = [];
    let notified: (() => void) | null = null;
    const listener = await sql.listen('bench_baseline', () => notified?.());
    for (let i = 0; i < LATENCY_N; i++) {
      const got = new Promise<void>((r) => { notified = r; });
      t0 = now();
      await sql.begin((tx) => tx`SELECT pg_notify('bench_baseline', 'x')`);
      await got;
      baseline.push(now() - t0);
    }
    await listener.unlisten();
    const latency: number[] = [];
    const commitOnly: number[] = [];
    for (let i = 0; i < LATENCY_N; i++) {
      const wait = applied(node, node.store.revision() + 1);
      t0 = now();
      await updateFlag(sql, flagIds[i % flagIds.length]!, i);
      commitOnly.push(now() - t0);
      latency.push((await wait) - t0);
    }

    // 2. burst from concurrent writers, node watching; then the same volume while it is down.
    const burst = async (): Promise<number> => {
      let lastCommit = 0;
      await Promise.all(Array.from({ length: WRITERS }, async (_, w) => {
        for (let done = w * CHANGES_PER_TX; done < BURST; done += WRITERS * CHANGES_PER_TX) {
          await sql.begin((tx) => appendChanges(tx, Array.from({ length: CHANGES_PER_TX }, (_, k) => ({
            projectId: project.id, kind: 'feature_flag' as const, entityId: String(flagIds[(done + k) % flagIds.length]),
            op: 'upsert' as const, payload: { id: flagIds[(done + k) % flagIds.length], team_id: project.id, key: `flag-${done + k}`, deleted: false, active: true, version: 2, filters: {} },
          }))));
        }
        lastCommit = Math.max(lastCommit, now());
      }));
      return lastCommit;
    };
    const start = await currentRevision(sql);
    t0 = now();
    const lastCommit = await burst();
    let head = await currentRevision(sql);
    const caughtUp = await applied(node, head);
    const burstChanges = head - start;
    const writeMs = lastCommit - t0;
    await node.close();
    const stoppedAt = head;
    await burst();
    head = await currentRevision(sql);
    const behind = head - stoppedAt;
    t0 = now();
    const restarted = await startEvalNode(config, log, { nodeId: 'bench' });
    const catchUpMs = (await applied(restarted, head)) - t0;
    if (restarted.sync.state().snapshotsApplied !== 0) throw new Error('catch-up took a snapshot, not the tail');
    await restarted.close();

    baseline.sort((a, b) => a - b);
    latency.sort((a, b) => a - b);
    commitOnly.sort((a, b) => a - b);
    console.log(`\n1. latency, transaction start → applied on the node (${LATENCY_N} sequential changes)`);
    console.log(`   baseline NOTIFY transaction → listener: p50 ${fmt(pct(baseline, 0.5))}  p99 ${fmt(pct(baseline, 0.99))}`);
    console.log(`   flag change → node applied:           p50 ${fmt(pct(latency, 0.5))}  p99 ${fmt(pct(latency, 0.99))}  max ${fmt(latency[latency.length - 1]!)}`);
    console.log(`   the flag-change transaction alone:    p50 ${fmt(pct(commitOnly, 0.5))}  p99 ${fmt(pct(commitOnly, 0.99))}`);
    console.log(`   → after its commit the node lags by p50 ${fmt(pct(latency, 0.5) - pct(commitOnly, 0.5))}; ratio end-to-end / commit p50: ${(pct(latency, 0.5) / pct(commitOnly, 0.5)).toFixed(2)}×`);
    console.log(`\n2. burst: ${burstChanges} changes from ${WRITERS} writers (${CHANGES_PER_TX} per transaction) in ${fmt(writeMs)} (${Math.round(burstChanges / (writeMs / 1000))} commits/s of changes)`);
    console.log(`   node caught up ${fmt(Math.max(0, caughtUp - lastCommit))} after the last commit`);
    console.log(`   catch-up from ${behind} behind after a restart: ${fmt(catchUpMs)} → ${Math.round(behind / (catchUpMs / 1000))} changes/s (baseline: the writers' rate above)`);
    console.log(`\n3. snapshot of ${SNAPSHOT_FLAGS + 2} entities into an empty node: ${fmt(snapshotMs)} → ${Math.round((SNAPSHOT_FLAGS + 2) / (snapshotMs / 1000))} entities/s`);

    await server.close();

    // 4. the issue's figure: PATCH 200 → every one of NODES nodes serves it, on its own database.
    await sql.unsafe('DROP DATABASE IF EXISTS bench_propagation_nodes WITH (FORCE)');
    await sql.unsafe('CREATE DATABASE bench_propagation_nodes');
    const nodesUrl = new URL(url);
    nodesUrl.pathname = '/bench_propagation_nodes';
    const p4 = await measureNodesPropagation(nodesUrl.toString(), NODES, NODE_CHANGES, TIMEOUT_MS);
    for (const a of [p4.samples, p4.patchMs, p4.flagsMs]) a.sort((x, y) => x - y);
    console.log(`\n4. ${NODES} nodes, management-API PATCH 200 → every node serves it on /flags (${NODE_CHANGES} changes)`);
    console.log(`   propagation:                 p50 ${fmt(pct(p4.samples, 0.5))}  p99 ${fmt(pct(p4.samples, 0.99))}  max ${fmt(p4.samples[p4.samples.length - 1]!)}  (target p99 < 20 ms)`);
    console.log(`   baseline PATCH round trip:   p50 ${fmt(pct(p4.patchMs, 0.5))}  p99 ${fmt(pct(p4.patchMs, 0.99))}`);
    console.log(`   baseline /flags round trip:  p50 ${fmt(pct(p4.flagsMs, 0.5))}  p99 ${fmt(pct(p4.flagsMs, 0.99))}`);
    console.log(`   baseline NOTIFY round trip:  p50 ${fmt(pct(baseline, 0.5))}  p99 ${fmt(pct(baseline, 0.99))}  (question 1's, same run)`);
    console.log(`   ratio propagation / PATCH p50: ${(pct(p4.samples, 0.5) / pct(p4.patchMs, 0.5)).toFixed(2)}×`);
  } finally {
    await sql.end({ timeout: 5 });
    if (cluster) await cluster.stop().catch(() => {});
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (e: unknown) => { console.error(e); process.exit(1); });
