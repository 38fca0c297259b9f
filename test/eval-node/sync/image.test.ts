/**
 * Snapshot images end
 * to end: real Postgres, the real gRPC server keeping its image through a real Watch stream, real
 * nodes with LMDB stores. A node with no store installs a copy of the image and watches from its
 * revision; without an image it takes the Watch snapshot; a node with a store never asks.
 *
 * One database and world for the file (3,000 persons ingested as capture would: an image of more
 * than one {@link IMAGE_CHUNK_BYTES} message), and one gRPC server at a time: the tests that need
 * an image run first on one server that keeps it (its image is a node of its own, in a thread
 * that loads the node's modules), then the refusals test switches to a server without one, which
 * the Watch-snapshot test uses. Each test's nodes have their own data directories.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { switchyardService } from '../../../src/contract/loader.js';
import { clusterTokenMetadata } from '../../../src/contract/metadata.js';
import { STORE_FORMAT } from '../../../src/contract/store-format.js';
import { imageConfig } from '../../../src/control-plane/snapshot-image/replica.js';
import { IMAGE_CHUNK_BYTES } from '../../../src/control-plane/snapshot-image/serve.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { currentRevision } from '../../../src/control-plane/change-log/store.js';
import { nodeStorePath } from '../../../src/eval-node/node.js';
import { installSnapshotImage } from '../../../src/eval-node/sync/image.js';
import { createLogger } from '../../../src/log.js';
import { seedFlag, seedOrganization, seedProject, updateFlag } from '../../support/seed.js';
import { assertStoreMatchesTables, syncFixture, waitForHead, type SyncFixture } from '../../support/sync.js';
import type { GrpcServer } from '../../../src/control-plane/grpc/server.js';
import { waitFor } from '../../support/wait.js';

/** The image's LMDB data file on the fixture's control plane. */
const imageFile = (fx: SyncFixture): string => path.join(nodeStorePath(imageConfig(fx.config, fx.config.controlPlane)), 'data.mdb');

/** The final status code of a SnapshotImage call and the bytes it streamed. */
function imageCall(client: InstanceType<ReturnType<typeof switchyardService>>, format: number, token: string): Promise<{ code: number; bytes: number }> {
  return new Promise((resolve) => {
    let bytes = 0;
    const c = client.SnapshotImage({ format, node_id: 'probe' }, clusterTokenMetadata(token)) as grpc.ClientReadableStream<{ data: Buffer }>;
    c.on('data', (m: { data: Buffer }) => { bytes += m.data.length; });
    c.on('error', (e: grpc.ServiceError) => resolve({ code: e.code, bytes }));
    c.on('end', () => resolve({ code: grpc.status.OK, bytes }));
  });
}

/** A project with flags and `persons` identified persons (ingested as capture would). */
async function seedWorld(fx: SyncFixture, persons: number): Promise<{ projectId: number; flagId: number }> {
  const { sql } = fx.db;
  const org = await seedOrganization(sql);
  const project = await seedProject(sql, org, 'images');
  const flagId = await seedFlag(sql, project.id, 'pro-only', { groups: [{ properties: [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }], rollout_percentage: 100 }] });
  await seedFlag(sql, project.id, 'everyone');
  const events = Array.from({ length: persons }, (_, i) => ({
    uuid: crypto.randomUUID(), project_id: project.id, event: '$identify', distinct_id: `user-${i}`,
    properties: { $set: { plan: i % 2 === 0 ? 'pro' : 'free', n: i } }, timestamp: new Date(Date.now() - 60_000 + i).toISOString(),
  }));
  for (let i = 0; i < events.length; i += 500) await ingestEvents(sql, events.slice(i, i + 500));
  return { projectId: project.id, flagId };
}

let fx: SyncFixture;
let w: { projectId: number; flagId: number };
/** Whether the running server keeps an image. */
let serverKeepsImage = false;

/** The running gRPC server, started again when it does not keep an image as `image` says. */
async function server(image: boolean): Promise<GrpcServer> {
  if (fx.server !== null && serverKeepsImage === image) return fx.server;
  await fx.stopServer();
  serverKeepsImage = image;
  return fx.startServer(undefined, image ? { snapshotImage: true } : {});
}

before(async () => {
  fx = await syncFixture();
  w = await seedWorld(fx, 3_000);
});
after(async () => { await fx?.close(); });

