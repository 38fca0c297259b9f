/**
 * Capture end to end through real processes' parts: a node's capture (outbox + shipper) →
 * control-plane gRPC Ingest → Postgres → change log → Watch → the node's LMDB store, and a
 * fresh node's snapshot. (Node HTTP wiring of `startCapture` is the node service's job.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { syncFixture, waitForHead } from '../../support/sync.js';
import { waitFor } from '../../support/wait.js';
import { createLogger } from '../../../src/log.js';
import { switchyardService } from '../../../src/contract/loader.js';
import { clusterTokenMetadata } from '../../../src/control-plane/grpc/auth.js';
import { startCapture } from '../../../src/eval-node/capture/index.js';
import { bootstrap } from '../../../src/control-plane/bootstrap.js';

test('capture on a node comes back to every node as persons and groups', async () => {
  const fx = await syncFixture();
  const client = new (switchyardService())(fx.config.controlPlane, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
  try {
    const boot = await bootstrap(fx.db.sql, fx.config);
    await fx.startServer();
    const node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    const capture = startCapture({
      config: fx.config, log: createLogger('silent'), outboxPath: path.join(fx.dataDir, 'outbox'),
      projectIdForToken: (t) => node.store.projectByToken(t)?.id ?? null,
      openStream: () => client.Ingest(clusterTokenMetadata(fx.config.clusterToken!)),
    });
    try {
      const r = await capture.handler('/batch/', '', { 'content-type': 'application/json' }, Buffer.from(JSON.stringify({
        api_key: boot.projectApiKey, batch: [
          { event: '$pageview', distinct_id: 'anon-1', properties: { $set: { plan: 'free' } } },
          { event: '$identify', distinct_id: 'user-1', properties: { $anon_distinct_id: 'anon-1', $set: { email: 'a@b.c' } } },
          { event: '$groupidentify', distinct_id: 'user-1', properties: { $group_type: 'organization', $group_key: 'acme', $group_set: { size: 5 } } },
        ],
      })));
      assert.equal(r.status, 200);
      await waitFor('outbox drained', () => capture.outbox.entries === 0);
      await waitForHead(fx.db, node.store);
      const p = node.store.personByDistinctId(boot.projectId, 'anon-1');
      assert.deepEqual(p?.distinct_ids, ['anon-1', 'user-1']);
      assert.deepEqual(p?.properties, { plan: 'free', email: 'a@b.c' });
      assert.equal(node.store.personByDistinctId(boot.projectId, 'user-1')?.id, p!.id);
      assert.deepEqual(node.store.group(boot.projectId, 0, 'acme')?.properties, { size: 5 });
      const fresh = await fx.startNode({ dataDir: path.join(fx.dataDir, 'second') });
      await waitForHead(fx.db, fresh.store);
      assert.deepEqual(fresh.store.personByDistinctId(boot.projectId, 'user-1'), p, 'same state from a snapshot');
      assert.deepEqual(fresh.store.group(boot.projectId, 0, 'acme'), node.store.group(boot.projectId, 0, 'acme'));
    } finally {
      await capture.close();
    }
  } finally {
    client.close();
    await fx.close();
  }
});
