/**
 * Fixture for sync integration tests: a fresh database, a real gRPC server on a fixed port
 * (test/support/ports.ts `stablePort`: chosen before the server starts, so that nodes and
 * clients have its address before it runs and while it is stopped and started again), and evaluation nodes with real LMDB stores in
 * a temporary data dir, plus a comparison of a node's store with the Postgres tables.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { testConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startGrpcServer, type GrpcServer } from '../../src/control-plane/grpc/server.js';
import type { WatchOptions } from '../../src/control-plane/grpc/watch.js';
import { startEvalNode, type EvalNode } from '../../src/eval-node/node.js';
import type { NodeStore } from '../../src/eval-node/store/lmdb.js';
import { currentRevision } from '../../src/control-plane/change-log/store.js';
import {
  cohortEntity, featureFlagEntity, projectEntity, type FeatureFlagRow,
} from '../../src/contract/entities.js';
import { organizationEntity } from '../../src/control-plane/quota/service.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { stablePort } from './ports.js';
import { waitFor } from './wait.js';

/** Short reconnect policy so tests recover quickly from a stopped server. */
export const TEST_BACKOFF = { baseMs: 20, capMs: 250 };

/** One test's world. */
export interface SyncFixture {
  db: TestDatabase;
  config: Config;
  dataDir: string;
  server: GrpcServer | null;
  /** Starts the gRPC server; `overrides` change its config (e.g. `snapshotImage: true`). */
  startServer(watch?: Partial<WatchOptions>, overrides?: Partial<Config>): Promise<GrpcServer>;
  stopServer(): Promise<void>;
  startNode(overrides?: Partial<Config>, sync?: { idleTimeoutMs?: number }): Promise<EvalNode>;
  close(): Promise<void>;
}

