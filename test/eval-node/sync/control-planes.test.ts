/**
 * Several control planes (sync/control-planes.ts; config.ts SWITCHYARD_CONTROL_PLANE): the
 * accepted address forms, the shared rotation, and a node following the next control plane when
 * the one it watches stops (real gRPC servers bound on port 0, one database, a real node).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig, testConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/log.js';
import { startGrpcServer, type GrpcServer } from '../../../src/control-plane/grpc/server.js';
import { currentRevision } from '../../../src/control-plane/change-log/store.js';
import { startEvalNode, type EvalNode } from '../../../src/eval-node/node.js';
import { ControlPlanes } from '../../../src/eval-node/sync/control-planes.js';
import { createTestDatabase } from '../../support/db.js';
import { seedFlag, seedOrganization, seedProject } from '../../support/seed.js';
import { waitFor } from '../../support/wait.js';

test('SWITCHYARD_CONTROL_PLANE: one address, a list, IPv6, dns: targets; bad entries (and bad drain settings) name the variable', () => {
  const ok: [string, string][] = [
    ['one', 'cp:50051'],
    ['list', 'cp1:50051,cp2:50051'],
    ['list with blanks', ' 10.0.0.1:50051 , 10.0.0.2:50051 '],
    ['ipv6', '[::1]:50051'],
    ['dns scheme', 'dns:cp.example:50051'],
    ['dns authority', 'dns:///cp.example:50051'],
  ];
  for (const [name, value] of ok) assert.equal(loadConfig({ SWITCHYARD_CONTROL_PLANE: value }).controlPlane, value.trim(), name);
  const bad: [string, string][] = [
    ['no port', 'cp'],
    ['one entry without port', 'cp1:50051,cp2'],
    ['space inside', 'c p:50051'],
    ['only commas', ',,'],
  ];
  for (const [name, value] of bad) {
    assert.throws(() => loadConfig({ SWITCHYARD_CONTROL_PLANE: value }), (e: unknown) => e instanceof ConfigError && e.variable === 'SWITCHYARD_CONTROL_PLANE', name);
  }
  assert.throws(() => loadConfig({ SWITCHYARD_DRAIN_SECONDS: 'soon' }), (e: unknown) => e instanceof ConfigError && e.variable === 'SWITCHYARD_DRAIN_SECONDS');
  assert.throws(() => loadConfig({ SWITCHYARD_SHUTDOWN_TIMEOUT_SECONDS: '0' }), (e: unknown) => e instanceof ConfigError && e.variable === 'SWITCHYARD_SHUTDOWN_TIMEOUT_SECONDS');
});

test('the rotation moves every user once per failure of the current address', () => {
  const planes = new ControlPlanes('a:1, b:2,c:3');
  assert.deepEqual(planes.addresses, ['a:1', 'b:2', 'c:3']);
  assert.equal(planes.current(), 'a:1');
  assert.equal(planes.failed('a:1'), 'b:2');
  // A second user reporting the same failure does not skip b.
  assert.equal(planes.failed('a:1'), 'b:2');
  assert.equal(planes.failed('b:2'), 'c:3');
  assert.equal(planes.failed('c:3'), 'a:1');
  assert.equal(planes.switches, 3);
  const single = new ControlPlanes('only:1');
  assert.equal(single.failed('only:1'), 'only:1');
  assert.equal(single.switches, 0);
  assert.throws(() => new ControlPlanes(' , '));
});

test('a node given two control planes follows the second when the first stops, without waiting for its backoff', async () => {
  const db = await createTestDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-cps-'));
  const log = createLogger('silent');
  const config = testConfig({ grpcPort: 0, dataDir });
  const servers: GrpcServer[] = [];
  let node: EvalNode | null = null;
  try {
    const org = await seedOrganization(db.sql);
    const project = await seedProject(db.sql, org);
    await seedFlag(db.sql, project.id, 'before');
    const a = await startGrpcServer({ sql: db.sql, config, log });
    const b = await startGrpcServer({ sql: db.sql, config, log });
    servers.push(a, b);
    const addrA = `127.0.0.1:${a.port}`;
    const addrB = `127.0.0.1:${b.port}`;
    // A long backoff: only the immediate failover can move the node quickly.
    node = await startEvalNode({ ...config, controlPlane: `${addrA},${addrB}` }, log,
      { nodeId: 'two-planes', sync: { backoff: { baseMs: 10_000, capMs: 10_000 } } });
    const n = node;
    const head = await currentRevision(db.sql);
    await waitFor('snapshot from A', () => n.store.hasCompleteSnapshot() && n.store.revision() >= head, { timeoutMs: 20_000 });
    assert.equal(n.sync.state().controlPlane, addrA);
    await new Promise((r) => setTimeout(r, 1_200)); // past FAILOVER_MIN_STREAM_MS

    await a.close();
    await seedFlag(db.sql, project.id, 'after');
    const next = await currentRevision(db.sql);
    await waitFor('change through B', () => n.store.revision() >= next, { timeoutMs: 5_000, intervalMs: 20 });
    const st = n.sync.state();
    assert.equal(st.controlPlane, addrB);
    assert.ok(st.failovers >= 1);
    // Every gRPC user of the node now goes to B.
    assert.equal(n.planes.current(), addrB);
  } finally {
    await node?.close();
    for (const s of servers) await s.close().catch(() => {});
    await db.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

