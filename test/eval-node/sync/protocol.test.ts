/**
 * The protocol version (contract/protocol.ts) between real gRPC servers and real nodes on a
 * real database: versions one apart interoperate both ways; a node refuses a control plane two
 * versions away (clear error line, nothing applied, still serving its store); a control plane
 * refuses a node two versions away on every call (FAILED_PRECONDITION naming both versions).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { testConfig, type Config } from '../../../src/config.js';
import { createLogger } from '../../../src/log.js';
import { startGrpcServer, type GrpcServer } from '../../../src/control-plane/grpc/server.js';
import { currentRevision } from '../../../src/control-plane/change-log/store.js';
import { startEvalNode, type EvalNode } from '../../../src/eval-node/node.js';
import { switchyardService } from '../../../src/contract/loader.js';
import { clusterTokenMetadata } from '../../../src/contract/metadata.js';
import { PROTOCOL_METADATA_KEY, PROTOCOL_VERSION, protocolCompatible, protocolOf, protocolMetadata } from '../../../src/contract/protocol.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { seedFlag, seedOrganization, seedProject } from '../../support/seed.js';
import { TEST_BACKOFF } from '../../support/sync.js';
import { waitFor } from '../../support/wait.js';

const V = PROTOCOL_VERSION;
const silent = createLogger('silent');

test('protocol versions interoperate when at most one apart; a missing header is the base version', () => {
  const cases: { name: string; ours: number; theirs: number; ok: boolean }[] = [
    { name: 'same', ours: 3, theirs: 3, ok: true },
    { name: 'one newer', ours: 3, theirs: 4, ok: true },
    { name: 'one older', ours: 3, theirs: 2, ok: true },
    { name: 'two newer', ours: 3, theirs: 5, ok: false },
    { name: 'two older', ours: 3, theirs: 1, ok: false },
    { name: 'unreadable', ours: 3, theirs: Number.NaN, ok: false },
  ];
  for (const c of cases) assert.equal(protocolCompatible(c.ours, c.theirs), c.ok, c.name);
  assert.equal(protocolOf(new grpc.Metadata()), 1);
  assert.equal(protocolOf(protocolMetadata(7)), 7);
  const bad = new grpc.Metadata();
  bad.set(PROTOCOL_METADATA_KEY, 'seven');
  assert.ok(Number.isNaN(protocolOf(bad)));
});

/** A database with one project and flag, and what starts servers and nodes on it (ports bound as 0). */
async function world() {
  const db: TestDatabase = await createTestDatabase();
  const org = await seedOrganization(db.sql);
  const project = await seedProject(db.sql, org);
  await seedFlag(db.sql, project.id, 'first');
  const dirs: string[] = [];
  const servers: GrpcServer[] = [];
  const nodes: EvalNode[] = [];
  const config = testConfig({ grpcPort: 0 });
  return {
    db, project,
    async server(protocolVersion: number): Promise<GrpcServer> {
      const s = await startGrpcServer({ sql: db.sql, config, log: silent, protocolVersion });
      servers.push(s);
      return s;
    },
    async node(server: GrpcServer, protocolVersion: number, opts: { dataDir?: string; log?: ReturnType<typeof createLogger> } = {}): Promise<EvalNode> {
      const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-proto-'));
      if (!dirs.includes(dataDir)) dirs.push(dataDir);
      const cfg: Config = { ...config, dataDir, controlPlane: `127.0.0.1:${server.port}` };
      const n = await startEvalNode(cfg, opts.log ?? silent, { nodeId: `proto-${protocolVersion}`, sync: { backoff: TEST_BACKOFF, protocolVersion } });
      nodes.push(n);
      return n;
    },
    async close() {
      for (const n of nodes) await n.close().catch(() => {});
      for (const s of servers) await s.close().catch(() => {});
      await db.drop();
      for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    },
  };
}

