/**
 * The whole path with the real clients at both ends: flags created through the management API
 * (control plane, Postgres) → change log → gRPC Watch → node LMDB store → node HTTP, read by
 * posthog-node both remotely (/flags) and through local evaluation of /flags/definitions; the two
 * agree for every user and flag posthog-node evaluates conclusively.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PostHog } from 'posthog-node';
import { createLogger } from '../../../src/log.js';
import { startGrpcServer } from '../../../src/control-plane/grpc/server.js';
import { startEvalNode } from '../../../src/eval-node/node.js';
import { startNodeHttp } from '../../../src/eval-node/http/server.js';
import { startTestControlPlane } from '../../support/control-plane.js';
import { TEST_BACKOFF, waitForHead } from '../../support/sync.js';

test('management API → Watch → node: posthog-node remote and local evaluation agree', async () => {
  const tcp = await startTestControlPlane();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-e2e-posthog-'));
  const log = createLogger('silent');
  const server = await startGrpcServer({ sql: tcp.db.sql, config: { ...tcp.config, grpcPort: 0, dataDir }, log });
  const config = { ...tcp.config, grpcPort: server.port, dataDir, controlPlane: `127.0.0.1:${server.port}`, flagsPort: 0 };
  const node = await startEvalNode(config, log, { nodeId: 'e2e-posthog', sync: { backoff: TEST_BACKOFF } });
  const http = await startNodeHttp({ config, log, store: node.store, sync: node.sync });
  let client: PostHog | null = null;
  try {
    const create = async (body: Record<string, unknown>) => {
      const r = await tcp.request('POST', `/api/projects/${tcp.projectId}/feature_flags/`, { body });
      assert.equal(r.status, 201, r.text);
      return r.body as { id: number; key: string };
    };
    const base = await create({ key: 'e2e-rollout', filters: { groups: [{ properties: [], rollout_percentage: 40 }] } });
    await create({ key: 'e2e-mv', filters: {
      groups: [{ properties: [], rollout_percentage: 100 }],
      multivariate: { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] },
      payloads: { control: '{"c":1}', test: '{"t":2}' },
    } });
    await create({ key: 'e2e-email', filters: { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }], rollout_percentage: 100 }] } });
    await create({ key: 'e2e-org', filters: { aggregation_group_type_index: 0, groups: [{ properties: [], rollout_percentage: 50 }] } });
    await create({ key: 'e2e-dep', filters: { groups: [{ properties: [{ key: String(base.id), type: 'flag', operator: 'flag_evaluates_to', value: true }], rollout_percentage: 100 }] } });
    await waitForHead(tcp.db, node.store);
    // Created after the flags reached the node: posthog-node loads definitions once, then polls.
    const ph = new PostHog(tcp.projectKey, {
      host: http.url, personalApiKey: tcp.personalKey, featureFlagsPollingInterval: 60_000, flushAt: 1000, flushInterval: 0, disableGeoip: true,
    });
    client = ph;
    assert.equal(await ph.waitForLocalEvaluationReady(10_000), true);

    const keys = ['e2e-rollout', 'e2e-mv', 'e2e-email', 'e2e-org', 'e2e-dep'];
    const agreed = new Map<string, number>();
    for (let n = 0; n < 300; n++) {
      const distinctId = `user-${n}`;
      const opts = {
        personProperties: { email: n % 2 ? `u${n}@example.com` : `u${n}@mail.test` },
        groups: { organization: `org-${n % 17}` },
        sendFeatureFlagEvents: false,
      };
      const remote = await ph.getAllFlags(distinctId, opts);
      for (const key of keys) {
        const local = await ph.getFeatureFlag(key, distinctId, { ...opts, onlyEvaluateLocally: true });
        if (local === undefined) continue;
        assert.equal(local, remote[key], `${key} for ${distinctId}`);
        agreed.set(key, (agreed.get(key) ?? 0) + 1);
      }
    }
    for (const key of keys) assert.equal(agreed.get(key), 300, `${key} evaluated locally for every user`);
    const payload = await ph.getFeatureFlagPayload('e2e-mv', 'user-1', undefined, { sendFeatureFlagEvents: false });
    assert.ok(JSON.stringify(payload) === '{"c":1}' || JSON.stringify(payload) === '{"t":2}');
  } finally {
    await client?.shutdown();
    await http.close();
    await node.close();
    await server.close();
    await tcp.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