test('a node with no store installs the control plane\'s image, then follows the log from its revision', async () => {
  await server(true);
  // The image is a watching node of its own: it completes its snapshot in the background.
  await waitFor('the image store', () => fs.existsSync(imageFile(fx)) || null);
  const head = await currentRevision(fx.db.sql);
  let node = await waitFor('a node started from the image', async () => {
    const n = await fx.startNode({ dataDir: path.join(fx.dataDir, 'node-a'), snapshotImage: true });
    if (n.image !== null) return n;
    // The image was not complete yet: this node took the Watch snapshot; try a fresh one.
    await n.close();
    fs.rmSync(path.join(fx.dataDir, 'node-a'), { recursive: true, force: true });
    return null;
  }, { timeoutMs: 20_000, intervalMs: 100 });
  try {
    assert.ok(node.image!.revision >= 1 && node.image!.revision <= head, `image revision ${node.image!.revision}, head ${head}`);
    assert.ok(node.image!.bytes > 0);
    // Ready from the copy at once: no snapshot streamed to this node.
    assert.equal(node.store.hasCompleteSnapshot(), true);
    assert.ok(node.store.revision() >= node.image!.revision);
    assert.equal(node.store.personByDistinctId(w.projectId, 'user-7')?.properties.plan, 'free');
    await waitForHead(fx.db, node.store);
    await assertStoreMatchesTables(fx.db, node.store);
    assert.equal(node.sync.state().snapshotsApplied, 0, 'the node only tailed');

    // Changes after the install reach the node through the tail.
    await updateFlag(fx.db.sql, w.flagId, { active: false, name: 'after the image' });
    await ingestEvents(fx.db.sql, [{ uuid: crypto.randomUUID(), project_id: w.projectId, event: '$identify', distinct_id: 'late-user', properties: { $set: { plan: 'pro' } }, timestamp: new Date().toISOString() }]);
    await waitForHead(fx.db, node.store);
    await assertStoreMatchesTables(fx.db, node.store);
    assert.equal(node.sync.state().snapshotsApplied, 0);

    // A node that has a store never asks for an image: restarted, it resumes from its own.
    const revision = node.store.revision();
    await node.close();
    node = await fx.startNode({ dataDir: path.join(fx.dataDir, 'node-a'), snapshotImage: true });
    assert.equal(node.image, null);
    assert.equal(node.store.revision(), revision);
    // No temporary image directory is left beside the store, and no image copy on the control plane.
    assert.deepEqual(fs.readdirSync(fx.dataDir).filter((f) => f.includes('.image-')), []);
    assert.deepEqual(fs.readdirSync(fx.config.dataDir).filter((f) => f.startsWith('switchyard-image-')), []);
  } finally {
    await node.close();
  }
});

test('an image transfer that fails leaves nothing behind; the next try installs it', async () => {
  const grpcServer = await server(true);
  const dir = path.join(fx.dataDir, 'node-c', 'lmdb');
  const opts = { controlPlane: `127.0.0.1:${grpcServer.port}`, clusterToken: fx.config.clusterToken!, nodeId: 'probe', dir, log: createLogger('silent') };
  await waitFor('a complete image', async () => (await installSnapshotImage({ ...opts, dir: path.join(fx.dataDir, 'warm', 'lmdb') })) ?? null, { timeoutMs: 20_000, intervalMs: 100 });
  // A deadline that ends the call before the file is complete.
  assert.equal(await installSnapshotImage({ ...opts, timeoutMs: 1 }), null);
  assert.equal(fs.existsSync(path.join(dir, 'data.mdb')), false, 'no store file');
  assert.deepEqual(fs.readdirSync(path.join(fx.dataDir, 'node-c')).filter((f) => f.includes('.image-')), [], 'no temporary directory');
  const r = await installSnapshotImage(opts);
  assert.ok(r !== null && r.bytes === fs.statSync(path.join(dir, 'data.mdb')).size);
  assert.ok(r.bytes > IMAGE_CHUNK_BYTES, `the image (${r.bytes} bytes) came in more than one message`);
  // A store already there is never overwritten.
  assert.equal(await installSnapshotImage(opts), null);
});

test('SnapshotImage refuses a wrong cluster token, another store format, and a control plane without an image', async () => {
  const grpcServer = await server(true);
  await waitFor('the image store', () => fs.existsSync(imageFile(fx)) || null);
  const Service = switchyardService();
  const client = new Service(`127.0.0.1:${grpcServer.port}`, grpc.credentials.createInsecure());
  const call = (format: number, token: string) => imageCall(client, format, token);
  try {
    assert.equal((await call(STORE_FORMAT, 'wrong-token')).code, grpc.status.UNAUTHENTICATED);
    assert.equal((await call(STORE_FORMAT + 1, fx.config.clusterToken!)).code, grpc.status.FAILED_PRECONDITION);
    const ok = await waitFor('a complete image', async () => { const r = await call(STORE_FORMAT, fx.config.clusterToken!); return r.code === grpc.status.OK ? r : null; });
    assert.ok(ok.bytes > 0);
    const plain = await server(false);
    const none = new Service(`127.0.0.1:${plain.port}`, grpc.credentials.createInsecure());
    const status = (await imageCall(none, STORE_FORMAT, fx.config.clusterToken!)).code;
    none.close();
    assert.equal(status, grpc.status.FAILED_PRECONDITION);
  } finally {
    client.close();
  }
});

test('without an image (the control plane keeps none) a fresh node takes the Watch snapshot', async () => {
  await server(false);
  const node = await fx.startNode({ dataDir: path.join(fx.dataDir, 'node-b'), snapshotImage: true });
  try {
    assert.equal(node.image, null);
    await waitForHead(fx.db, node.store);
    await assertStoreMatchesTables(fx.db, node.store);
    assert.equal(node.sync.state().snapshotsApplied, 1);
    assert.equal(fs.existsSync(nodeStorePath({ ...fx.config, dataDir: path.join(fx.dataDir, 'node-b') })), true);
  } finally {
    await node.close();
  }
});
