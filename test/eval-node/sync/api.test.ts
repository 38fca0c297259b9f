/**
 * Sync fed by the real writers: the control plane's bootstrap, management API (feature flags)
 * and quota service append the change log; a node watching over gRPC ends up holding exactly
 * what the tables hold.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../../src/log.js';
import { startGrpcServer } from '../../../src/control-plane/grpc/server.js';
import { startEvalNode } from '../../../src/eval-node/node.js';
import { hashPersonalApiKey } from '../../../src/control-plane/keys/tokens.js';
import { setMonthlyFlagRequestLimit } from '../../../src/control-plane/quota/service.js';
import { startTestControlPlane } from '../../support/control-plane.js';
import { assertStoreMatchesTables, TEST_BACKOFF, waitForHead } from '../../support/sync.js';
import { waitFor } from '../../support/wait.js';

test('bootstrap, flag API writes and quota changes reach a node intact', async () => {
  const tcp = await startTestControlPlane();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-api-sync-'));
  const log = createLogger('silent');
  const server = await startGrpcServer({ sql: tcp.db.sql, config: { ...tcp.config, grpcPort: 0, dataDir }, log });
  const config = { ...tcp.config, grpcPort: server.port, dataDir, controlPlane: `127.0.0.1:${server.port}` };
  const node = await startEvalNode(config, log, { nodeId: 'api-test', sync: { backoff: TEST_BACKOFF } });
  try {
    await waitForHead(tcp.db, node.store);
    assert.equal(node.store.projectByToken(tcp.projectKey)?.id, tcp.projectId, 'bootstrap project');
    assert.deepEqual(node.store.personalApiKeyByHash(hashPersonalApiKey(tcp.personalKey))?.scopes, ['*'], 'bootstrap key');
    assert.deepEqual(node.store.definitions(tcp.projectId).groupTypeMapping, { 0: 'organization' });

    const created = await tcp.request('POST', `/api/projects/${tcp.projectId}/feature_flags/`, {
      body: { key: 'checkout', name: 'Checkout', filters: { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }], rollout_percentage: 50 }] } },
    });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as number;
    await waitFor('flag on node', () => node.store.definitions(tcp.projectId).flags.some((f) => f.id === id));

    const patched = await tcp.request('PATCH', `/api/projects/${tcp.projectId}/feature_flags/${id}/`, { body: { active: false } });
    assert.equal(patched.status, 200, patched.text);
    await waitFor('flag inactive on node', () => node.store.definitions(tcp.projectId).flags.find((f) => f.id === id)?.active === false);

    assert.equal((await tcp.request('PATCH', `/api/projects/${tcp.projectId}/feature_flags/${id}/`, { body: { deleted: true } })).status, 200);
    await waitFor('flag gone from node', () => !node.store.definitions(tcp.projectId).flags.some((f) => f.id === id));

    await setMonthlyFlagRequestLimit(tcp.db.sql, tcp.organizationId, 0);
    await waitFor('quota on node', () => node.store.organization(tcp.organizationId)?.quota_limited === true);

    await waitForHead(tcp.db, node.store);
    await assertStoreMatchesTables(tcp.db, node.store);
    const version = node.store.definitions(tcp.projectId);
    assert.equal(version.flags.length, 0);
  } finally {
    await node.close();
    await server.close();
    await tcp.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