for (const [nodeVersion, serverVersion] of [[V, V + 1], [V + 1, V]] as const) {
  test(`a node at version ${nodeVersion} syncs from a control plane at ${serverVersion}`, async () => {
    const w = await world();
    try {
      const server = await w.server(serverVersion);
      const node = await w.node(server, nodeVersion);
      const head = await currentRevision(w.db.sql);
      await waitFor('snapshot applied', () => node.store.hasCompleteSnapshot() && node.store.revision() >= head, { timeoutMs: 20_000 });
      await seedFlag(w.db.sql, w.project.id, 'second');
      const next = await currentRevision(w.db.sql);
      await waitFor('tail applied', () => node.store.revision() >= next, { timeoutMs: 20_000 });
      assert.equal(node.sync.state().protocolRefused, null);
    } finally {
      await w.close();
    }
  });
}

test('a node refuses a control plane two versions ahead: one clear error line, nothing applied, its store still serves', async () => {
  const w = await world();
  try {
    // The node first syncs from a compatible control plane, then restarts against a newer one.
    const old = await w.server(V);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-proto-'));
    const first = await w.node(old, V, { dataDir });
    const head = await currentRevision(w.db.sql);
    await waitFor('snapshot applied', () => first.store.hasCompleteSnapshot() && first.store.revision() >= head, { timeoutMs: 20_000 });
    await first.close();

    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({ write(chunk, _enc, cb) { for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l)); cb(); } });
    const log = pino({ level: 'info' }, sink);
    const newer = await w.server(V + 2);
    const node = await w.node(newer, V, { dataDir, log });
    await seedFlag(w.db.sql, w.project.id, 'unseen');
    const refused = await waitFor('refusal', () => node.sync.state().protocolRefused, { timeoutMs: 20_000 });
    assert.deepEqual(refused, { controlPlane: `127.0.0.1:${newer.port}`, protocol: V + 2 });
    assert.equal(node.sync.state().lastError?.code, grpc.status.FAILED_PRECONDITION);
    const errors = lines.filter((l) => l.level === 50 && /incompatible protocol version/.test(String(l.msg)));
    assert.ok(errors.length >= 1, JSON.stringify(lines));
    assert.equal(errors[0]!.control_plane_protocol, V + 2);
    // Nothing from it is applied; what the store held still serves.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(node.store.revision(), head);
    assert.ok(node.store.hasCompleteSnapshot());
    assert.equal(node.store.projectByToken(w.project.token)?.id, w.project.id);
  } finally {
    await w.close();
  }
});

test('a control plane refuses a node two versions ahead on every call, naming both versions', async () => {
  const w = await world();
  const Service = switchyardService();
  try {
    const server = await w.server(V);
    const client = new Service(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & Record<string, (...a: unknown[]) => any>;
    try {
      const md = clusterTokenMetadata('test-cluster-token', V + 2);
      const watchErr = await new Promise<grpc.ServiceError>((resolve) => {
        const call = client.Watch!({ from_revision: '0', node_id: 'future' }, md);
        call.on('data', () => assert.fail('a refused node got an event'));
        call.on('error', resolve);
      });
      assert.equal(watchErr.code, grpc.status.FAILED_PRECONDITION);
      assert.match(watchErr.details, new RegExp(`protocol version ${V + 2} not supported: this control plane speaks ${V}`));
      assert.equal(protocolOf(watchErr.metadata), V);
      const usageErr = await new Promise<grpc.ServiceError | null>((resolve) => {
        client.ReportUsage!({ node_id: 'future', counts: {}, period: '2026-01' }, md, (err: grpc.ServiceError | null) => resolve(err));
      });
      assert.equal(usageErr?.code, grpc.status.FAILED_PRECONDITION);
      // The same call at this version is served, with the server's version in the headers.
      const headers = await new Promise<grpc.Metadata>((resolve, reject) => {
        const call = client.Watch!({ from_revision: '0', node_id: 'current' }, clusterTokenMetadata('test-cluster-token'));
        call.on('metadata', (m: grpc.Metadata) => { resolve(m); call.cancel(); });
        call.on('error', (e: grpc.ServiceError) => { if (e.code !== grpc.status.CANCELLED) reject(e); });
      });
      assert.equal(protocolOf(headers), V);
    } finally {
      client.close();
    }
    // A whole node at that version reports the refusal and applies nothing.
    const node = await w.node(server, V + 2);
    const refused = await waitFor('refusal', () => node.sync.state().protocolRefused, { timeoutMs: 20_000 });
    assert.equal(refused.protocol, V);
    assert.equal(node.store.hasCompleteSnapshot(), false);
  } finally {
    await w.close();
  }
});