/** Creates the fixture (no server or node started yet). */
export async function syncFixture(): Promise<SyncFixture> {
  const db = await createTestDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-node-'));
  const grpcPort = await stablePort();
  const config = testConfig({ dataDir, grpcPort, controlPlane: `127.0.0.1:${grpcPort}` });
  const log = createLogger('silent');
  const nodes = new Set<EvalNode>();
  const fx: SyncFixture = {
    db, config, dataDir, server: null,
    async startServer(watch, overrides = {}) {
      fx.server = await startGrpcServer({ sql: db.sql, config: { ...config, ...overrides }, log, watch });
      return fx.server;
    },
    async stopServer() {
      await fx.server?.close();
      fx.server = null;
    },
    async startNode(overrides = {}, sync = {}) {
      const node = await startEvalNode({ ...config, ...overrides }, log, { nodeId: 'test-node', sync: { backoff: TEST_BACKOFF, ...sync } });
      nodes.add(node);
      const close = node.close.bind(node);
      node.close = async () => { nodes.delete(node); await close(); };
      return node;
    },
    async close() {
      for (const n of [...nodes]) await n.close();
      await fx.stopServer();
      await db.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return fx;
}

/** Waits until `store` has applied the database's head revision. */
export async function waitForHead(db: TestDatabase, store: NodeStore): Promise<number> {
  const head = await currentRevision(db.sql);
  await waitFor(`node revision ${head}`, () => store.hasCompleteSnapshot() && store.revision() >= head);
  return head;
}

/** Asserts that `store` holds exactly what the tables hold (live flags and cohorts only; persons, groups, overrides). */
export async function assertStoreMatchesTables(db: TestDatabase, store: NodeStore): Promise<void> {
  const { sql } = db;
  assert.equal(store.revision(), await currentRevision(sql), 'revision = change-log head');
  assert.equal(store.hasCompleteSnapshot(), true);
  for (const o of await sql<{ id: number; name: string; monthly_flag_requests_limit: number | null; quota_limited: boolean }[]>`
    SELECT id, name, monthly_flag_requests_limit, quota_limited FROM organizations`) {
    assert.deepEqual(store.organization(o.id), organizationEntity(o), `organization ${o.id}`);
  }
  for (const p of await sql<{ id: number; organization_id: number; name: string; api_token: string; timezone: string }[]>`SELECT * FROM projects`) {
    assert.deepEqual(store.project(p.id), projectEntity(p), `project ${p.id}`);
    assert.deepEqual(store.projectByToken(p.api_token), projectEntity(p), `project by token ${p.id}`);
    const defs = store.definitions(p.id);
    const flags = await sql<FeatureFlagRow[]>`SELECT * FROM feature_flags WHERE project_id = ${p.id} AND NOT deleted ORDER BY id`;
    assert.deepEqual(defs.flags, flags.map(featureFlagEntity), `flags of project ${p.id}`);
    const cohorts = await sql<{ id: number; project_id: number; name: string; filters: Record<string, unknown>; is_static: boolean; deleted: boolean }[]>`
      SELECT id, project_id, name, filters, is_static, deleted FROM cohorts WHERE project_id = ${p.id} AND NOT deleted ORDER BY id`;
    assert.deepEqual(defs.cohorts, cohorts.map(cohortEntity), `cohorts of project ${p.id}`);
    const types = await sql<{ group_type: string; group_type_index: number }[]>`SELECT group_type, group_type_index FROM group_type_mappings WHERE project_id = ${p.id}`;
    assert.deepEqual(defs.groupTypeMapping, Object.fromEntries(types.map((t) => [String(t.group_type_index), t.group_type])), `group types of project ${p.id}`);
  }
  for (const p of await sql<{ uuid: string; project_id: number; properties: Record<string, unknown>; distinct_id: string | null }[]>`
    SELECT p.uuid, p.project_id, p.properties, d.distinct_id FROM persons p LEFT JOIN person_distinct_ids d ON d.person_id = p.id`) {
    if (p.distinct_id === null) continue;
    const stored = store.personByDistinctId(p.project_id, p.distinct_id);
    assert.equal(stored?.id, p.uuid, `person of ${p.distinct_id}`);
    assert.deepEqual(stored?.properties, p.properties, `properties of ${p.distinct_id}`);
  }
  for (const g of await sql<{ project_id: number; group_type_index: number; group_key: string; properties: Record<string, unknown> }[]>`
    SELECT project_id, group_type_index, group_key, properties FROM groups`) {
    assert.deepEqual(store.group(g.project_id, g.group_type_index, g.group_key)?.properties, g.properties, `group ${g.group_key}`);
  }
  const overrides = new Map<string, Record<string, string>>();
  for (const o of await sql<{ project_id: number; uuid: string; feature_flag_key: string; hash_key: string }[]>`
    SELECT o.project_id, p.uuid, o.feature_flag_key, o.hash_key FROM feature_flag_hash_key_overrides o JOIN persons p ON p.id = o.person_id`) {
    const k = `${o.project_id}:${o.uuid}`;
    overrides.set(k, { ...overrides.get(k), [o.feature_flag_key]: o.hash_key });
  }
  for (const [k, expected] of overrides) {
    const [pid, uuid] = [Number(k.split(':')[0]), k.slice(k.indexOf(':') + 1)];
    assert.deepEqual(store.hashKeyOverrides(pid, uuid), expected, `overrides of ${uuid}`);
  }
  for (const k of await sql<{ id: string; secure_value: string; scopes: string[]; scoped_teams: number[]; organization_id: number }[]>`
    SELECT k.id, k.secure_value, k.scopes, k.scoped_teams, u.organization_id FROM personal_api_keys k JOIN users u ON u.id = k.user_id`) {
    assert.deepEqual(store.personalApiKeyByHash(k.secure_value), { id: k.id, organization_id: k.organization_id, secure_value: k.secure_value, scopes: k.scopes, scoped_teams: k.scoped_teams });
  }
}
